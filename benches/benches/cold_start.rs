//! Cold start and peak memory of the function binaries under a Lambda Runtime
//! API emulator, against moto with 1000 registered devices, compared with a
//! hello-world `lambda_runtime` binary started the same way in the same run.
//!
//! `cargo bench -p system-benches --bench cold_start` (release binaries; build
//! them first: `cargo build --release -p ingest -p query`, as `scripts/bench`
//! does). Needs MOTO_ENDPOINT. Under `cargo test` it runs once with 20 devices
//! against the debug binaries, as a smoke test.

use integration_tests::runtime_api::{function_binary, Runtime};
use integration_tests::{api_event, fresh_store, moto};
use serde_json::{json, Value};
use shared::model::{DeviceId, Measurement, Reading, Timestamp};
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use std::time::{Duration, Instant};

fn reading(device: usize, minute: i64) -> Reading {
    Reading {
        device_id: DeviceId::parse(&format!("meter-{device:04}")).unwrap(),
        timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap(),
        measurement: Measurement::power(1000.0 + minute as f64, 0.0, 300.0).unwrap(),
    }
}

fn as_value<T: serde::Serialize>(event: T) -> Value {
    serde_json::to_value(event).unwrap()
}

struct Run {
    init: Duration,
    first: Duration,
    tenth: Duration,
    peak_kib: u64,
    /// A registry read just past the cache's TTL, and the same read again.
    past_ttl: Option<(Duration, Duration)>,
}

/// Starts `binary`, waits for its initialisation, then invokes ten events in turn.
/// With `past_ttl`, the function runs with a 1 s registry TTL, and after the ten
/// events that event is invoked just past the TTL and once more.
async fn run(
    binary: &str,
    env: &[(&str, &str)],
    events: &[Value],
    past_ttl: Option<&Value>,
) -> Run {
    let mut rt = Runtime::start().await;
    let spawned = Instant::now();
    rt.spawn(binary, env);
    let init = rt.ready().await - spawned;
    let mut took = Vec::new();
    for event in events {
        let started = Instant::now();
        let answer = rt.invoke(event.clone()).await.expect("an answer");
        took.push(started.elapsed());
        let status = answer["statusCode"].as_u64();
        assert!(
            matches!(status, Some(200..=299)),
            "{binary} answered {:.300}",
            answer.to_string()
        );
    }
    let past_ttl = match past_ttl {
        Some(event) => {
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let started = Instant::now();
            let aged = rt.invoke(event.clone()).await.expect("an answer");
            let aged_took = started.elapsed();
            let started = Instant::now();
            let again = rt.invoke(event.clone()).await.expect("an answer");
            assert_eq!(aged["statusCode"], 200);
            assert_eq!(again["statusCode"], 200);
            Some((aged_took, started.elapsed()))
        }
        None => None,
    };
    Run {
        past_ttl,
        init,
        first: took[0],
        tenth: took[9],
        peak_kib: rt.peak_rss_kib(),
    }
}

