//! Faults a real server will not produce on demand, injected with
//! aws-smithy-mocks: `UnprocessedItems` that drain late or never, throttling.
//! What cannot be written is reported by request index, as a 503.

use aws_sdk_dynamodb::operation::batch_write_item::{BatchWriteItemError, BatchWriteItemOutput};
use aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException;
use aws_sdk_dynamodb::types::WriteRequest;
use aws_smithy_mocks::{mock, mock_client, MockResponse, RuleMode};
use integration_tests::handle;
use integration_tests::{answer, api_event, power};
use serde_json::json;
use shared::api::{Access, App, RouteSet};
use shared::registry::RegistryCache;
use shared::store::dynamodb::CallPolicy;
use shared::store::{DynamoStore, RegistrySnapshot};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn pk(w: &WriteRequest) -> String {
    w.put_request().unwrap().item()["pk"]
        .as_s()
        .unwrap()
        .clone()
}

/// The metadata the SDK parses from a throttled answer: the code is what
/// tells a retryable error.
fn throttled() -> aws_sdk_dynamodb::error::ErrorMetadata {
    aws_sdk_dynamodb::error::ErrorMetadata::builder()
        .code("ProvisionedThroughputExceededException")
        .message("slow down")
        .build()
}

fn quick() -> CallPolicy {
    CallPolicy {
        chunk_concurrency: 4,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
        budget: Duration::from_millis(300),
    }
}

fn app_on(client: aws_sdk_dynamodb::Client) -> App<DynamoStore> {
    App {
        store: DynamoStore::new(client, "readings").with_policy(quick()),
        registry: RegistryCache::with_snapshot(
            RegistrySnapshot::default(),
            Duration::from_secs(3600),
        ),
        // The mocked client answers writes only, so the registry is given, not loaded.
        access: Access::open(),
        routes: RouteSet::All,
        subscription: None,
        backups: None,
        tariff: None,
        alert_receivers: None,
        skipped_lines: Default::default(),
        catch_up: None,
    }
}

/// 60 readings: 2 full chunks and one of 10. Devices `stuck-*` never drain.
fn body() -> String {
    let readings: Vec<_> = (0..60)
        .map(|i| {
            let device = if i % 20 == 7 {
                format!("stuck-{i}")
            } else {
                "meter-1".to_owned()
            };
            power(
                &device,
                &format!("2026-11-21T01:{:02}:00Z", i),
                i as f64,
                0.0,
                0.0,
            )
        })
        .collect();
    serde_json::to_string(&readings).unwrap()
}

#[tokio::test]
async fn items_that_never_drain_are_reported_by_index_as_503() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let rule = mock!(aws_sdk_dynamodb::Client::batch_write_item).then_compute_output(move |req| {
        counter.fetch_add(1, Ordering::SeqCst);
        let (table, writes) = req.request_items().unwrap().iter().next().unwrap();
        assert!(writes.len() <= 25, "BatchWriteItem takes at most 25");
        let stuck: Vec<WriteRequest> = writes
            .iter()
            .filter(|w| pk(w).starts_with("stuck"))
            .cloned()
            .collect();
        BatchWriteItemOutput::builder()
            .set_unprocessed_items(
                (!stuck.is_empty()).then(|| HashMap::from([(table.clone(), stuck)])),
            )
            .build()
    });
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&rule],
        // As the assembly builds it: the adapter owns retries.
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let (status, body) = answer(
        &handle(
            &app,
            api_event("POST", "/readings", &[], Some(&body()), &[]),
        )
        .await,
    );
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "storage_unavailable");
    assert_eq!(body["error"]["unwritten"], json!([7, 27, 47]));
    assert_eq!(body["error"]["written"], json!(57));
    assert!(
        calls.load(Ordering::SeqCst) > 3,
        "the stuck items were retried before giving up"
    );
}

#[tokio::test]
async fn unprocessed_items_are_retried_until_they_drain() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let written = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = written.clone();
    // Every request leaves its second half unprocessed on the first two tries of that chunk.
    let tries: Arc<std::sync::Mutex<HashMap<String, usize>>> = Default::default();
    let rule = mock!(aws_sdk_dynamodb::Client::batch_write_item).then_compute_output(move |req| {
        counter.fetch_add(1, Ordering::SeqCst);
        let (table, writes) = req.request_items().unwrap().iter().next().unwrap();
        let first_sk = writes[0].put_request().unwrap().item()["sk"]
            .as_s()
            .unwrap()
            .clone();
        let mut t = tries.lock().unwrap();
        let n = t.entry(first_sk).or_default();
        *n += 1;
        let keep = if *n <= 2 {
            writes.len() / 2
        } else {
            writes.len()
        };
        log.lock().unwrap().extend(writes[..keep].iter().map(|w| {
            w.put_request().unwrap().item()["sk"]
                .as_s()
                .unwrap()
                .clone()
        }));
        let rest = writes[keep..].to_vec();
        BatchWriteItemOutput::builder()
            .set_unprocessed_items(
                (!rest.is_empty()).then(|| HashMap::from([(table.clone(), rest)])),
            )
            .build()
    });
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&rule],
        // As the assembly builds it: the adapter owns retries.
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let (status, body) = answer(
        &handle(
            &app,
            api_event("POST", "/readings", &[], Some(&body()), &[]),
        )
        .await,
    );
    assert_eq!((status, body), (200, json!({"written": 60})));
    let mut sks = written.lock().unwrap().clone();
    sks.sort();
    sks.dedup();
    assert_eq!(sks.len(), 60, "every item reached the table");
    assert!(
        calls.load(Ordering::SeqCst) >= 6,
        "each chunk needed retries"
    );
}

