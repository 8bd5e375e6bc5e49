//! One retry owner and a deadline that holds (issue 23): the program is
//! assembled from a `Config` (as the Lambdas and `ingester-local` are)
//! against tiny DynamoDB endpoints on 127.0.0.1 that misbehave on purpose:
//! one that accepts the connection and never answers a write, one that
//! answers every write with `ProvisionedThroughputExceededException`, and a
//! raw TCP black hole that never answers anything. `POST /readings` must
//! answer 503 naming every unwritten reading within the budget plus 1 s.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use integration_tests::{answer, api_event, assert_every_reading_unwritten, handle, power};
use serde_json::{json, Value};
use shared::api::RouteSet;
use shared::config::{Config, StoreConfig};
use shared::model::{DeviceId, Measurement, Reading, Timestamp};
use shared::rollups::Upkeep;
use shared::store::ReadingStore;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const READINGS: u64 = 1000;
const CHUNKS: usize = 40;

#[derive(Clone, Copy)]
enum Writes {
    /// Accept the request and never answer it.
    Hang,
    /// Answer every write as a throttled DynamoDB does.
    Throttle,
}

struct Endpoint {
    writes: Writes,
    /// `BatchWriteItem` requests received.
    batch_writes: AtomicUsize,
    /// `PutItem` requests received (hour blocks, issue 78).
    puts: AtomicUsize,
}

/// A DynamoDB endpoint: an empty table for reads, `writes` for writes.
async fn dynamodb(State(e): State<Arc<Endpoint>>, headers: HeaderMap, _: Bytes) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let json = [("content-type", "application/x-amz-json-1.0")];
    if target.ends_with(".PutItem") {
        e.puts.fetch_add(1, Ordering::SeqCst);
    } else if !target.ends_with(".BatchWriteItem") {
        return (
            json,
            json!({"Items": [], "Count": 0, "ScannedCount": 0}).to_string(),
        )
            .into_response();
    } else {
        e.batch_writes.fetch_add(1, Ordering::SeqCst);
    }
    match e.writes {
        Writes::Hang => std::future::pending().await,
        Writes::Throttle => (
            StatusCode::BAD_REQUEST,
            json,
            json!({
                "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "message": "The level of configured provisioned throughput for the table was exceeded."
            })
            .to_string(),
        )
            .into_response(),
    }
}

