//! The `query` binary under a Lambda Runtime API emulator, against a dynalite
//! table created as `template.yaml` defines it, answers the sample events.

use integration_tests::dynalite;
use integration_tests::fault_proxy::{Fault, FaultProxy};
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

/// The cold start makes no call (issue 43): the function initialises with
/// nothing listening at the table's endpoint, its first request, which
/// loads the registry, is a 503 (`storage_unavailable`), and once the endpoint
/// answers the next request loads it and is answered.
#[tokio::test]
async fn the_first_request_loads_the_registry_and_a_failed_load_is_retried() {
    let store = sample_batch_table("bin-query-first-load").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_query"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &endpoint),
            ("DYNAMODB_BUDGET_MS", "300"),
        ],
    );
    rt.ready().await;
    let refused = rt.invoke(event("05-get-devices.json")).await.unwrap();
    assert_eq!(refused["statusCode"], 503, "{refused}");
    assert_eq!(
        body(&refused)["error"]["code"],
        "storage_unavailable",
        "{refused}"
    );

    let proxy = FaultProxy::start_on(port, &dynalite(), Fault::HoldBack(|_| false)).await;
    let devices = rt.invoke(event("05-get-devices.json")).await.unwrap();
    assert_eq!(devices["statusCode"], 200, "{devices}");
    assert_eq!(body(&devices)["devices"].as_array().unwrap().len(), 3);
    // One registry load (its DEVICE and ROOM queries), not one per
    // request: a later list reads its own page (one Query, issue 76), and
    // the registry is not loaded again.
    let queries = proxy.seen.lock().unwrap().calls.get("Query").copied();
    let again = rt.invoke(event("05-get-devices.json")).await.unwrap();
    assert_eq!(again["statusCode"], 200);
    assert_eq!(
        proxy.seen.lock().unwrap().calls.get("Query").copied(),
        queries.map(|q| q + 1)
    );
}
