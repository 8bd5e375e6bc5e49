//! A slow series' days merged into blocks of up to a week (`day_merge`,
//! `block_spans`) answer exactly as rows do: written as history in
//! batches, sealed by the sealer, written to late (with and without an
//! energy counter), cut by retention and opened again from a file.

use super::sealed_tests::{pages_within, table_rows};
use super::tests::temp_dir;
use super::*;
use domain::model::Reading;
use domain::model::RoomId;
use domain::model::Timestamp;
use domain::model::{Measurement, Quantity};
use storage::Order;
use storage::RangeRequest;
use storage::ReadingStore;
use storage::RollupStore;

/// 2026-09-01T00:00:00Z: long closed.
const START: i64 = 1_788_220_800_000;
const NEVER: i64 = i64::MIN;
const DAYS: i64 = 21;
/// A reading in five minutes.
const EVERY: i64 = 5;

fn at(minute: i64) -> Timestamp {
    Timestamp::from_millis(START + minute * 60_000).unwrap()
}

/// Two room sensors' three weeks, a reading in five minutes, on random
/// walks of a tenth of a degree and half a percent: `sensor-b` is silent on
/// day 9 and moves from the kitchen to the hall on day 12. And a plug that
/// reports its watts alone (no counter, no room) every ten minutes: off at
/// night, a noisy load by day.
fn history() -> Vec<Reading> {
    let mut rng = fastrand::Rng::with_seed(44);
    let mut out = Vec::new();
    for (device, mut t, mut h) in [("sensor-a", 21.0f64, 45.0f64), ("sensor-b", 19.0, 60.0)] {
        for m in (0..DAYS * 1440).step_by(EVERY as usize) {
            t += f64::from(rng.i32(-1..=1)) * 0.1;
            h += f64::from(rng.i32(-1..=1)) * 0.5;
            let day = m / 1440;
            if device == "sensor-b" && day == 9 {
                continue;
            }
            let room = match (device, day) {
                ("sensor-a", _) => "hall",
                (_, d) if d < 12 => "kitchen",
                _ => "hall",
            };
            out.push(climate(device, m, room, t, h));
        }
    }
    for m in (0..DAYS * 1440).step_by(10) {
        let watts = match m % 1440 {
            0..=419 => 0.0,
            _ => f64::from(rng.u32(50..=2500)) + 0.5,
        };
        out.push(Reading {
            device_id: DeviceId::parse("plug-1").unwrap(),
            timestamp: at(m),
            measurement: Measurement::new(None, vec![(Quantity::Power, watts)]).unwrap(),
        });
    }
    out.sort_by_key(|r| r.timestamp);
    out
}

fn climate(device: &str, minute: i64, room: &str, t: f64, h: f64) -> Reading {
    let t = (t * 10.0).round() / 10.0;
    let h = (h * 10.0).round() / 10.0;
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: at(minute),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, h).unwrap(),
    }
}

fn written(store: &SqliteStore, readings: &[Reading], batch: usize, now_ms: i64) {
    for b in readings.chunks(batch) {
        assert!(store.write_readings_at(b, now_ms).unwritten.is_empty());
    }
}

/// The days (first, last) of a device's blocks, oldest first, counted from
/// the history's first.
fn block_days(store: &SqliteStore, device: &str) -> Vec<(i64, i64)> {
    let w = store.lock();
    let id = names::find(&w.conn, names::DEVICE, device)
        .unwrap()
        .unwrap();
    let mut stmt = w
        .conn
        .prepare(
            "SELECT b.key & 0xffffffff, coalesce(s.last_day, b.key & 0xffffffff)
             FROM blocks b LEFT JOIN block_spans s ON s.key = b.key
             WHERE b.key >> 32 = ?1 ORDER BY b.key",
        )
        .unwrap();
    let rows = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    let day0 = START / 86_400_000;
    rows.map(Result::unwrap)
        .map(|(first, last): (i64, i64)| (first - day0, last - day0))
        .collect()
}

/// A device's three weeks in at most four blocks of at most a week each,
/// one after another.
fn in_blocks_of_a_week(days: &[(i64, i64)]) {
    assert!(days.len() <= 4, "{days:?}");
    assert!(
        days.iter().all(|(first, last)| last - first < 7),
        "{days:?}"
    );
    assert!(days.windows(2).all(|w| w[0].1 < w[1].0), "{days:?}");
}

fn request(
    range: TimeRange,
    order: Order,
    limit: usize,
    after: Option<storage::keys::Position>,
) -> RangeRequest {
    RangeRequest {
        range,
        order,
        limit,
        after,
    }
}

