//! Rollups on a DynamoDB-API server (dynalite), issue 14's DynamoDB goals:
//!
//! 1. A year of one meter at 1 reading a minute: daily stats and monthly
//!    energy, answered from day rollups (after `rollups rebuild`), against
//!    the same requests answered from the readings, same run: wall time and
//!    items read.
//! 2. The write cost of keeping rollups: devices at 1 reading a minute,
//!    their stream delivered in 5-minute batches (the template's batching
//!    window) through the rollups handler; write units as the server reports
//!    them (`ReturnConsumedCapacity`), per batch and per reading.
//!
//! `cargo bench -p integration-tests --bench dynamodb_rollups` (needs
//! DYNALITE_ENDPOINT, as `scripts/bench` sets it); under `cargo test` it
//! runs once, small, as a smoke test.

use integration_tests::{answer, api_event, app, dynalite, fresh_store, handle, stream_event_for};
use serde_json::Value;
use shared::api::{App, RouteSet};
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::rollups::Upkeep;
use shared::store::ReadingStore;
use shared::store::{DynamoStore, RollupWrites};
use std::time::{Duration, Instant};

/// 2025-11-01T00:00:00Z: a year that ends before now.
const START: i64 = 1_761_955_200_000;
const MINUTE: i64 = 60_000;

fn meter(device: &str, minute: i64) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(START + minute * MINUTE).unwrap(),
        measurement: Measurement::power(
            5000.0 + minute as f64 * 0.005,
            100.0 + minute as f64 * 0.001,
            300.0 + (minute % 97) as f64,
        )
        .unwrap(),
    }
}

fn sensor(device: &str, room: &str, minute: i64) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(START + minute * MINUTE).unwrap(),
        measurement: Measurement::climate(
            RoomId::parse(room).unwrap(),
            18.0 + (minute % 50) as f64 / 10.0,
            40.0 + (minute % 30) as f64,
        )
        .unwrap(),
    }
}

/// Median wall time of `reps` runs of a GET, and its answer.
async fn time_get(
    app: &App<DynamoStore>,
    path: &str,
    query: &[(&str, &str)],
    reps: usize,
) -> (Duration, Value) {
    let mut times = Vec::new();
    let mut body = Value::Null;
    for _ in 0..reps {
        let started = Instant::now();
        let (status, b) = answer(&handle(app, api_event("GET", path, query, None, &[])).await);
        times.push(started.elapsed());
        assert_eq!(status, 200, "{b}");
        body = b;
    }
    times.sort();
    (times[times.len() / 2], body)
}

fn strip(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    o.remove("source");
    o.remove("items_read");
    o.remove("read_units");
    v
}

async fn a_year_of_one_meter(days: i64, reps: usize) {
    let store = fresh_store(&dynalite(), "bench-rollups-year").await;
    let device = DeviceId::parse("meter-1").unwrap();
    let readings: Vec<Reading> = (0..days * 1440).map(|m| meter("meter-1", m)).collect();
    let started = Instant::now();
    for chunk in readings.chunks(5000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let written = started.elapsed();
    // The registry, as the registry function would leave it.
    let last = &readings[readings.len() - 1..];
    assert!(shared::stream::handle(&store, stream_event_for(last))
        .await
        .batch_item_failures
        .is_empty());
    let started = Instant::now();
    let range = shared::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let built = store.rebuild_rollups(&device, range).await.unwrap();
    let rebuilt = started.elapsed();
    println!(
        "{} readings of one meter written in {:.1} s; rollups rebuild: {built} rollups in {:.1} s",
        readings.len(),
        written.as_secs_f64(),
        rebuilt.as_secs_f64()
    );

    let from = Timestamp::from_millis(START).unwrap().to_string();
    let to = Timestamp::from_millis(START + days * 1440 * MINUTE)
        .unwrap()
        .to_string();
    let rollups = app(store.clone(), None, RouteSet::Query).await;
    let raw = app(store.clone().with_rollup_lag(None), None, RouteSet::Query).await;
    for (what, path, bucket) in [
        ("daily stats", "/devices/meter-1/stats", "1d"),
        ("monthly energy", "/devices/meter-1/energy", "1mo"),
    ] {
        let query = [
            ("from", from.as_str()),
            ("to", to.as_str()),
            ("bucket", bucket),
        ];
        let (fast, got) = time_get(&rollups, path, &query, reps).await;
        let (slow, want) = time_get(&raw, path, &query, 1).await;
        assert_eq!(got["source"], "rollups", "{got}");
        let (got_items, want_items) = (got["items_read"].clone(), want["items_read"].clone());
        let (got_units, want_units) = (got["read_units"].clone(), want["read_units"].clone());
        assert_eq!(strip(got), strip(want), "{what}: the readings' answer");
        println!(
            "{what} over {days} days: from rollups {:.1} ms ({got_items} items read, {got_units} read units), from the readings {:.0} ms ({want_items} items, {want_units} read units): {:.0}x",
            fast.as_secs_f64() * 1e3,
            slow.as_secs_f64() * 1e3,
            slow.as_secs_f64() / fast.as_secs_f64()
        );
    }
}

/// Write units of keeping rollups, devices at 1 reading a minute, stream
/// batches every `window` minutes.
async fn write_cost(hours: i64, window: i64) {
    let store = fresh_store(&dynalite(), "bench-rollups-wcu").await;
    let devices = 4;
    let mut totals = RollupWrites::default();
    let (mut batches, mut readings_total) = (0, 0);
    let minutes = hours * 60;
    let mut t = 0;
    while t < minutes {
        let mut batch = Vec::new();
        for m in t..(t + window).min(minutes) {
            batch.push(meter("meter-1", m));
            batch.push(meter("meter-2", m));
            batch.push(sensor("sensor-1", "bedroom", m));
            batch.push(sensor("sensor-2", "kitchen", m));
        }
        assert!(store.write_readings(&batch).await.unwritten.is_empty());
        let report = shared::stream::rollups::handle_batch(&store, &stream_event_for(&batch)).await;
        assert_eq!(report.failed, None);
        totals += report.writes;
        batches += 1;
        readings_total += batch.len();
        t += window;
    }
    assert!(
        totals.write_units > 0.0,
        "the server reports consumed capacity"
    );
    println!(
        "{devices} devices, {hours} h at 1/min, {window}-minute stream batches: {batches} batches, \
         {} hour and {} day writes, {:.0} write units: {:.2} per batch, {:.3} per reading",
        totals.hours,
        totals.days,
        totals.write_units,
        totals.write_units / batches as f64,
        totals.write_units / readings_total as f64
    );
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if full {
        write_cost(24, 5).await;
        write_cost(6, 1).await;
        a_year_of_one_meter(365, 5).await;
    } else {
        write_cost(2, 5).await;
        a_year_of_one_meter(3, 1).await;
    }
}
