//! Each function's footprint beside the floors it is held to (issue 43,
//! docs/BENCHMARKS.md "Function footprint"), in one run: its stripped size,
//! its initialisation (process start to its first poll for an event), its
//! cold start (the init and the first event) and its peak RSS after one
//! event, under the Lambda Runtime API emulator
//! against moto. The floors: `hello-lambda` (`lambda_runtime` alone) and
//! `hello-dynamodb` (the same, building the SDK's DynamoDB client as the
//! functions do, answering with a DescribeTable).
//!
//! `cargo bench -p system-benches --bench footprint` after `cargo build
//! --release -p ingest -p query -p dashboard -p registry -p rollups -p mqtt -p alerts
//! -p system-benches` (each function built on its own, as `sam build`
//! builds it; `scripts/bench` does this). Needs MOTO_ENDPOINT. Under
//! `cargo test` it runs once against the debug binaries, as a smoke test;
//! `FOOTPRINT_BINARIES=target/release cargo test -p system-benches --bench
//! footprint -- --bench` measures release binaries from a debug build of
//! the bench itself.

use integration_tests::fault_proxy::{Fault, FaultProxy};
use integration_tests::runtime_api::Runtime;
use integration_tests::{api_event, fresh_store, moto};
use serde_json::{json, Value};
use shared::model::{DeviceId, Measurement, Reading, Timestamp};
use shared::store::ReadingStore;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A binary beside this bench's own `deps/` folder, or in
/// `FOOTPRINT_BINARIES` (release builds measured by a debug-built bench).
fn binary(name: &str) -> PathBuf {
    let dir = match std::env::var_os("FOOTPRINT_BINARIES") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().unwrap();
            exe.parent().unwrap().parent().unwrap().to_path_buf()
        }
    };
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built (see this bench's comment)",
        path.display()
    );
    path
}

fn event_file(name: &str) -> Value {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One start of `name` given `event`.
struct Start {
    /// Process start to its first poll for an event.
    init: Duration,
    /// Of that, how long it waited on the DynamoDB server behind the proxy.
    init_waited: Duration,
    /// The first event, handed over to answered: on a cold start the
    /// caller waits for the init and this.
    first: Duration,
    /// Of that, how long it waited on the server.
    first_waited: Duration,
    peak_rss_kib: u64,
}

async fn run(name: &str, env: &[(&str, &str)], event: &Value, proxy: &FaultProxy) -> Start {
    let mut rt = Runtime::start().await;
    proxy.seen.lock().unwrap().held.clear();
    let spawned = Instant::now();
    rt.spawn(binary(name).to_str().unwrap(), env);
    let init = rt.ready().await - spawned;
    let init_waited = proxy.seen.lock().unwrap().take_waited();
    let handed = Instant::now();
    let answer = rt.invoke(event.clone()).await;
    let first = handed.elapsed();
    let first_waited = proxy.seen.lock().unwrap().take_waited();
    assert!(answer.is_ok(), "{name}: {answer:?}");
    Start {
        init,
        init_waited,
        first,
        first_waited,
        peak_rss_kib: rt.peak_rss_kib(),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let reps = if full { 7 } else { 1 };
    // A household's registry: twenty devices, each with a reading.
    let store = fresh_store(&moto(), "bench-footprint").await;
    let seed: Vec<Reading> = (0..20)
        .map(|d| Reading {
            device_id: DeviceId::parse(&format!("meter-{d:02}")).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000).unwrap(),
            measurement: Measurement::power(1000.0, 0.0, 300.0).unwrap(),
        })
        .collect();
    assert!(store.write_readings(&seed).await.unwritten.is_empty());
    let plan = shared::domain::registry::plan(seed.iter().enumerate());
    assert!(shared::registry::apply(&store, &plan).await.is_empty());
    // The functions talk to moto through a proxy that times moto's answers:
    // moto's calls are far slower than DynamoDB's and swing by more than a
    // function's own work, so what each start waited on moto is subtracted.
    let proxy = FaultProxy::start(&moto(), Fault::HoldBack(|_| false)).await;
    let env = [
        ("TABLE_NAME", store.table()),
        ("AWS_ENDPOINT_URL_DYNAMODB", &proxy.url),
    ];
    let scheduled = json!({"version": "0", "id": "1", "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "123456789012", "time": Timestamp::now().to_string(),
        "region": "us-east-1", "resources": [], "detail": {}});
    let post = serde_json::to_value(api_event(
        "POST",
        "/readings",
        &[],
        Some(r#"{"device_id": "meter-01", "type": "power", "cumulative_kwh_p": 1001.5, "current_w": 320}"#),
        &[],
    ))
    .unwrap();
    let list = serde_json::to_value(api_event("GET", "/devices", &[], None, &[])).unwrap();
    let overview = serde_json::to_value(api_event("GET", "/", &[], None, &[])).unwrap();
    let rows: [(&str, Value); 9] = [
        ("hello-lambda", json!({})),
        ("hello-dynamodb", json!({})),
        ("ingest", post),
        ("query", list),
        ("dashboard", overview),
        ("registry", event_file("04-stream-registry.json")),
        ("rollups", event_file("04-stream-registry.json")),
        ("mqtt", event_file("13-iot-rule-tasmota.json")),
        ("alerts", scheduled),
    ];
    let mut results = Vec::new();
    for (name, event) in &rows {
        let (mut inits, mut owns, mut colds, mut peaks) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let start = run(name, &env, event, &proxy).await;
            let own = start.init.saturating_sub(start.init_waited);
            let first_own = start.first.saturating_sub(start.first_waited);
            inits.push(start.init.as_secs_f64() * 1000.0);
            owns.push(own.as_secs_f64() * 1000.0);
            colds.push((own + first_own).as_secs_f64() * 1000.0);
            peaks.push(start.peak_rss_kib as f64 / 1024.0);
        }
        let size = std::fs::metadata(binary(name)).unwrap().len() as f64 / 1e6;
        results.push((
            *name,
            size,
            median(inits),
            median(owns),
            median(colds),
            median(peaks),
        ));
    }
    let (_, floor_size, _, floor_init, floor_cold, floor_rss) = results[1];
    println!("\nfootprint under the Runtime API emulator, 20 registered devices in moto, median of {reps}; what each start waited on moto (timed by a proxy) subtracted. A cold start's caller waits for the init and the first event: the floor's first event is a DescribeTable, each function's its own first request (the HTTP functions and mqtt load the registry then):");
    println!(
        "| binary | size | ÷ floor | init | init − waiting on moto | ÷ floor | init + first event − waiting | ÷ floor | peak RSS | ÷ floor |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, size, init, own, cold, rss) in &results {
        println!(
            "| {name} | {size:.2} MB | {:.2} | {init:.1} ms | {own:.1} ms | {:.2} | {cold:.1} ms | {:.2} | {rss:.1} MiB | {:.2} |",
            size / floor_size,
            own / floor_init,
            cold / floor_cold,
            rss / floor_rss
        );
    }
}
