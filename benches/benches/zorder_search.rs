//! Items read per item returned: Z-order box search against a time-range read
//! plus filter, on the same data in the same run.
//!
//! Data: a year (2025) of 1-minute climate readings for 3 rooms with seasonal
//! and daily cycles (1,576,800 readings), in the embedded store. For boxes of
//! about 10 %, 1 % and 0.1 % selectivity over the summer (June-August) of one
//! room, it runs `query::search` (the code behind `GET /rooms/{id}/search`)
//! page by page, and, as the baseline, `query::readings` over the same time
//! range, filtering every reading. Both count the index items they read. The
//! answers are checked against each other.
//!
//! `cargo bench -p system-benches --bench zorder_search`; under `cargo test` it
//! runs on 3 days of data as a smoke test.

use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, TimeRange, Timestamp};
use shared::query::{self, Partition, ReadingsQuery, SearchQuery};
use shared::store::ReadingStore;
use shared::store::{Order, SqliteStore, ZIndex};
use std::f64::consts::TAU;
use std::time::Instant;

const YEAR_START_MS: i64 = 1_735_689_600_000; // 2025-01-01T00:00:00Z
const MINUTE_MS: i64 = 60_000;

/// A small deterministic noise source (xorshift), so every run has the same data.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

fn readings(minutes: i64) -> Vec<Reading> {
    let rooms = [
        ("living", 21.0, 0.0),
        ("bedroom", 19.0, 5.0),
        ("bathroom", 22.0, 12.0),
    ];
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(minutes as usize * rooms.len());
    for m in 0..minutes {
        let day = m as f64 / 1440.0;
        let hour = (m % 1440) as f64 / 60.0;
        let season = (TAU * (day - 110.0) / 365.0).sin(); // warmest late July
        let daily = (TAU * (hour - 9.0) / 24.0).sin(); // warmest mid-afternoon
        for (i, (room, base, humid)) in rooms.iter().enumerate() {
            let t = base + 7.0 * season + 3.0 * daily + noise.next();
            let shower = if *room == "bathroom" && (7.0..7.5).contains(&hour) {
                30.0
            } else {
                0.0
            };
            let h = (52.0 + humid + 12.0 * season - 8.0 * daily + shower + 6.0 * noise.next())
                .clamp(0.0, 100.0);
            out.push(Reading {
                device_id: DeviceId::parse(&format!("sensor-{i}")).unwrap(),
                timestamp: Timestamp::from_millis(YEAR_START_MS + m * MINUTE_MS).unwrap(),
                measurement: Measurement::climate(
                    RoomId::parse(room).unwrap(),
                    (t * 100.0).round() / 100.0,
                    (h * 10.0).round() / 10.0,
                )
                .unwrap(),
            });
        }
    }
    out
}

fn climate(r: &Reading) -> (f64, f64) {
    (
        r.get(Quantity::Temperature).expect("a climate reading"),
        r.get(Quantity::Humidity).expect("a climate reading"),
    )
}

/// Thresholds (t, h) such that about `share` of `in_range` has both at least t and h.
fn thresholds(in_range: &[(f64, f64)], share: f64) -> (f64, f64) {
    let mut ts: Vec<f64> = in_range.iter().map(|r| r.0).collect();
    let mut hs: Vec<f64> = in_range.iter().map(|r| r.1).collect();
    ts.sort_by(f64::total_cmp);
    hs.sort_by(f64::total_cmp);
    let at = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..40 {
        let q = (lo + hi) / 2.0;
        let (t, h) = (at(&ts, q), at(&hs, q));
        let got =
            in_range.iter().filter(|r| r.0 >= t && r.1 >= h).count() as f64 / in_range.len() as f64;
        if got > share {
            lo = q;
        } else {
            hi = q;
        }
    }
    let q = (lo + hi) / 2.0;
    (at(&ts, q), at(&hs, q))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // ZORDER_BENCH_FULL=1 runs the full year under `cargo test` too (for profiling in a debug build).
    let full =
        std::env::args().any(|a| a == "--bench") || std::env::var_os("ZORDER_BENCH_FULL").is_some();
    let minutes = if full { 365 * 1440 } else { 3 * 1440 };
    let data = readings(minutes);
    let store = SqliteStore::in_memory().unwrap();
    let started = Instant::now();
    for chunk in data.chunks(10_000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let load = started.elapsed();

    // The summer (or, in the smoke run, the second day) of the living room.
    let (from, to) = if full {
        (
            YEAR_START_MS + 151 * 1440 * MINUTE_MS,
            YEAR_START_MS + 243 * 1440 * MINUTE_MS,
        )
    } else {
        (
            YEAR_START_MS + 1440 * MINUTE_MS,
            YEAR_START_MS + 2 * 1440 * MINUTE_MS,
        )
    };
    let range = TimeRange::new(
        Timestamp::from_millis(from).unwrap(),
        Timestamp::from_millis(to).unwrap(),
    )
    .unwrap();
    let room = RoomId::parse("living").unwrap();
    let in_range: Vec<(f64, f64)> = data
        .iter()
        .filter(|r| r.device_id.as_str() == "sensor-0" && range.contains(r.timestamp))
        .map(climate)
        .collect();

    println!(
        "{} readings ({} rooms x {} minutes) loaded in {:.1} s; box time range: {} readings of one room",
        data.len(),
        3,
        minutes,
        load.as_secs_f64(),
        in_range.len()
    );
    println!("| selectivity (target) | box | returned | Z-order: items read | read ÷ returned | requests | baseline (range + filter): items read | read ÷ returned | baseline ÷ Z-order |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for share in [0.10, 0.01, 0.001] {
        let (t, h) = thresholds(&in_range, share);
        let want = in_range.iter().filter(|r| r.0 >= t && r.1 >= h).count();

        // Z-order search, every page.
        let mut q = SearchQuery {
            range,
            temperature: (t, 150.0),
            humidity: (h, 100.0),
            limit: 1000,
            cursor: None,
        };
        let (mut read, mut returned, mut requests) = (0, 0, 0);
        loop {
            let page = query::search(&store, ZIndex::Room(&room), &q)
                .await
                .unwrap();
            read += page.items_read;
            returned += page.items_returned;
            requests += page.requests;
            match page.next_cursor {
                Some(c) => q.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(returned, want, "the search returns exactly the box");

        // Baseline: the time range, every page, filtered here.
        let mut rq = ReadingsQuery {
            range,
            order: Order::Asc,
            limit: 1000,
            cursor: None,
        };
        let (mut base_read, mut base_returned) = (0, 0);
        loop {
            let page = query::readings(&store, Partition::Room(&room), &rq)
                .await
                .unwrap();
            base_read += page.readings.len();
            base_returned += page
                .readings
                .iter()
                .map(climate)
                .filter(|r| r.0 >= t && r.1 >= h)
                .count();
            match page.next_cursor {
                Some(c) => rq.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(base_returned, want, "the baseline finds the same readings");
        let per = |r: usize| {
            if returned == 0 {
                f64::NAN
            } else {
                r as f64 / returned as f64
            }
        };
        println!(
            "| {:.1} % ({:.2} % actual) | t ≥ {t} °C, h ≥ {h} % | {returned} | {read} | **{:.2}** | {requests} | {base_read} | {:.1} | {:.1}× |",
            share * 100.0,
            100.0 * want as f64 / in_range.len() as f64,
            per(read),
            per(base_read),
            base_read as f64 / read.max(1) as f64,
        );
    }
}