async fn endpoint(writes: Writes) -> (String, Arc<Endpoint>) {
    let state = Arc::new(Endpoint {
        writes,
        batch_writes: AtomicUsize::new(0),
        puts: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .fallback(dynamodb)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, state)
}

/// A configuration as a Lambda's, on `endpoint`, with `budget`; the
/// closed hours of a batch written as items (the chunks these tests count).
fn config(endpoint: &str, budget: Option<&str>) -> Config {
    config_with(endpoint, budget, false)
}

/// The same, with the closed hours written as blocks or not.
fn config_with(endpoint: &str, budget: Option<&str>, blocks: bool) -> Config {
    let store = StoreConfig::DynamoDb {
        table: "readings".into(),
        endpoint: Some(endpoint.into()),
        create_table: false,
    };
    Config::with_store(store, |k| match k {
        "DYNAMODB_BUDGET_MS" => budget.map(str::to_owned),
        "BATCH_BLOCKS" => Some(blocks.to_string()),
        _ => None,
    })
    .unwrap()
}

/// 1000 readings: 40 write chunks, five times the chunks in flight at once,
/// so a deadline per attempt (not per operation) would take five budgets.
fn body() -> String {
    let readings: Vec<Value> = (0..READINGS)
        .map(|i| {
            power(
                "meter-1",
                &format!("2026-11-21T{:02}:{:02}:00Z", i / 60, i % 60),
                1000.0 + i as f64,
                0.0,
                100.0,
            )
        })
        .collect();
    Value::Array(readings).to_string()
}

/// Posts the body through the assembled HTTP function; the status, the
/// answer and how long it took.
async fn post(config: &Config) -> (u16, Value, Duration) {
    let app = shared::assembly::http_function(config, RouteSet::Ingest)
        .await
        .unwrap();
    let started = Instant::now();
    let resp = handle(
        &app,
        api_event("POST", "/readings", &[], Some(&body()), &[]),
    )
    .await;
    let took = started.elapsed();
    let (status, answer) = answer(&resp);
    (status, answer, took)
}

#[tokio::test]
async fn a_write_that_is_never_answered_is_a_503_within_the_budget() {
    let (url, endpoint) = endpoint(Writes::Hang).await;
    let budget = Duration::from_millis(2000);
    let (status, answer, took) = post(&config(&url, Some("2000"))).await;
    assert_eq!(status, 503, "{answer}");
    assert_every_reading_unwritten(&answer, READINGS);
    assert!(
        took >= budget && took <= budget + Duration::from_secs(1),
        "answered after {took:?}; the budget is {budget:?}"
    );
    // The first chunks in flight waited for the budget; the chunks queued
    // behind them found it spent and gave up without waiting again.
    let attempts = endpoint.batch_writes.load(Ordering::SeqCst);
    assert!((1..CHUNKS).contains(&attempts), "{attempts} write attempts");
}

/// Closed hours written as blocks (issue 78) keep the budget too: a put
/// of an hour item never answered (or always throttled) is a 503 naming
/// every reading, within the budget, and nothing falls back to items then.
#[tokio::test]
async fn hours_written_as_blocks_answer_503_within_the_budget() {
    for writes in [Writes::Hang, Writes::Throttle] {
        let (url, endpoint) = endpoint(writes).await;
        let budget = Duration::from_millis(2000);
        let (status, answer, took) = post(&config_with(&url, Some("2000"), true)).await;
        assert_eq!(status, 503, "{answer}");
        assert_every_reading_unwritten(&answer, READINGS);
        assert!(
            took <= budget + Duration::from_secs(1),
            "answered after {took:?}; the budget is {budget:?}"
        );
        assert!(endpoint.puts.load(Ordering::SeqCst) >= 1, "no hour put");
        assert_eq!(endpoint.batch_writes.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn a_write_that_is_always_throttled_is_a_503_within_the_default_budget() {
    let (url, endpoint) = endpoint(Writes::Throttle).await;
    let config = config(&url, None);
    let budget = config.dynamodb.budget;
    assert_eq!(budget, Duration::from_secs(5), "the default budget");
    let (status, answer, took) = post(&config).await;
    assert_eq!(status, 503, "{answer}");
    assert_every_reading_unwritten(&answer, READINGS);
    assert!(
        took <= budget + Duration::from_secs(1),
        "answered after {took:?}; the budget is {budget:?}"
    );
    let attempts = endpoint.batch_writes.load(Ordering::SeqCst);
    // Backoff from 25 ms doubling to a 1 s cap, with full jitter: a chunk
    // makes about 8 to 15 attempts in 5 s. Retried, and never past the budget.
    let per_chunk = attempts as f64 / CHUNKS as f64;
    println!("attempts within the {budget:?} budget: {attempts} for {CHUNKS} chunks ({per_chunk:.1} per chunk), answered after {took:?}");
    assert!(
        attempts >= 2 * CHUNKS,
        "{attempts} attempts: the adapter did not retry"
    );
    assert!(
        per_chunk <= 30.0,
        "{attempts} attempts: retries are stacked or unthrottled"
    );
}

/// The raw black hole: a TCP listener that accepts and never reads or
/// answers. Every operation of the adapter, reads included, gives up at the
/// budget with an error, and a write reports every reading unwritten.
#[tokio::test]
async fn a_tcp_black_hole_holds_no_operation_past_the_budget() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let config = config(&url, Some("1000"));
    let budget = config.dynamodb.budget;
    let store = shared::assembly::stream_function(&config).await.unwrap();

    let started = Instant::now();
    let device = DeviceId::parse("meter-1").unwrap();
    let readings: Vec<Reading> = (0..30)
        .map(|i| Reading {
            device_id: device.clone(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + i * 60_000).unwrap(),
            measurement: Measurement::power(1.0, 0.0, 1.0).unwrap(),
        })
        .collect();
    let report = store.write_readings(&readings).await;
    let took = started.elapsed();
    assert_eq!(report.unwritten, (0..30).collect::<Vec<usize>>());
    assert!(took <= budget + Duration::from_secs(1), "write: {took:?}");

    let started = Instant::now();
    let read = store.latest_reading(&device).await;
    let took = started.elapsed();
    assert!(read.is_err(), "{read:?}");
    assert!(
        took >= budget && took <= budget + Duration::from_secs(1),
        "read: {took:?}"
    );
}

/// Maintenance is not held to one request's budget: rebuilding a week of
/// rollups makes many requests and takes longer than the budget in all, on
/// a real table (dynalite), and still completes; each request has a budget
/// of its own.
#[tokio::test]
async fn a_rollups_rebuild_longer_than_the_budget_completes() {
    let store =
        integration_tests::fresh_store(&integration_tests::dynalite(), "rebuild-budget").await;
    let device = DeviceId::parse("meter-1").unwrap();
    let readings: Vec<Reading> = (0..7 * 24 * 6)
        .map(|i| Reading {
            device_id: device.clone(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + i * 600_000).unwrap(),
            measurement: Measurement::power(1000.0 + i as f64 * 0.01, 0.0, 50.0).unwrap(),
        })
        .collect();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let budget = Duration::from_millis(50);
    let tight = store
        .clone()
        .with_policy(shared::store::dynamodb::CallPolicy {
            budget,
            ..Default::default()
        });
    let all = shared::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let started = Instant::now();
    let built = tight.rebuild_rollups(&device, all).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        built,
        7 * 24 + 7,
        "an hour rollup per hour and a day rollup per day"
    );
    assert!(
        took > budget,
        "the rebuild took {took:?}: not longer than the budget, so this shows nothing"
    );
}