/// Everything a reader asks of the two sensors, as text.
async fn answers(store: &SqliteStore) -> Vec<String> {
    let everything = TimeRange::new(at(-1440), at((DAYS + 1) * 1440)).unwrap();
    // From inside day 3 to inside day 17.
    let inside = TimeRange::new(at(3 * 1440 + 95), at(17 * 1440 + 700)).unwrap();
    let mut out = vec![format!("stored {}", store.stored_readings().await.unwrap())];
    for device in ["sensor-a", "sensor-b", "plug-1"] {
        let d = DeviceId::parse(device).unwrap();
        out.push(format!(
            "latest {device}: {:?}",
            store.latest_reading(&d).await.unwrap()
        ));
        for range in [everything, inside] {
            for (order, limit) in [(Order::Asc, 1000), (Order::Desc, 777)] {
                let d = &d;
                let pages = pages_within(
                    |r| async move { store.device_readings(d, &r).await },
                    range,
                    order,
                    limit,
                )
                .await;
                out.push(format!("{device} {range:?} {order:?}: {pages:?}"));
            }
            for span in [Span::Day, Span::Hour] {
                let (rollups, units) =
                    storage::metering::metered(store.rollups(&d, span, &range)).await;
                out.push(format!("{device} {span:?} {range:?}: {units} {rollups:?}"));
                let (counters, units) =
                    storage::metering::metered(store.rollup_counters(&d, span, &range)).await;
                out.push(format!(
                    "{device} counters {span:?} {range:?}: {units} {counters:?}"
                ));
                for room in ["hall", "kitchen"] {
                    let room = RoomId::parse(room).unwrap();
                    let (tallies, units) = storage::metering::metered(store.rollup_tallies(
                        &d,
                        span,
                        &range,
                        Some(&room),
                    ))
                    .await;
                    out.push(format!(
                        "{device} {room} {span:?} {range:?}: {units} {tallies:?}"
                    ));
                }
            }
        }
    }
    let hall = &RoomId::parse("hall").unwrap();
    let pages = pages_within(
        |r| async move { store.room_readings(hall, &r).await },
        inside,
        Order::Asc,
        500,
    )
    .await;
    out.push(format!("hall: {pages:?}"));
    out
}

/// Box search over the sealed readings finds exactly the readings of the
/// range that lie inside the box, and some.
async fn box_search_finds_the_box(store: &SqliteStore) {
    let inside = TimeRange::new(at(3 * 1440 + 95), at(17 * 1440 + 700)).unwrap();
    let sensor_b = DeviceId::parse("sensor-b").unwrap();
    let all = store
        .device_readings(&sensor_b, &request(inside, Order::Asc, 100_000, None))
        .await
        .unwrap()
        .readings;
    // A box around the values of the range's middle reading.
    let middle = &all[all.len() / 2];
    let (t, h) = (
        middle.get(Quantity::Temperature).unwrap(),
        middle.get(Quantity::Humidity).unwrap(),
    );
    let inside_box = domain::model::ClimateBox {
        range: inside,
        temperature: (t - 1.0, t + 1.0),
        humidity: (h - 5.0, h + 5.0),
    };
    let found = store
        .sealed_in_box(
            storage::ZIndex::Device(&sensor_b),
            &inside_box,
            None,
            100_000,
        )
        .await
        .unwrap();
    let mut found: Vec<Reading> = found.items.into_iter().map(|(_, r)| r).collect();
    found.sort_by_key(|r| r.timestamp);
    let want: Vec<Reading> = all.into_iter().filter(|r| inside_box.contains(r)).collect();
    assert!(want.len() > 100, "{} readings in the box", want.len());
    assert_eq!(found, want);
}

fn differences(want: &[String], got: &[String]) -> Vec<String> {
    let mut out: Vec<String> = want
        .iter()
        .zip(got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| {
            format!(
                "want {}\n got {}",
                &w[..w.len().min(400)],
                &g[..g.len().min(400)]
            )
        })
        .collect();
    if want.len() != got.len() {
        out.push(format!("{} answers, {} expected", got.len(), want.len()));
    }
    out
}

