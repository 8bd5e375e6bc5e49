//! A fleet on DynamoDB (issue 76), on dynalite: N climate sensors in N/10
//! rooms registered as the registry function registers them (their
//! updates applied in batches of 1,000 devices); then the query binary
//! under the Lambda Runtime API emulator, as SAM runs it: its init, its
//! first request (`GET /devices/{id}`; the median of three cold starts), a page of each list and its peak
//! RSS; and one alert run per rule scope, in read units as DynamoDB
//! reports them. For each N, all in one run, with the ratios against the
//! smallest fleet.
//!
//! `cargo bench -p system-benches --bench fleet_dynamodb` (10, 1,000,
//! 10,000 and 100,000 devices; `FLEET_SIZES=10,10000` for others; release
//! binaries: `cargo build --release -p query` first). Needs
//! DYNALITE_ENDPOINT. Under `cargo test` it runs with 10 and 300 devices
//! against the debug binary, as a smoke test that still checks every
//! answer.

use integration_tests::runtime_api::{answer_body, function_binary, Runtime};
use integration_tests::{api_event, dynalite, fresh_store};
use serde_json::Value;
use shared::alerts::evaluate;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::notify::Receivers;
use shared::store::metering::metered;
use shared::store::{Alerts, DynamoStore};
use std::time::{Duration, Instant};

/// Lambda's largest answer.
const LAMBDA_ANSWER: usize = 6 * 1024 * 1024;

fn sensor(i: usize) -> Reading {
    Reading {
        device_id: DeviceId::parse(&format!("sensor-{i:06}")).unwrap(),
        timestamp: Timestamp::from_millis(1_795_219_200_000 + i as i64).unwrap(),
        measurement: Measurement::climate(
            RoomId::parse(&format!("room-{:05}", i / 10)).unwrap(),
            18.0 + (i % 50) as f64 / 10.0,
            45.0,
        )
        .unwrap(),
    }
}

