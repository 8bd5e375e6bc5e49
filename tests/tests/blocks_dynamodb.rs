//! Hour blocks on DynamoDB (issue 24, docs/blocks.md), on dynalite: the same
//! readings on two tables, one keeping every raw item, the other with a raw
//! window of a day whose raw items before the cutoff are then deleted (what
//! TTL does). Every route that reads readings answers the same on both:
//! ranges (every page, both orders), rooms (with a device that moved rooms
//! and moved back), latest, stats and energy.

use integration_tests::routes_alike::{aggregates_alike, get, open_app, pages_alike};
use integration_tests::{dynalite, expire_raw_before, fresh_store, write_through_stream_functions};
use proptest::prelude::*;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Span, Timestamp};
use shared::store::ReadingStore;
use shared::store::{DynamoStore, Retention};

const HOUR: i64 = 3_600_000;

/// Two days of readings ending at the current hour: a meter (with a counter
/// reset) and a room sensor that is in `lab`, then `den`, then `lab` again;
/// then rewrites of some of them with other values.
fn readings(seed: u64, n: usize) -> (Vec<Reading>, Vec<Reading>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let start = Span::Hour.start_of(Timestamp::now()).millis() - 47 * HOUR;
    let mut minutes: Vec<i64> = (0..n).map(|_| rng.i64(0..48 * 60)).collect();
    minutes.sort();
    minutes.dedup();
    let (moved, back) = (rng.i64(0..24 * 60), rng.i64(24 * 60..48 * 60));
    let mut out = Vec::new();
    let mut kwh = 100.0f64;
    for &m in &minutes {
        let t = Timestamp::from_millis(start + m * 60_000 + rng.i64(0..1000)).unwrap();
        kwh = if rng.u8(0..40) == 0 {
            1.5
        } else {
            ((kwh + rng.f64()) * 1000.0).round() / 1000.0
        };
        if rng.bool() {
            out.push(Reading {
                device_id: DeviceId::parse("meter-1").unwrap(),
                timestamp: t,
                measurement: Measurement::power(kwh, 0.0, rng.i64(0..3000) as f64).unwrap(),
            });
        }
        let room = if (moved..back).contains(&m) {
            "den"
        } else {
            "lab"
        };
        out.push(Reading {
            device_id: DeviceId::parse("sensor-1").unwrap(),
            timestamp: t,
            measurement: Measurement::climate(
                RoomId::parse(room).unwrap(),
                rng.i64(1500..2500) as f64 / 100.0,
                rng.i64(300..600) as f64 / 10.0,
            )
            .unwrap(),
        });
    }
    let rewrites = out
        .iter()
        .filter(|_| rng.u8(0..8) == 0)
        .map(|r| {
            let mut r = r.clone();
            if let Some(room) = r.room().cloned() {
                r.measurement = Measurement::climate(room, -5.25, 99.5).unwrap();
            }
            r
        })
        .collect();
    (out, rewrites)
}

/// Writes the readings and runs both stream functions over them.
async fn load(store: &DynamoStore, batches: &[Vec<Reading>]) {
    for batch in batches.iter().filter(|b| !b.is_empty()) {
        write_through_stream_functions(store, batch).await;
    }
}

async fn check(seed: u64, n: usize, limit: usize) {
    let (first, rewrites) = readings(seed, n);
    let raw = fresh_store(&dynalite(), "blocks-raw").await;
    let blocks = fresh_store(&dynalite(), "blocks-ttl")
        .await
        .with_raw_window(Retention::days(1));
    let batches = vec![first.clone(), rewrites];
    load(&raw, &batches).await;
    load(&blocks, &batches).await;
    let cutoff = blocks.raw_cutoff().expect("a raw window");
    let gone = expire_raw_before(&blocks, &first, cutoff).await;
    // The window's cutoff lies inside the two days: some raw items are gone.
    assert!(gone > 0, "no raw item before the cutoff {cutoff}");

    let (a, b) = (&open_app(raw).await, &open_app(blocks).await);
    let t0 = Span::Hour.start_of(Timestamp::now()).millis() - 48 * HOUR;
    let time = |h: i64, m: i64| {
        Timestamp::from_millis(t0 + h * HOUR + m * 60_000)
            .unwrap()
            .to_string()
    };
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let limit = limit.to_string();
    // The whole span, and ranges across the cutoff and inside either side.
    let mut ranges = vec![(time(-1, 0), time(50, 0))];
    for _ in 0..3 {
        let from = rng.i64(0..48 * 60);
        let to = from + rng.i64(1..30 * 60);
        ranges.push((time(0, from), time(0, to)));
    }
    for (from, to) in &ranges {
        for order in ["asc", "desc"] {
            let q = [
                ("from", from.as_str()),
                ("to", to.as_str()),
                ("order", order),
                ("limit", limit.as_str()),
            ];
            let paths = [
                "/devices/meter-1/readings",
                "/devices/sensor-1/readings",
                "/rooms/lab/readings",
                "/rooms/den/readings",
            ]
            .map(String::from);
            pages_alike(a, b, &paths, &q).await;
        }
        let aggregates = [
            "/devices/meter-1/stats",
            "/devices/sensor-1/stats",
            "/rooms/lab/stats",
            "/devices/meter-1/energy",
        ];
        aggregates_alike(a, b, &aggregates, from, to).await;
    }
    for path in ["/devices/meter-1/latest", "/devices/sensor-1/latest"] {
        let (x, y) = (get(a, path, &[]).await, get(b, path, &[]).await);
        assert_eq!(x.0, 200);
        assert_eq!(x, y, "{path}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Any readings, any page size: with raw items gone past the window,
    /// every reading route answers as with every raw item kept.
    #[test]
    fn answers_from_blocks_equal_answers_from_raw_items(seed in any::<u64>(), n in 30usize..160, limit in 1usize..60) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(check(seed, n, limit));
    }
}

/// A device silent for longer than the raw window: its latest reading comes
/// from its newest block once its raw items are gone.
#[tokio::test]
async fn latest_of_a_silent_device_comes_from_its_block() {
    let store = fresh_store(&dynalite(), "blocks-latest")
        .await
        .with_raw_window(Retention::days(1));
    let old = Span::Hour.start_of(Timestamp::now()).millis() - 40 * HOUR;
    let readings: Vec<Reading> = (0..5)
        .map(|i| Reading {
            device_id: DeviceId::parse("sensor-9").unwrap(),
            timestamp: Timestamp::from_millis(old + i * 60_000).unwrap(),
            measurement: Measurement::climate(
                RoomId::parse("attic").unwrap(),
                10.0 + i as f64,
                50.0,
            )
            .unwrap(),
        })
        .collect();
    load(&store, std::slice::from_ref(&readings)).await;
    let cutoff = store.raw_cutoff().unwrap();
    assert_eq!(expire_raw_before(&store, &readings, cutoff).await, 5);
    let latest = store
        .latest_reading(&DeviceId::parse("sensor-9").unwrap())
        .await
        .unwrap();
    assert_eq!(latest.as_ref(), readings.last());
    // And without the window the store would see nothing: the raw items are gone.
    let bare = DynamoStore::new(store.client().clone(), store.table());
    assert_eq!(
        bare.latest_reading(&DeviceId::parse("sensor-9").unwrap())
            .await
            .unwrap(),
        None
    );
}
