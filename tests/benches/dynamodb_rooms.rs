//! A room's day on a DynamoDB-API server (dynalite), issue 25: with the
//! `room-time` index (`RoomIndex=enabled`) and without it (the default:
//! the room's devices' partitions merged over their presence days), for a
//! room of 3 and of 20 climate sensors at 1 reading a minute. Both tables
//! hold the same readings and answer the same pages (checked); the figures
//! are wall time, read units and requests' pages, with the index's time as
//! the baseline of the same run.
//!
//! `cargo bench -p integration-tests --bench dynamodb_rooms` (needs
//! DYNALITE_ENDPOINT, as `scripts/bench` sets it); under `cargo test` it
//! runs once, small, as a smoke test.

use integration_tests::{answer, api_event, app, client, dynalite, handle, stream_event_for};
use serde_json::Value;
use shared::api::{App, RouteSet};
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::{DynamoStore, Indexes};
use std::time::{Duration, Instant};

/// 2025-11-01T00:00:00Z.
const START: i64 = 1_761_955_200_000;
const MINUTE: i64 = 60_000;

fn sensor(device: usize, minute: i64) -> Reading {
    Reading {
        device_id: DeviceId::parse(&format!("sensor-{device:02}")).unwrap(),
        timestamp: Timestamp::from_millis(START + minute * MINUTE + device as i64 * 997).unwrap(),
        measurement: Measurement::climate(
            RoomId::parse("hall").unwrap(),
            18.0 + ((minute + device as i64) % 50) as f64 / 10.0,
            40.0 + (minute % 30) as f64,
        )
        .unwrap(),
    }
}

async fn table(room_time: bool, devices: usize, minutes: i64) -> DynamoStore {
    let store = DynamoStore::new(
        client(&dynalite()),
        integration_tests::table_name("bench-rooms"),
    )
    .with_indexes(Indexes {
        room_time,
        box_search: false,
        all_devices: false,
    });
    store.create_table().await.unwrap();
    let readings: Vec<Reading> = (0..minutes)
        .flat_map(|m| (0..devices).map(move |d| sensor(d, m)))
        .collect();
    for chunk in readings.chunks(5000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    // The registry (and presence) as the registry function leaves them.
    let firsts: Vec<Reading> = (0..devices).map(|d| sensor(d, 0)).collect();
    let r = shared::stream::handle(&store, stream_event_for(&firsts)).await;
    assert!(r.batch_item_failures.is_empty());
    store
}

/// Every page of a room's day: the readings, read units, pages, wall time.
async fn day(app: &App<DynamoStore>, minutes: i64) -> (Vec<Value>, f64, usize, Duration) {
    let from = Timestamp::from_millis(START).unwrap().to_string();
    let to = Timestamp::from_millis(START + minutes * MINUTE)
        .unwrap()
        .to_string();
    let mut readings = Vec::new();
    let (mut units, mut pages) = (0.0, 0);
    let mut cursor: Option<String> = None;
    let started = Instant::now();
    loop {
        let mut query = vec![
            ("from", from.as_str()),
            ("to", to.as_str()),
            ("limit", "1000"),
        ];
        if let Some(c) = &cursor {
            query.push(("cursor", c.as_str()));
        }
        let (status, body) = answer(
            &handle(
                app,
                api_event("GET", "/rooms/hall/readings", &query, None, &[]),
            )
            .await,
        );
        assert_eq!(status, 200, "{body}");
        pages += 1;
        units += body["read_units"].as_f64().unwrap_or(0.0);
        readings.extend(body["readings"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    (readings, units, pages, started.elapsed())
}

async fn compare(devices: usize, minutes: i64, reps: usize) {
    let with = app(table(true, devices, minutes).await, None, RouteSet::Query).await;
    let without = app(table(false, devices, minutes).await, None, RouteSet::Query).await;
    let mut times = [Vec::new(), Vec::new()];
    let mut last = [None, None];
    // Taking turns, so that both see the same machine.
    for _ in 0..reps {
        for (i, a) in [&with, &without].into_iter().enumerate() {
            let (readings, units, pages, took) = day(a, minutes).await;
            times[i].push(took);
            last[i] = Some((readings, units, pages));
        }
    }
    let [Some((a, units_a, pages_a)), Some((b, units_b, pages_b))] = last else {
        unreachable!()
    };
    assert_eq!(a.len(), devices * minutes as usize, "every reading");
    assert_eq!(a, b, "the same answer with and without the index");
    let median = |t: &mut Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    let (ta, tb) = (median(&mut times[0]), median(&mut times[1]));
    println!(
        "a room of {devices} sensors, {} h at 1/min ({} readings): with room-time {:.0} ms, \
         {units_a} read units, {pages_a} pages; without (merged partitions) {:.0} ms, \
         {units_b} read units, {pages_b} pages: time {:.2}x, read units {:.2}x of the index's",
        minutes / 60,
        a.len(),
        ta.as_secs_f64() * 1e3,
        tb.as_secs_f64() * 1e3,
        tb.as_secs_f64() / ta.as_secs_f64(),
        units_b / units_a.max(f64::MIN_POSITIVE),
    );
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if full {
        compare(3, 24 * 60, 5).await;
        compare(20, 24 * 60, 3).await;
    } else {
        compare(3, 120, 1).await;
    }
}