/// A fresh table with `devices` registered, in batches of 1,000 as the
/// registry function gets them from the stream; the time it took.
async fn registered(devices: usize) -> (DynamoStore, Duration) {
    let store = fresh_store(&dynalite(), &format!("fleet-{devices}")).await;
    let started = Instant::now();
    for from in (0..devices).step_by(1000) {
        let batch: Vec<Reading> = (from..(from + 1000).min(devices)).map(sensor).collect();
        let plan = shared::domain::registry::plan(batch.iter().enumerate());
        assert!(shared::registry::apply(&store, &plan).await.is_empty());
    }
    (store, started.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Figures {
    devices: usize,
    register: Duration,
    init: Duration,
    first: Duration,
    /// Peak RSS after the first request, and after the lists too.
    first_kib: u64,
    lists_kib: u64,
    pages: Vec<(&'static str, Duration, usize)>,
    alerts: Vec<(&'static str, f64)>,
}

/// Invokes `GET path` and checks it is a 200 within Lambda's answer size.
async fn get(rt: &mut Runtime, path: &str, query: &[(&str, &str)]) -> (Duration, usize, Value) {
    let event = serde_json::to_value(api_event("GET", path, query, None, &[])).unwrap();
    let started = Instant::now();
    let answer = rt.invoke(event).await.expect("an answer");
    let took = started.elapsed();
    assert_eq!(
        answer["statusCode"],
        200,
        "{path}: {:.300}",
        answer.to_string()
    );
    let size = answer["body"].as_str().map_or(0, str::len);
    assert!(size <= LAMBDA_ANSWER, "{path}: {size} bytes");
    (took, size, answer_body(&answer))
}

async fn fleet(devices: usize) -> Figures {
    let (store, register) = registered(devices).await;
    // Three cold starts; the median of each figure (one start is noisy).
    let mut starts = Vec::new();
    let mut rt = None;
    for _ in 0..3 {
        let mut runtime = Runtime::start().await;
        let spawned = Instant::now();
        runtime.spawn(
            function_binary("query").to_str().unwrap(),
            &[
                ("TABLE_NAME", store.table()),
                ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
            ],
        );
        let init = runtime.ready().await - spawned;
        let one = format!("/devices/sensor-{:06}", devices / 2);
        let (first, _, device) = get(&mut runtime, &one, &[]).await;
        assert_eq!(
            device["device"]["device_id"],
            format!("sensor-{:06}", devices / 2)
        );
        starts.push((init, first, runtime.peak_rss_kib()));
        rt = Some(runtime);
    }
    let mut rt = rt.unwrap();
    let median = |mut xs: Vec<u64>| {
        xs.sort();
        xs[1]
    };
    let init = Duration::from_nanos(median(
        starts.iter().map(|s| s.0.as_nanos() as u64).collect(),
    ));
    let first = Duration::from_nanos(median(
        starts.iter().map(|s| s.1.as_nanos() as u64).collect(),
    ));
    let first_kib = median(starts.iter().map(|s| s.2).collect());

    let mut pages = Vec::new();
    let room = format!("room-{:05}", devices / 20);
    let (took, size, page) = get(&mut rt, "/devices", &[]).await;
    assert_eq!(
        page["devices"].as_array().unwrap().len(),
        devices.min(1000),
        "a page of 1,000"
    );
    pages.push(("GET /devices (a page)", took, size));
    if let Some(cursor) = page["next_cursor"].as_str() {
        let (took, size, _) = get(&mut rt, "/devices", &[("cursor", cursor)]).await;
        pages.push(("GET /devices, the next page", took, size));
    }
    let (took, size, _) = get(&mut rt, "/rooms", &[]).await;
    pages.push(("GET /rooms (a page)", took, size));
    let (took, size, page) = get(&mut rt, &format!("/rooms/{room}"), &[]).await;
    assert_eq!(page["devices"].as_array().unwrap().len(), devices.min(10));
    pages.push(("GET /rooms/{id}", took, size));
    let prefix = format!("sensor-{:05}", devices / 20);
    let (took, size, page) = get(&mut rt, "/devices", &[("prefix", &prefix)]).await;
    assert_eq!(page["devices"].as_array().unwrap().len(), devices.min(10));
    pages.push(("GET /devices?prefix= (10)", took, size));
    let lists_kib = rt.peak_rss_kib();

    // One alert run per rule scope, the rule alone (the second run: the
    // steady state, no state to write).
    let mut alerts = Vec::new();
    for (what, rule) in [
        (
            "a device",
            format!(
                r#"{{"kind":"threshold","scope":{{"device":"sensor-{:06}"}},"quantity":"temperature","below":5}}"#,
                devices / 2
            ),
        ),
        (
            "a room",
            format!(
                r#"{{"kind":"threshold","scope":{{"room":"{room}"}},"quantity":"temperature","below":5}}"#
            ),
        ),
        (
            "a type (every climate sensor)",
            r#"{"kind":"threshold","scope":{"type":"climate"},"quantity":"humidity","above":90}"#
                .to_owned(),
        ),
    ] {
        store.put_alert_rule("fleet", &rule).await.unwrap();
        let now = Timestamp::from_millis(1_795_219_200_000 + 3_600_000).unwrap();
        for run in 0..2 {
            let (done, reads) =
                metered(Box::pin(evaluate(&store, now, &Receivers::default()))).await;
            assert!(done.unwrap().events.is_empty(), "nothing fires");
            if run == 1 {
                alerts.push((what, reads));
            }
        }
    }
    assert!(store.delete_alert_rule("fleet").await.unwrap());
    Figures {
        devices,
        register,
        init,
        first,
        first_kib,
        lists_kib,
        pages,
        alerts,
    }
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("FLEET_SIZES") {
        Ok(s) => s.split(',').map(|n| n.trim().parse().unwrap()).collect(),
        Err(_) if full => vec![10, 1_000, 10_000, 100_000],
        Err(_) => vec![10, 300],
    };
    let mut all = Vec::new();
    for n in sizes {
        let f = fleet(n).await;
        println!(
            "{n} devices on dynalite: registered in {:.2} s ({:.0} µs a device); query binary init {:.1} ms, first request {:.1} ms (init + first {:.1} ms), peak RSS {:.1} MiB (after the lists below {:.1} MiB)",
            f.register.as_secs_f64(),
            f.register.as_secs_f64() * 1e6 / n as f64,
            ms(f.init),
            ms(f.first),
            ms(f.init + f.first),
            f.first_kib as f64 / 1024.0,
            f.lists_kib as f64 / 1024.0
        );
        for (what, took, size) in &f.pages {
            println!("  {what:<30} {size:>9} bytes, {:>8.2} ms", ms(*took));
        }
        for (what, reads) in &f.alerts {
            println!("  an alert run, a rule over {what}: {reads} read units");
        }
        all.push(f);
    }
    let base = &all[0];
    for f in &all[1..] {
        println!(
            "{} devices against {}: init + first request {:.2}×, peak RSS after it {:.2}× (after the lists {:.2}×)",
            f.devices,
            base.devices,
            ms(f.init + f.first) / ms(base.init + base.first),
            f.first_kib as f64 / base.first_kib as f64,
            f.lists_kib as f64 / base.lists_kib as f64
        );
    }
    for pair in all.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.devices >= 1000 {
            println!(
                "registering {} devices took {:.1}× as long as {} ({:.0}× the devices)",
                b.devices,
                b.register.as_secs_f64() / a.register.as_secs_f64(),
                a.devices,
                b.devices as f64 / a.devices as f64
            );
        }
    }
}