#[tokio::test]
async fn a_slow_series_days_share_blocks_and_answer_as_rows() {
    let history = history();
    let rows = SqliteStore::in_memory().unwrap();
    written(&rows, &history, 500, NEVER);
    assert_eq!(table_rows(&rows, "blocks"), 0);
    let want = answers(&rows).await;
    // The rows' answers hold what they should, so that equal is not empty.
    assert!(want
        .iter()
        .any(|a| a.starts_with("sensor-b Day") && a.contains("Humidity")));

    // History written in batches into closed days: the days join their
    // week's block as they are written, and the sealer's merges of their
    // segments join the rest.
    let history_store = SqliteStore::in_memory().unwrap();
    written(&history_store, &history, 500, Timestamp::now().millis());
    sealer::seal_all(&history_store.writer, Timestamp::now().millis(), None).unwrap();
    // (The order batches seal their days in decides where the weeks cut.)
    in_blocks_of_a_week(&block_days(&history_store, "sensor-a"));
    in_blocks_of_a_week(&block_days(&history_store, "sensor-b"));
    assert_eq!(table_rows(&history_store, "day_segments"), 0);
    assert_eq!(
        table_rows(&history_store, "rollups"),
        0,
        "every day computed"
    );
    let got = answers(&history_store).await;
    assert_eq!(differences(&want, &got), Vec::<String>::new());
    box_search_finds_the_box(&history_store).await;

    // Rows sealed by the sealer, a day at a time, as a running server does.
    let sealed = SqliteStore::in_memory().unwrap();
    written(&sealed, &history, 500, NEVER);
    sealer::seal_all(&sealed.writer, Timestamp::now().millis(), None).unwrap();
    let weeks = vec![(0, 6), (7, 13), (14, 20)];
    assert_eq!(block_days(&sealed, "sensor-a"), weeks);
    assert_eq!(block_days(&sealed, "sensor-b"), weeks, "day 9 silent");
    assert_eq!(block_days(&sealed, "plug-1"), weeks, "watts alone");
    assert_eq!(table_rows(&sealed, "rollups"), 0);
    assert_eq!(
        differences(&want, &answers(&sealed).await),
        Vec::<String>::new()
    );

    // A late reading into the middle of a week, and one that replaces a
    // reading: both stores take them alike.
    let late = [
        climate("sensor-a", 10 * 1440 + 2, "hall", 30.0, 20.0),
        climate("sensor-b", 4 * 1440 + 5 * EVERY, "kitchen", 10.0, 90.0),
    ];
    written(&rows, &late, 10, NEVER);
    written(&sealed, &late, 10, Timestamp::now().millis());
    assert_eq!(block_days(&sealed, "sensor-a"), weeks);
    assert_eq!(block_days(&sealed, "sensor-b"), weeks);
    assert_eq!(table_rows(&sealed, "rollups"), 0);
    let want = answers(&rows).await;
    assert_eq!(
        differences(&want, &answers(&sealed).await),
        Vec::<String>::new()
    );

    // An energy counter in a week's day: that week goes back to a block a
    // day, its days' rollups stored, and the answers stay the rows'.
    let counted = Reading {
        device_id: DeviceId::parse("sensor-a").unwrap(),
        timestamp: at(8 * 1440 + 3),
        measurement: Measurement::new(None, vec![(Quantity::EnergyBought, 12.5)]).unwrap(),
    };
    written(&rows, std::slice::from_ref(&counted), 10, NEVER);
    written(
        &sealed,
        std::slice::from_ref(&counted),
        10,
        Timestamp::now().millis(),
    );
    assert_eq!(
        block_days(&sealed, "sensor-a"),
        [
            (0, 6),
            (7, 7),
            (8, 8),
            (9, 9),
            (10, 10),
            (11, 11),
            (12, 12),
            (13, 13),
            (14, 20)
        ]
    );
    assert_eq!(table_rows(&sealed, "rollups"), 7);
    let want = answers(&rows).await;
    assert_eq!(
        differences(&want, &answers(&sealed).await),
        Vec::<String>::new()
    );

    // A row left for a day of a week's block (a clock that went back would
    // store one) is passed over: the day is the block's.
    let stray = sealed
        .lock()
        .conn
        .execute(
            "INSERT INTO rollups (device, span, start, body, size)
             SELECT device, span, ?1, body, size FROM rollups ORDER BY start LIMIT 1",
            [at(2 * 1440).millis()],
        )
        .unwrap();
    assert_eq!(stray, 1);
    assert_eq!(
        differences(&want, &answers(&sealed).await),
        Vec::<String>::new()
    );
}

