//! The `query` binary under a Lambda Runtime API emulator, against a dynalite
//! table created as `template.yaml` defines it, answers the sample events.

use integration_tests::dynalite;
use integration_tests::runtime_api::{answer_body, sample_batch_table, sample_event, Runtime};
use serde_json::{json, Value};

fn event(name: &str) -> Value {
    sample_event(name)
}

fn body(answer: &Value) -> Value {
    answer_body(answer)
}

#[tokio::test]
async fn the_query_binary_answers_the_sample_events() {
    let store = sample_batch_table("bin-query").await;

    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_query"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
        ],
    );
    let devices = rt.invoke(event("05-get-devices.json")).await.unwrap();
    assert_eq!(devices["statusCode"], 200);
    let ids: Vec<String> = body(&devices)["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, vec!["meter-1", "sensor-bedroom", "sensor-kitchen"]);
    let page = rt
        .invoke(event("07-get-device-readings.json"))
        .await
        .unwrap();
    assert_eq!(
        body(&page)["readings"][0]["timestamp"],
        "2026-11-21T01:05:00.000Z"
    );
    let room = rt.invoke(event("11-get-room-readings.json")).await.unwrap();
    let temps: Vec<f64> = body(&room)["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(temps, vec![21.7, 21.5]);
    // Grafana's InfluxQL (issue 27) is the dashboard function's, not this one's.
    let influx = rt.invoke(event("15-influxql-query.json")).await.unwrap();
    assert_eq!(influx["statusCode"], 404, "{influx}");
    // The query function does not serve POST /readings.
    let post = rt
        .invoke(event("01-post-reading-power.json"))
        .await
        .unwrap();
    assert_eq!(
        (
            post["statusCode"].clone(),
            body(&post)["error"]["code"].clone()
        ),
        (json!(404), json!("not_found"))
    );
}