/// A fresh table with `devices` registered devices: one reading each, applied as
/// the stream handler would. Every run gets its own, because moto's Query time
/// grows with the table.
async fn seeded_table(devices: usize) -> shared::store::DynamoStore {
    let store = fresh_store(&moto(), "bench-cold").await;
    let seed: Vec<Reading> = (0..devices).map(|d| reading(d, 0)).collect();
    assert!(store.write_readings(&seed).await.unwritten.is_empty());
    let plan = shared::domain::registry::plan(seed.iter().enumerate());
    assert!(shared::registry::apply(&store, &plan).await.is_empty());
    assert_eq!(store.load_registry().await.unwrap().devices.len(), devices);
    store
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (devices, reps) = if full { (1000, 5) } else { (20, 1) };

    let store = seeded_table(devices).await;

    // What moto itself takes, from this process on a warm connection: the cold
    // start's registry load and one latest-reading query. Both are mostly moto's
    // own time (its Query scans the table), so they are subtracted below.
    let (mut load, mut latest_one) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let started = Instant::now();
        store.load_registry().await.unwrap();
        load.push(ms(started.elapsed()));
        let started = Instant::now();
        let id = DeviceId::parse(&format!("meter-{:04}", i * devices / 5)).unwrap();
        assert!(store.latest_reading(&id).await.unwrap().is_some());
        latest_one.push(ms(started.elapsed()));
    }
    let (load, latest_one) = (median(load), median(latest_one));

    let hello = env!("CARGO_BIN_EXE_hello-lambda").to_owned();
    let query = function_binary("query");
    let ingest = function_binary("ingest");
    // Ten reads that each go to DynamoDB (a registry hit alone would not show a cold connection).
    let latest: Vec<Value> = (0..10)
        .map(|i| {
            as_value(api_event(
                "GET",
                &format!("/devices/meter-{:04}/latest", i * devices / 10),
                &[],
                None,
                &[],
            ))
        })
        .collect();
    // The device list comes from the registry cache alone.
    let list = as_value(api_event("GET", "/devices", &[], None, &[]));
    // Ten POSTs of 1000 readings each, at new timestamps a few weeks back.
    let posts: Vec<Value> = (0..10)
        .map(|b| {
            let body: Vec<Value> = (0..1000)
                .map(|i| {
                    json!({"device_id": format!("meter-{:04}", i % devices), "type": "power",
                       "timestamp": Timestamp::from_millis(1_790_000_000_000 + (b * 1000 + i as i64) * 1000).unwrap().to_string(),
                       "cumulative_kwh_p": 1000.0 + i as f64, "cumulative_kwh_n": 0.5, "current_w": 350.0})
                })
                .collect();
            as_value(api_event(
                "POST",
                "/readings",
                &[],
                Some(&serde_json::to_string(&body).unwrap()),
                &[],
            ))
        })
        .collect();

    #[allow(clippy::type_complexity)]
    let mut rows: Vec<(&str, Vec<Run>)> = vec![
        ("hello-lambda", vec![]),
        ("query", vec![]),
        ("ingest", vec![]),
    ];
    for _ in 0..reps {
        rows[0].1.push(run(&hello, &[], &latest, None).await);
        for (row, binary, events, aged) in [
            (1, &query, &latest, Some(&list)),
            (2, &ingest, &posts, None),
        ] {
            let table = seeded_table(devices).await;
            let env = [
                ("TABLE_NAME", table.table()),
                ("AWS_ENDPOINT_URL_DYNAMODB", &moto()),
                ("REGISTRY_CACHE_TTL_SECONDS", "1"),
            ];
            rows[row]
                .1
                .push(run(binary.to_str().unwrap(), &env, events, aged).await);
        }
    }

    let hello_init = median(rows[0].1.iter().map(|r| ms(r.init)).collect());
    println!(
        "cold start under the Runtime API emulator, {devices} registered devices in moto, median of {reps}:"
    );
    println!(
        "moto on a warm connection from this process: registry load {load:.1} ms, one latest query {latest_one:.1} ms"
    );
    println!("| binary | init (start → first poll) | init − registry load | ÷ hello init | 1st event | 10th event | 1st ÷ 10th | start → 1st answer | peak RSS |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, runs) in &rows {
        let init = median(runs.iter().map(|r| ms(r.init)).collect());
        let first = median(runs.iter().map(|r| ms(r.first)).collect());
        let tenth = median(runs.iter().map(|r| ms(r.tenth)).collect());
        let ratio = median(runs.iter().map(|r| ms(r.first) / ms(r.tenth)).collect());
        let peak = runs.iter().map(|r| r.peak_kib).max().unwrap();
        let own = if *name == "hello-lambda" {
            init
        } else {
            init - load
        };
        println!(
            "| {name} | {init:.1} ms | {own:.1} ms | {:.1}× | {first:.2} ms | {tenth:.2} ms | {ratio:.2}× | {:.1} ms | {:.1} MiB |",
            own / hello_init,
            init + first,
            peak as f64 / 1024.0
        );
    }
    let aged: Vec<(Duration, Duration)> = rows[1].1.iter().filter_map(|r| r.past_ttl).collect();
    println!(
        "query, GET /devices (registry only) just past a 1 s cache TTL: {:.2} ms; the same request again: {:.2} ms (median of {reps}; a reload on the request path would add the registry load, {load:.1} ms)",
        median(aged.iter().map(|a| ms(a.0)).collect()),
        median(aged.iter().map(|a| ms(a.1)).collect()),
    );
}