#[tokio::test]
async fn throttling_is_retried_within_the_budget() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let rule =
        mock!(aws_sdk_dynamodb::Client::batch_write_item).then_compute_response(move |_req| {
            if counter.fetch_add(1, Ordering::SeqCst) < 4 {
                MockResponse::Error(BatchWriteItemError::ProvisionedThroughputExceededException(
                    ProvisionedThroughputExceededException::builder()
                        .message("slow down")
                        .meta(throttled())
                        .build(),
                ))
            } else {
                MockResponse::Output(BatchWriteItemOutput::builder().build())
            }
        });
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&rule],
        // As the assembly builds it: the adapter owns retries.
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let one = power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    let (status, body) =
        answer(&handle(&app, api_event("POST", "/readings", &[], Some(&one), &[])).await);
    assert_eq!((status, body), (200, json!({"written": 1})));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn throttling_past_the_budget_is_a_503_naming_every_reading() {
    let rule = mock!(aws_sdk_dynamodb::Client::batch_write_item).then_error(|| {
        BatchWriteItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("slow down")
                .meta(throttled())
                .build(),
        )
    });
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&rule],
        // As the assembly builds it: the adapter owns retries.
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let two = json!([
        power("a", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0),
        power("b", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)
    ]);
    let (status, body) = answer(
        &handle(
            &app,
            api_event("POST", "/readings", &[], Some(&two.to_string()), &[]),
        )
        .await,
    );
    assert_eq!(status, 503);
    assert_eq!(body["error"]["unwritten"], json!([0, 1]));
    assert!(
        !body.to_string().contains("slow down"),
        "engine errors stay in the logs"
    );
}

#[tokio::test]
async fn server_errors_are_retried_and_reported_when_they_persist() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    // The first two answers are 500/503, then the table is back.
    let recovering =
        mock!(aws_sdk_dynamodb::Client::batch_write_item).then_compute_response(move |_req| {
            match counter.fetch_add(1, Ordering::SeqCst) {
                0 => MockResponse::Http(http_response(500)),
                1 => MockResponse::Http(http_response(503)),
                _ => MockResponse::Output(BatchWriteItemOutput::builder().build()),
            }
        });
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&recovering],
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let one = power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    let (status, body) =
        answer(&handle(&app, api_event("POST", "/readings", &[], Some(&one), &[])).await);
    assert_eq!((status, body), (200, json!({"written": 1})));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "two 5xx retried by our own loop"
    );

    let down =
        mock!(aws_sdk_dynamodb::Client::batch_write_item).then_http_response(|| http_response(503));
    let app = app_on(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        &[&down],
        |c| c.retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
    ));
    let two = json!([
        power("a", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0),
        power("b", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)
    ]);
    let (status, body) = answer(
        &handle(
            &app,
            api_event("POST", "/readings", &[], Some(&two.to_string()), &[]),
        )
        .await,
    );
    assert_eq!(
        (status, body["error"]["unwritten"].clone()),
        (503, json!([0, 1]))
    );
}

fn http_response(status: u16) -> aws_smithy_runtime_api::http::Response {
    aws_smithy_runtime_api::http::Response::new(
        aws_smithy_runtime_api::http::StatusCode::try_from(status).unwrap(),
        aws_smithy_types::body::SdkBody::from(
            r#"{"__type":"com.amazonaws.dynamodb#InternalServerError","message":"injected"}"#,
        ),
    )
}

#[tokio::test]
async fn timeouts_are_retried_within_the_budget_then_reported() {
    // A server on loopback that accepts connections and never answers.
    let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = hole.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = hole.accept().await {
            held.push(socket);
        }
    });
    let config = integration_tests::sdk_config(&format!("http://{addr}"))
        .to_builder()
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_millis(100))
                .build(),
        )
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let app = app_on(aws_sdk_dynamodb::Client::from_conf(config));
    let started = std::time::Instant::now();
    let two = json!([
        power("a", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0),
        power("b", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)
    ]);
    let (status, body) = answer(
        &handle(
            &app,
            api_event("POST", "/readings", &[], Some(&two.to_string()), &[]),
        )
        .await,
    );
    assert_eq!(
        (status, body["error"]["unwritten"].clone()),
        (503, json!([0, 1]))
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "timed-out attempts were retried ({took:?})"
    );
    assert!(
        took < Duration::from_secs(5),
        "but only within the budget ({took:?})"
    );
}
