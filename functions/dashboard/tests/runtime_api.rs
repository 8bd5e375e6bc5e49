//! The `dashboard` binary under a Lambda Runtime API emulator, against a
//! dynalite table created as `template.yaml` defines it: it answers InfluxQL
//! and the dashboard's pages, and none of the JSON API's routes.

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
async fn the_dashboard_binary_answers_influxql_and_pages_and_no_json_reads() {
    let store = sample_batch_table("bin-dashboard").await;

    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_dashboard"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
        ],
    );
    // Grafana's InfluxQL (issue 27): hourly means.
    let influx = rt.invoke(event("15-influxql-query.json")).await.unwrap();
    assert_eq!(influx["statusCode"], 200, "{influx}");
    assert_eq!(
        influx["headers"]["x-influxdb-version"].as_str(),
        Some("1.8.10")
    );
    let rows = body(&influx)["results"][0]["series"][0]["values"].clone();
    assert_eq!(rows[0], json!([1_795_219_200_000i64, null, 0]));
    assert_eq!(
        (rows[1][0].clone(), rows[1][2].clone()),
        (json!(1_795_222_800_000i64), json!(2))
    );
    // The overview page, naming the devices the table holds.
    let mut overview = event("05-get-devices.json");
    overview["rawPath"] = json!("/");
    overview["routeKey"] = json!("GET /");
    overview["requestContext"]["http"]["path"] = json!("/");
    overview["requestContext"]["routeKey"] = json!("GET /");
    let page = rt.invoke(overview).await.unwrap();
    assert_eq!(page["statusCode"], 200, "{page}");
    let html = page["body"].as_str().unwrap();
    assert!(
        html.contains("meter-1") && html.contains("sensor-bedroom"),
        "{html}"
    );
    // The JSON API is the query function's; writes are the ingest function's.
    for name in ["05-get-devices.json", "01-post-reading-power.json"] {
        let answer = rt.invoke(event(name)).await.unwrap();
        assert_eq!(
            (
                answer["statusCode"].clone(),
                body(&answer)["error"]["code"].clone()
            ),
            (json!(404), json!("not_found")),
            "{name}"
        );
    }
}