/// Retention through a week's block keeps the rest of the week readable,
/// and the cut days' rollups (rollups outlive their readings).
#[tokio::test]
async fn retention_cuts_a_week_block_and_keeps_its_rollups() {
    let history = history();
    let retention = domain::retention::Retention::days(1);
    let rows = SqliteStore::in_memory().unwrap().with_retention(retention);
    written(&rows, &history, 500, NEVER);
    let sealed = SqliteStore::in_memory().unwrap().with_retention(retention);
    written(&sealed, &history, 500, NEVER);
    sealer::seal_all(&sealed.writer, Timestamp::now().millis(), None).unwrap();
    assert_eq!(block_days(&sealed, "sensor-a"), [(0, 6), (7, 13), (14, 20)]);
    // Kept from 12:00 of day 10, in the second week.
    let now_s = (START + 10 * 86_400_000 + 12 * 3_600_000) / 1000 + 86_400;
    let gone_rows = rows.delete_expired(now_s).await.unwrap();
    let gone = sealed.delete_expired(now_s).await.unwrap();
    assert_eq!(gone, gone_rows);
    assert!(gone > 10 * 288, "{gone}");
    assert_eq!(
        block_days(&sealed, "sensor-a"),
        [(10, 10), (11, 11), (12, 12), (13, 13), (14, 20)]
    );
    assert_eq!(
        rows.stored_readings().await.unwrap(),
        sealed.stored_readings().await.unwrap()
    );
    // Every day's rollup, the first week's computed before the cut included.
    let everything = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    for device in ["sensor-a", "sensor-b"] {
        let d = DeviceId::parse(device).unwrap();
        let days = sealed.rollups(&d, Span::Day, &everything).await.unwrap();
        assert_eq!(
            days,
            rows.rollups(&d, Span::Day, &everything).await.unwrap()
        );
        assert_eq!(
            days.len() as i64,
            if device == "sensor-a" { DAYS } else { DAYS - 1 }
        );
    }
}

/// A file of merged weeks opens again and answers the same.
#[tokio::test]
async fn merged_weeks_survive_reopening_the_file() {
    let dir = temp_dir("merged-weeks");
    let path = dir.join("ingester.db");
    let history = history();
    let before = {
        let store = SqliteStore::open(&path).unwrap();
        written(&store, &history, 500, Timestamp::now().millis());
        sealer::seal_all(&store.writer, Timestamp::now().millis(), None).unwrap();
        in_blocks_of_a_week(&block_days(&store, "sensor-a"));
        answers(&store).await
    };
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        differences(&before, &answers(&store).await),
        Vec::<String>::new()
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version 12 file (every block a day, every day's rollup a row, no
/// `block_spans`) has its slow series' days joined into weeks when it is
/// opened, once, and answers as it did; the days written after join too.
#[tokio::test]
async fn a_version_12_file_has_its_days_joined_and_answers_as_it_did() {
    let dir = temp_dir("version-12");
    let path = dir.join("ingester.db");
    let history = history();
    let (old, new) = history.split_at(history.partition_point(|r| r.timestamp < at(14 * 1440)));
    let rows = SqliteStore::in_memory().unwrap();
    written(&rows, old, 500, NEVER);
    let want = answers(&rows).await;
    {
        // Written by this build, then brought to version 12's shape.
        let store = SqliteStore::open(&path).unwrap();
        written(&store, old, 500, NEVER);
        sealer::seal_all(&store.writer, Timestamp::now().millis(), None).unwrap();
        let w = store.lock();
        let spans: Vec<(i64, i64)> = w
            .conn
            .prepare("SELECT key >> 32, key & 0xffffffff FROM block_spans")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(spans.len() >= 4, "{spans:?}");
        for (device, first) in spans {
            let device_id = names::device(&w.conn, device).unwrap();
            day_merge::unpack(&w.conn, (device, &device_id), first).unwrap();
        }
        w.conn
            .execute_batch("DROP TABLE block_spans; PRAGMA user_version = 12;")
            .unwrap();
        drop(w);
        // sensor-b silent on day 9.
        assert_eq!(table_rows(&store, "blocks"), 3 * 14 - 1, "a block a day");
        assert_eq!(table_rows(&store, "rollups"), 3 * 14 - 1);
    }
    let store = SqliteStore::open(&path).unwrap();
    let weeks = vec![(0, 6), (7, 13)];
    assert_eq!(block_days(&store, "sensor-a"), weeks, "joined on opening");
    assert_eq!(block_days(&store, "sensor-b"), weeks);
    assert_eq!(table_rows(&store, "rollups"), 0);
    assert_eq!(
        differences(&want, &answers(&store).await),
        Vec::<String>::new()
    );
    // The third week, written now, joins in a week's block too.
    written(&rows, new, 500, NEVER);
    written(&store, new, 500, NEVER);
    sealer::seal_all(&store.writer, Timestamp::now().millis(), None).unwrap();
    assert_eq!(block_days(&store, "sensor-a"), [(0, 6), (7, 13), (14, 20)]);
    assert_eq!(
        differences(&answers(&rows).await, &answers(&store).await),
        Vec::<String>::new()
    );
    drop(store);
    // Opened again: nothing more to join.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(block_days(&store, "sensor-a"), [(0, 6), (7, 13), (14, 20)]);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
