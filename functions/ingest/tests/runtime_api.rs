//! The `ingest` binary under a Lambda Runtime API emulator writes the sample
//! posts to a dynalite table and enforces its token.

use integration_tests::runtime_api::Runtime;
use integration_tests::{dynalite, fresh_store};
use serde_json::{json, Value};
use shared::model::{TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::{Order, RangeRequest};

fn event(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn the_ingest_binary_writes_the_sample_posts() {
    // Read as the functions read: the sample batch's closed hour went in
    // as its block (BatchBlocks' default, docs/batches.md).
    let store = fresh_store(&dynalite(), "bin-ingest")
        .await
        .with_hour_blocks(true);
    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_ingest"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
            ("INGEST_TOKEN", "tok"),
        ],
    );
    let denied = rt
        .invoke(event("01-post-reading-power.json"))
        .await
        .unwrap();
    assert_eq!(denied["statusCode"], 401);
    let mut with_token = event("02-post-readings-batch.json");
    with_token["headers"]["authorization"] = json!("Bearer tok");
    let ok = rt.invoke(with_token).await.unwrap();
    assert_eq!(ok["statusCode"], 200);
    assert_eq!(
        serde_json::from_str::<Value>(ok["body"].as_str().unwrap()).unwrap(),
        json!({"written": 4})
    );
    let range = TimeRange::new(
        Timestamp::parse("2026-11-21T00:00:00Z").unwrap(),
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap(),
    )
    .unwrap();
    let request = RangeRequest {
        range,
        order: Order::Asc,
        limit: 10,
        after: None,
    };
    let page = store
        .device_readings(&"sensor-bedroom".parse().unwrap(), &request)
        .await
        .unwrap();
    assert_eq!(page.readings.len(), 2);
}

#[tokio::test]
async fn the_ingest_binary_takes_its_token_from_ssm_at_cold_start() {
    use integration_tests::moto;
    let store = fresh_store(&dynalite(), "bin-ssm").await;

    let name = format!("/iot-ingester/bin-{}/token", std::process::id());
    integration_tests::ssm_client(&moto())
        .put_parameter()
        .name(&name)
        .value("from-ssm")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_ingest"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
            ("AWS_ENDPOINT_URL_SSM", &moto()),
            ("INGEST_TOKEN_PARAMETER", &name),
        ],
    );
    let mut post = event("02-post-readings-batch.json");
    assert_eq!(rt.invoke(post.clone()).await.unwrap()["statusCode"], 401);
    post["headers"]["authorization"] = json!("Bearer from-ssm");
    assert_eq!(rt.invoke(post).await.unwrap()["statusCode"], 200);
}
