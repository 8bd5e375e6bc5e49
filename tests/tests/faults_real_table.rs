//! Faults between the service and a real moto, through a fault-injecting
//! proxy: whatever the service acknowledges is in the table, and what it does
//! not write it names by index, including when the server is killed mid-batch.

use integration_tests::fault_proxy::{Fault, FaultProxy};
use integration_tests::handle;
use integration_tests::{answer, api_event, client, moto, power, sdk_config, table_name};
use serde_json::{json, Value};
use shared::api::{Access, App, RouteSet};
use shared::registry::RegistryCache;
use shared::store::dynamodb::CallPolicy;
use shared::store::{DynamoStore, RegistrySnapshot};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A client through `url` with the SDK's own retries off, so the service's retry budget is what is tested.
fn direct(url: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(
        sdk_config(url)
            .to_builder()
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .build(),
    )
}

fn app(url: &str, table: &str, concurrency: usize) -> App<DynamoStore> {
    let policy = CallPolicy {
        chunk_concurrency: concurrency,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
        // One budget for the whole write (every chunk), as the adapter keeps it.
        budget: Duration::from_millis(1000),
    };
    App {
        store: DynamoStore::new(direct(url), table).with_policy(policy),
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

fn readings(n: usize, stuck: impl Fn(usize) -> bool) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let device = if stuck(i) {
                format!("stuck-{i}")
            } else {
                format!("meter-{}", i % 7)
            };
            let t = shared::model::Timestamp::from_millis(1_795_219_200_000 + i as i64 * 60_000)
                .unwrap();
            power(&device, &t.to_string(), i as f64, 0.0, 0.0)
        })
        .collect()
}

fn key(r: &Value) -> (String, String) {
    let t = shared::model::Timestamp::parse(r["timestamp"].as_str().unwrap()).unwrap();
    (
        r["device_id"].as_str().unwrap().to_owned(),
        shared::keys::reading_sk(t),
    )
}

async fn table_keys(endpoint: &str, table: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut start = None;
    loop {
        let page = client(endpoint)
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .unwrap();
        for item in page.items() {
            out.insert((
                item["pk"].as_s().unwrap().clone(),
                item["sk"].as_s().unwrap().clone(),
            ));
        }
        match page.last_evaluated_key() {
            Some(k) => start = Some(k.clone()),
            None => return out,
        }
    }
}

#[tokio::test]
async fn what_is_acknowledged_is_in_the_table_and_the_rest_is_named() {
    let table = table_name("proxy-hold");
    DynamoStore::new(client(&moto()), &table)
        .create_table()
        .await
        .unwrap();
    let proxy = FaultProxy::start(&moto(), Fault::HoldBack(|pk| pk.starts_with("stuck-"))).await;
    let app = app(&proxy.url, &table, 4);
    let batch = readings(60, |i| i % 20 == 7);
    let (status, body) = answer(
        &handle(
            &app,
            api_event(
                "POST",
                "/readings",
                &[],
                Some(&json!(batch).to_string()),
                &[],
            ),
        )
        .await,
    );
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["unwritten"], json!([7, 27, 47]));
    assert_eq!(body["error"]["written"], json!(57));
    let written: BTreeSet<_> = batch
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 20 != 7)
        .map(|(_, r)| key(r))
        .collect();
    assert_eq!(
        table_keys(&moto(), &table).await,
        written,
        "exactly the acknowledged readings are in the table"
    );
    assert_eq!(proxy.seen.lock().unwrap().acknowledged, written);
}

#[tokio::test]
async fn killing_the_server_mid_batch_loses_nothing_acknowledged() {
    let bin = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../.tools/venv/bin/moto_server"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server from scripts/install-test-tools");
    let child = Arc::new(Mutex::new(child));
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let table = table_name("proxy-kill");
    DynamoStore::new(client(&url), &table)
        .create_table()
        .await
        .unwrap();
    // moto is killed when the 11th BatchWriteItem arrives; chunks go one at a time, in order.
    let proxy = FaultProxy::start(&url, Fault::KillAfter(10, child.clone())).await;
    let app = app(&proxy.url, &table, 1);
    let batch = readings(1000, |_| false);
    let (status, body) = answer(
        &handle(
            &app,
            api_event(
                "POST",
                "/readings",
                &[],
                Some(&json!(batch).to_string()),
                &[],
            ),
        )
        .await,
    );
    // The proxy killed moto at the 11th batch; a write that never reached it
    // fails here, rather than waiting forever for an exit.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if child.lock().unwrap().try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.lock().unwrap().kill();
            panic!(
                "moto was never killed: the 11th BatchWriteItem never arrived (written: {})",
                body["error"]["written"]
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 503, "{body}");
    let unwritten: Vec<u64> = body["error"]["unwritten"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        unwritten,
        (250..1000).collect::<Vec<u64>>(),
        "10 chunks of 25 were stored before the kill"
    );
    assert_eq!(body["error"]["written"], json!(250));
    // moto kept its table in memory, so the proxy's record of moto's own answers is the witness:
    // every reading the service reports written was acknowledged by the server, and no other.
    let reported: BTreeSet<_> = batch[..250].iter().map(key).collect();
    assert_eq!(proxy.seen.lock().unwrap().acknowledged, reported);
}
