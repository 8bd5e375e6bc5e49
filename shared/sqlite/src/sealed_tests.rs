//! Sealed days answer exactly as rows did: the same history written as rows
//! only, into blocks (the days long closed), and half and half, gives the
//! same pages, room pages, all-devices pages, latest readings, rollups and
//! box searches. Plus late writes into a sealed day, retention across a
//! block, and a full disk.

use super::*;
use domain::aggregate::rollup::spans;
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::Reading;
use domain::model::RoomId;
use domain::model::Timestamp;
use domain::model::{Measurement, Quantity, Span};
use proptest::prelude::*;
use storage::keys::zorder::ZKey;
use storage::Order;
use storage::Page;
use storage::ReadingStore;
use storage::RollupStore;
use storage::ZIndex;
use storage::ZRangeRequest;

/// 2026-09-01T00:00:00Z: long closed.
const START: i64 = 1_788_220_800_000;
const NEVER: i64 = i64::MIN;

fn at(minute: i64) -> Timestamp {
    Timestamp::from_millis(START + minute * 60_000).unwrap()
}

/// A reading of a generated history: device, minute, kind (0 a meter with
/// both counters, 1 and 2 a room sensor, 4 a meter with one, others more
/// quantities), value.
fn make(device: u8, minute: i64, kind: u8, x: f64) -> Reading {
    let device_id = DeviceId::parse(["meter-1", "sensor-1", "sensor-2"][device as usize]).unwrap();
    let measurement = match kind {
        0 => Measurement::power(1000.0 + minute as f64 * 0.01, 2.0, 100.0 + x),
        1 => Measurement::climate(RoomId::parse("bedroom").unwrap(), 15.0 + x * 10.0, 50.0),
        2 => Measurement::climate(RoomId::parse("hall").unwrap(), 15.0 + x, 40.0 + x),
        // A meter with one counter (Tasmota's `ENERGY.Total`: bought alone).
        4 => Measurement::new(
            None,
            vec![
                (Quantity::EnergyBought, 2000.0 + minute as f64 * 0.02),
                (Quantity::Power, 50.0 + x),
            ],
        ),
        // Other quantities, some of them not thousandths.
        _ => Measurement::new(
            Some(RoomId::parse("hall").unwrap()),
            vec![
                (Quantity::Co2, 400.0 + x * 1000.0),
                (Quantity::Temperature, 20.0 + x),
            ],
        ),
    };
    Reading {
        device_id,
        timestamp: at(minute),
        measurement: measurement.unwrap(),
    }
}

fn history() -> impl Strategy<Value = Vec<(u8, i64, u8, f64)>> {
    prop::collection::vec((0u8..3, 0i64..4 * 1440, 0u8..5, 0.0f64..1.0), 1..150)
}

fn request(order: Order, limit: usize, after: Option<storage::keys::Position>) -> RangeRequest {
    RangeRequest {
        range: domain::model::TimeRange::new(at(0), at(5 * 1440)).unwrap(),
        order,
        limit,
        after,
    }
}

/// Every page of a paged read of the history's five days, followed to its end.
async fn pages<F, Fut>(read: F, order: Order, limit: usize) -> Vec<Vec<Reading>>
where
    F: Fn(RangeRequest) -> Fut,
    Fut: std::future::Future<Output = Result<Page, StoreError>>,
{
    pages_within(read, request(order, limit, None).range, order, limit).await
}

/// Every page of a paged read of `range`, followed to its end.
pub(super) async fn pages_within<F, Fut>(
    read: F,
    range: domain::model::TimeRange,
    order: Order,
    limit: usize,
) -> Vec<Vec<Reading>>
where
    F: Fn(RangeRequest) -> Fut,
    Fut: std::future::Future<Output = Result<Page, StoreError>>,
{
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = read(RangeRequest {
            range,
            order,
            limit,
            after,
        })
        .await
        .unwrap();
        out.push(page.readings);
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
        assert!(out.len() < 10_000);
    }
}

/// What every read answers, for comparing stores.
async fn answers(store: &SqliteStore) -> Vec<String> {
    let mut out = Vec::new();
    let devices: Vec<DeviceId> = ["meter-1", "sensor-1", "sensor-2"]
        .iter()
        .map(|d| DeviceId::parse(d).unwrap())
        .collect();
    let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    for order in [Order::Asc, Order::Desc] {
        for limit in [1, 7, 1000] {
            for d in &devices {
                out.push(format!(
                    "{d} {order:?} {limit}: {:?}",
                    pages(
                        |r| async move { store.device_readings(d, &r).await },
                        order,
                        limit
                    )
                    .await
                ));
            }
            for room in ["bedroom", "hall"] {
                let room = RoomId::parse(room).unwrap();
                let room = &room;
                out.push(format!(
                    "{room} {order:?} {limit}: {:?}",
                    pages(
                        |r| async move { store.room_readings(room, &r).await },
                        order,
                        limit
                    )
                    .await
                ));
            }
            out.push(format!(
                "all {order:?} {limit}: {:?}",
                pages(
                    |r| async move { store.all_readings(&r).await },
                    order,
                    limit
                )
                .await
            ));
        }
    }
    for d in &devices {
        out.push(format!(
            "latest {d}: {:?}",
            store.latest_reading(d).await.unwrap()
        ));
        for span in [Span::Hour, Span::Day] {
            out.push(format!(
                "{d} {span:?}: {:?}",
                store.rollups(d, span, &everything).await.unwrap()
            ));
        }
        // Hours' tallies, whole and of each room, over everything and over
        // a range that starts and ends inside days, with what they meter:
        // from the hours computed, then from those kept (`hour_cache`).
        let inside = domain::model::TimeRange::new(at(90), at(3 * 1440 + 30)).unwrap();
        for range in [everything, inside] {
            for room in [None, Some("bedroom"), Some("hall")] {
                let room = room.map(|r| RoomId::parse(r).unwrap());
                let (tallies, units) = storage::metering::metered(store.rollup_tallies(
                    d,
                    Span::Hour,
                    &range,
                    room.as_ref(),
                ))
                .await;
                out.push(format!("{d} hours {room:?} {range:?}: {units} {tallies:?}"));
                let (hours, units) =
                    storage::metering::metered(store.rollups(d, Span::Hour, &range)).await;
                out.push(format!("{d} hour rollups {range:?}: {units} {hours:?}"));
            }
            // Counters read past the tallies (what energy folds) are the
            // whole rollups' and meter the same.
            for span in [Span::Hour, Span::Day] {
                let (counters, units) =
                    storage::metering::metered(store.rollup_counters(d, span, &range)).await;
                let (whole, whole_units) =
                    storage::metering::metered(store.rollups(d, span, &range)).await;
                let (counters, whole) = (counters.unwrap(), whole.unwrap());
                let from_whole: Vec<RollupCounters> =
                    whole.iter().map(RollupCounters::from).collect();
                assert_eq!(
                    (&counters, units),
                    (&from_whole, whole_units),
                    "{d} {span:?} {range:?}"
                );
                out.push(format!(
                    "{d} counters {span:?} {range:?}: {units} {counters:?}"
                ));
            }
        }
    }
    // Box search's two sources together: the Z-order index of the rows
    // (read whole) and the sealed readings inside a box, then the box.
    let whole_z = (ZKey::first_at(0), ZKey::last_at(u128::MAX >> 32));
    let room = RoomId::parse("hall").unwrap();
    for (index, name) in [
        (ZIndex::Device(&devices[1]), "sensor-1"),
        (ZIndex::Device(&devices[2]), "sensor-2"),
        (ZIndex::Room(&room), "hall"),
    ] {
        for (temperature, humidity) in [((15.0, 25.0), (0.0, 100.0)), ((16.0, 18.5), (40.0, 55.0))]
        {
            let inside = domain::model::ClimateBox {
                range: domain::model::TimeRange::new(at(100), at(3 * 1440)).unwrap(),
                temperature,
                humidity,
            };
            let request = ZRangeRequest {
                from: &whole_z.0,
                to: &whole_z.1,
                after: None,
                limit: 100_000,
            };
            let mut found: Vec<(ZKey, Reading)> = store
                .z_range(index, &request)
                .await
                .unwrap()
                .items
                .into_iter()
                .filter(|(_, r)| inside.contains(r))
                .collect();
            let sealed = store
                .sealed_in_box(index, &inside, None, 100_000)
                .await
                .unwrap();
            let sealed_keys: Vec<ZKey> = sealed.items.iter().map(|(k, _)| k.clone()).collect();
            assert_in_z_order(&sealed_keys);
            found.extend(sealed.items);
            found.sort_by(|a, b| a.0.cmp(&b.0));
            out.push(format!(
                "search {name} {temperature:?} {humidity:?}: {found:?}"
            ));
            // After a key, the next three sealed ones, exactly.
            if let Some((middle, _)) = found.get(found.len() / 2) {
                let after = store
                    .sealed_in_box(index, &inside, Some(middle), 3)
                    .await
                    .unwrap();
                let got: Vec<&ZKey> = after.items.iter().map(|(k, _)| k).collect();
                let want: Vec<&ZKey> = sealed_keys.iter().filter(|k| *k > middle).take(3).collect();
                assert_eq!(got, want);
            }
        }
    }
    out
}

fn assert_in_z_order(keys: &[ZKey]) {
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "sealed items in Z order"
    );
}

fn written(store: &SqliteStore, batches: &[Vec<Reading>], now_ms: i64) {
    for b in batches {
        let report = store.write_readings_at(b, now_ms);
        assert!(report.unwritten.is_empty());
    }
}

fn hot_rows(store: &SqliteStore) -> i64 {
    schema::families()
        .iter()
        .map(|f| table_rows(store, &f.table))
        .sum()
}

pub(super) fn table_rows(store: &SqliteStore, table: &str) -> i64 {
    store
        .lock()
        .conn
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

fn block_rows(store: &SqliteStore) -> i64 {
    table_rows(store, "blocks")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn rows_blocks_and_both_answer_alike(history in history(), batch in 1usize..40, split_day in 0i64..5) {
        let history: Vec<Reading> = history.into_iter().map(|(d, m, k, x)| make(d, m, k, x)).collect();
        let batches: Vec<Vec<Reading>> = history.chunks(batch).map(|c| c.to_vec()).collect();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            // Rows only: written when no day had closed.
            let rows = SqliteStore::in_memory().unwrap();
            written(&rows, &batches, NEVER);
            prop_assert_eq!(block_rows(&rows), 0);
            let want = answers(&rows).await;

            // Blocks only: written long after.
            let blocks = SqliteStore::in_memory().unwrap();
            written(&blocks, &batches, Timestamp::now().millis());
            prop_assert_eq!(hot_rows(&blocks), 0);
            prop_assert!(want == answers(&blocks).await, "blocks differ");
            // Again: the sealed days' hours are kept now.
            prop_assert!(blocks.hours.bytes() > 0 || history.is_empty());
            prop_assert!(want == answers(&blocks).await, "kept hours differ");

            // Both: days before `split_day` sealed afterwards, the rest rows;
            // then the history written again on top, as late and rewritten
            // readings into both.
            let both = SqliteStore::in_memory().unwrap();
            written(&both, &batches, NEVER);
            let now = START + split_day * 86_400_000 + blocks::GRACE_MS;
            let writer = both.writer.clone();
            sealer::seal_all(&writer, now, None).unwrap();
            prop_assert!(want == answers(&both).await, "half sealed differs");
            written(&both, &batches, now);
            prop_assert!(want == answers(&both).await, "rewritten differs");
            // Sealed again, over hours kept from the half-sealed days.
            sealer::seal_all(&writer, Timestamp::now().millis(), None).unwrap();
            prop_assert!(want == answers(&both).await, "sealed after the rewrite differs");
            prop_assert_eq!(
                rows.stored_readings().await.unwrap(),
                both.stored_readings().await.unwrap()
            );
            // The rollups kept equal those of the readings, computed afresh.
            for d in ["meter-1", "sensor-1", "sensor-2"] {
                let d = DeviceId::parse(d).unwrap();
                let (both, d) = (&both, &d);
                let all = pages(|r| async move { both.device_readings(d, &r).await }, Order::Asc, 100_000).await.concat();
                let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
                for span in [Span::Hour, Span::Day] {
                    prop_assert_eq!(both.rollups(d, span, &everything).await.unwrap(), spans(span, Default::default(), all.iter()));
                }
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn a_late_reading_reaches_its_sealed_day_and_replaces_whole() {
    let store = SqliteStore::in_memory().unwrap();
    let day: Vec<Reading> = (0..1440)
        .map(|m| make(1, m, 1, (m % 7) as f64 / 10.0))
        .collect();
    assert!(store.write_readings(&day).await.unwritten.is_empty());
    assert_eq!((hot_rows(&store), block_rows(&store)), (0, 1));
    // A rewrite of minute 5 with other quantities, and a new minute inside.
    let rewrite = make(1, 5, 3, 0.5);
    let mut late = make(1, 0, 2, 0.25);
    late.timestamp = Timestamp::from_millis(START + 90_000).unwrap();
    assert!(store
        .write_readings(&[rewrite.clone(), late.clone()])
        .await
        .unwritten
        .is_empty());
    assert_eq!((hot_rows(&store), block_rows(&store)), (0, 1));
    assert_eq!(store.stored_readings().await.unwrap(), 1441);
    let page = store
        .device_readings(&rewrite.device_id, &request(Order::Asc, 10, None))
        .await
        .unwrap();
    assert_eq!(page.readings[2], late);
    assert_eq!(
        page.readings[6], rewrite,
        "the last write of a key wins whole"
    );
    assert_eq!(page.readings[6].get(Quantity::Humidity), None);
}

/// The store's count reads each block's count alone; a damaged one is an
/// error that names its device and day, never a wrong count.
#[tokio::test]
async fn a_damaged_block_fails_the_count_naming_its_device() {
    let store = SqliteStore::in_memory().unwrap();
    let day: Vec<Reading> = (0..1440).map(|m| make(1, m, 1, 0.5)).collect();
    assert!(store.write_readings(&day).await.unwritten.is_empty());
    assert_eq!((hot_rows(&store), block_rows(&store)), (0, 1));
    assert_eq!(store.stored_readings().await.unwrap(), 1440);
    // An unknown version byte.
    store
        .lock()
        .conn
        .execute(
            "UPDATE blocks SET body = CAST(x'ee' || substr(body, 2) AS BLOB)",
            [],
        )
        .unwrap();
    let e = store.stored_readings().await.unwrap_err().to_string();
    assert!(
        e.contains(&format!("block of {}", day[0].device_id)) && e.contains("version"),
        "{e}"
    );
}

#[tokio::test]
async fn today_stays_in_rows_until_it_closes() {
    let store = SqliteStore::in_memory().unwrap();
    let now = START + 10 * 3_600_000;
    let today: Vec<Reading> = (0..600).map(|m| make(0, m, 0, 0.5)).collect();
    assert!(store.write_readings_at(&today, now).unwritten.is_empty());
    assert_eq!((hot_rows(&store), block_rows(&store)), (600, 0));
    let writer = store.writer.clone();
    assert_eq!(sealer::seal_all(&writer, now, None).unwrap(), 0);
    // The day ends; within the grace it stays open, then it is sealed.
    let midnight = START + 86_400_000;
    assert_eq!(
        sealer::seal_all(&writer, midnight + blocks::GRACE_MS - 1, None).unwrap(),
        0
    );
    assert_eq!(
        sealer::seal_all(&writer, midnight + blocks::GRACE_MS, None).unwrap(),
        1
    );
    assert_eq!((hot_rows(&store), block_rows(&store)), (0, 1));
    assert_eq!(store.stored_readings().await.unwrap(), 600);
}

fn segment_rows(store: &SqliteStore) -> i64 {
    table_rows(store, "day_segments")
}

/// Three devices' two days, in time order, in batches of `batch`.
fn in_order(batch: usize) -> Vec<Vec<Reading>> {
    let history: Vec<Reading> = (0..2 * 1440)
        .flat_map(|m| {
            [
                make(0, m, 0, 0.25),
                make(1, m, 1, 0.5),
                make(2, m, 3, 0.125),
            ]
        })
        .collect();
    history.chunks(batch).map(|c| c.to_vec()).collect()
}

/// History written in order into sealed days goes in as segments (each
/// batch encoded once), reads as rows do, and the sealer merges the
/// segments into their day's block; a late reading merges its day at once.
#[tokio::test]
async fn history_in_order_is_appended_as_segments_and_merged_by_the_sealer() {
    let batches = in_order(300);
    let rows = SqliteStore::in_memory().unwrap();
    written(&rows, &batches, NEVER);
    let want = answers(&rows).await;

    let store = SqliteStore::in_memory().unwrap();
    written(&store, &batches, Timestamp::now().millis());
    assert_eq!(hot_rows(&store), 0);
    assert_eq!(
        block_rows(&store),
        6,
        "each device-day's first batch wrote its block"
    );
    // 3 devices x 2 days x 1440 minutes in batches of 100 minutes: 29
    // batches, 2 of which open a day; the rest append to 3 devices' days.
    assert_eq!(segment_rows(&store), 3 * (29 - 2 + 1));
    assert!(want == answers(&store).await, "segments read as rows");
    assert_eq!(store.stored_readings().await.unwrap(), 3 * 2 * 1440);

    // A late reading into a day with segments merges that day.
    let mut late = make(1, 0, 1, 0.75);
    late.timestamp = Timestamp::from_millis(START + 30_000).unwrap();
    assert!(store
        .write_readings(&[late.clone()])
        .await
        .unwritten
        .is_empty());
    assert_eq!(
        segment_rows(&store),
        3 * 28 - 14,
        "sensor-1's first day lost its 14 segments"
    );
    let page = store
        .device_readings(&late.device_id, &request(Order::Asc, 3, None))
        .await
        .unwrap();
    assert_eq!(page.readings[1], late);

    let writer = store.writer.clone();
    let merged = sealer::seal_all(&writer, Timestamp::now().millis(), None).unwrap();
    assert_eq!(merged, 5, "every day that still had segments");
    assert_eq!((segment_rows(&store), block_rows(&store)), (0, 6));
    assert_eq!(store.stored_readings().await.unwrap(), 3 * 2 * 1440 + 1);
    // A new day: its first batch writes its block, the next is a segment,
    // and the newest reading is read from it.
    let next: Vec<Reading> = (2 * 1440..2 * 1440 + 10)
        .map(|m| make(2, m, 3, 0.5))
        .collect();
    for half in next.chunks(5) {
        assert!(store.write_readings(half).await.unwritten.is_empty());
    }
    assert_eq!((segment_rows(&store), block_rows(&store)), (1, 7));
    let newest = store
        .device_readings(&next[0].device_id, &request(Order::Desc, 1, None))
        .await
        .unwrap();
    assert_eq!(newest.readings, [next[9].clone()]);
}

/// A new file gives back the pages that merged segments and sealed rows
/// free: after a sealer pass it has no free page, and it is no larger than
/// the same history written straight into blocks.
#[tokio::test]
async fn a_new_file_gives_back_what_merging_segments_frees() {
    let dir = std::env::temp_dir().join(format!("segments-vacuum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let size = |name: &str, batch: usize| {
        let path = dir.join(name);
        let store = SqliteStore::open(&path).unwrap();
        written(&store, &in_order(batch), Timestamp::now().millis());
        let writer = store.writer.clone();
        sealer::seal_all(&writer, Timestamp::now().millis(), None).unwrap();
        sealer::release_free_pages(&writer).unwrap();
        let w = writer.lock().unwrap();
        let pragma = |p: &str| -> i64 { w.conn.query_row(p, [], |r| r.get(0)).unwrap() };
        let (vacuum, free, pages) = (
            pragma("PRAGMA auto_vacuum"),
            pragma("PRAGMA freelist_count"),
            pragma("PRAGMA page_count"),
        );
        assert_eq!((vacuum, free), (2, 0), "{name}: incremental, nothing free");
        pages
    };
    // In order in small batches (segments, merged), and in one batch a day
    // (each day's block written whole, nothing to merge).
    let segmented = size("segmented.db", 300);
    let whole = size("whole.db", 3 * 1440);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        segmented <= whole + 1,
        "{segmented} pages after merging segments, {whole} written whole"
    );
}

/// Retention cuts through a day of segments as through a block.
#[tokio::test]
async fn retention_deletes_inside_a_day_of_segments() {
    let store = SqliteStore::in_memory()
        .unwrap()
        .with_retention(Retention::days(1));
    written(&store, &in_order(300), Timestamp::now().millis());
    assert!(segment_rows(&store) > 0);
    // Kept after 12:00 of the second day (the reading at the cut expires).
    let now_s = (START + 86_400_000 + 12 * 3_600_000) / 1000 + 86_400;
    let gone = store.delete_expired(now_s).await.unwrap();
    assert_eq!(gone, 3 * (1440 + 721));
    assert_eq!(store.stored_readings().await.unwrap(), 3 * 719);
    // (Reads hide all of it: the retention counts from the real clock.)
    let d = DeviceId::parse("sensor-2").unwrap();
    let w = store.lock();
    let id = names::find(&w.conn, names::DEVICE, d.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(
        blocks::time_span(&w.conn, id, &d).unwrap(),
        Some((at(1440 + 721).millis(), at(2 * 1440 - 1).millis()))
    );
}

#[tokio::test]
async fn retention_deletes_inside_a_block() {
    let store = SqliteStore::in_memory()
        .unwrap()
        .with_retention(Retention::days(1));
    let days: Vec<Reading> = (0..3 * 1440)
        .step_by(10)
        .map(|m| make(1, m, 1, 0.5))
        .collect();
    assert!(store.write_readings(&days).await.unwritten.is_empty());
    assert_eq!(
        (block_rows(&store), table_rows(&store, "block_spans")),
        (1, 1),
        "a reading in ten minutes: the three days in one block"
    );
    let d = DeviceId::parse("sensor-1").unwrap();
    let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let day_rollups = store.rollups(&d, Span::Day, &everything).await.unwrap();
    assert_eq!(day_rollups.len(), 3);
    assert_eq!(table_rows(&store, "rollups"), 0, "computed from the block");
    // Kept from 12:00 of the second day.
    let now_s = (START + 86_400_000 + 12 * 3_600_000) / 1000 + 86_400;
    let gone = store.delete_expired(now_s).await.unwrap();
    assert_eq!(gone, 144 + 73, "the reading at exactly the cut expires");
    assert_eq!(
        (block_rows(&store), table_rows(&store, "block_spans")),
        (2, 0),
        "back to a block a day: the first day gone, the second cut"
    );
    assert_eq!(store.stored_readings().await.unwrap(), (432 - 217) as u64);
    // The days' rollups outlive their readings, as they were.
    assert_eq!(
        store.rollups(&d, Span::Day, &everything).await.unwrap(),
        day_rollups
    );
    assert_eq!(table_rows(&store, "rollups"), 3);
}

/// A write that does not fit on the disk is refused whole: every reading
/// reported unwritten, nothing stored in part; once there is room, writes go on.
#[tokio::test]
async fn a_full_disk_refuses_the_whole_write_and_keeps_what_was_stored() {
    let dir = std::env::temp_dir().join(format!("full-disk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let first: Vec<Reading> = (0..1440).map(|m| make(1, m, 1, 0.1)).collect();
    assert!(store.write_readings(&first).await.unwritten.is_empty());
    // The disk is full: no page more (SQLITE_FULL, as a full file system gives).
    store.cap_file_for_tests(true).unwrap();
    let more: Vec<Reading> = (0..3 * 1440)
        .map(|m| make(m as u8 % 3, 1440 + m, (m % 3) as u8, (m % 10) as f64 / 10.0))
        .collect();
    let report = store.write_readings(&more).await;
    assert_eq!(report.unwritten, (0..more.len()).collect::<Vec<_>>());
    assert_eq!(store.stored_readings().await.unwrap(), 1440);
    let page = store
        .device_readings(&first[0].device_id, &request(Order::Asc, 2000, None))
        .await
        .unwrap();
    assert_eq!(page.readings, first);
    store.cap_file_for_tests(false).unwrap();
    assert!(store.write_readings(&more).await.unwritten.is_empty());
    assert_eq!(
        store.stored_readings().await.unwrap(),
        1440 + more.len() as u64
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A day of a noisy sensor: its hundredths move at random, minute by minute.
fn noisy_day(day: i64, seed: u64) -> Vec<Reading> {
    let mut x = seed;
    (day * 1440..(day + 1) * 1440)
        .map(|m| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            make(1, m, 2, (x % 1000) as f64 / 100.0)
        })
        .collect()
}

/// (head, tail) lengths of every block, by key.
fn cut_lengths(store: &SqliteStore) -> Vec<(usize, Option<usize>)> {
    let w = store.lock();
    let mut stmt = w
        .conn
        .prepare("SELECT length(b.body), length(t.body) FROM blocks b LEFT JOIN block_tails t ON t.key = b.key ORDER BY b.key")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)? as usize,
                r.get::<_, Option<i64>>(1)?.map(|t| t as usize),
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

/// A block longer than a sixth of a page is kept as a head that fills a
/// page with its neighbours and a tail; it reads back whole, as a version 9
/// file's whole block (no tail) does; a day written again is cut again, one
/// that became short loses its tail, and retention takes tails with heads.
#[tokio::test]
async fn a_long_block_is_cut_to_fill_pages_and_reads_whole() {
    let store = SqliteStore::in_memory().unwrap();
    let days: Vec<Reading> = [noisy_day(0, 7), noisy_day(1, 11)].concat();
    assert!(store.write_readings(&days).await.unwritten.is_empty());
    let cut = cut_lengths(&store);
    assert_eq!(cut.len(), 2);
    for (head, tail) in &cut {
        let tail = tail.expect("a noisy day's block is long enough to be cut");
        assert_eq!(*head, block_tail::head_len(head + tail, 4096), "{cut:?}");
        assert!([2030, 1348, 1008, 803].contains(head), "{cut:?}");
    }
    let device = days[0].device_id.clone();
    let all = |store: &SqliteStore| {
        let store = store.clone();
        let device = device.clone();
        async move {
            store
                .device_readings(&device, &request(Order::Asc, 5000, None))
                .await
                .unwrap()
                .readings
        }
    };
    assert_eq!(all(&store).await, days);
    assert_eq!(store.stored_readings().await.unwrap(), 2880);
    let newest = store
        .device_readings(&device, &request(Order::Desc, 1, None))
        .await
        .unwrap();
    assert_eq!(newest.readings, vec![days[2879].clone()]);

    // As a version 9 file kept them: whole, with no tails.
    store
        .lock()
        .conn
        .execute_batch(
            "UPDATE blocks SET body = CAST(body || (SELECT t.body FROM block_tails t
                 WHERE t.key = blocks.key) AS BLOB);
             DELETE FROM block_tails;",
        )
        .unwrap();
    assert_eq!(table_rows(&store, "block_tails"), 0);
    assert_eq!(all(&store).await, days);
    assert_eq!(store.stored_readings().await.unwrap(), 2880);

    // A late reading into the first day: written again, and cut again.
    let late = make(1, 0, 2, 5.0);
    assert!(store
        .write_readings(std::slice::from_ref(&late))
        .await
        .unwritten
        .is_empty());
    let mut want = days.clone();
    want[0] = late;
    assert_eq!(all(&store).await, want);
    assert_eq!(table_rows(&store, "block_tails"), 1);

    // The second day written again with a short, quiet block: no tail.
    let quiet: Vec<Reading> = (1440..2880).map(|m| make(1, m, 2, 1.0)).collect();
    assert!(store.write_readings(&quiet).await.unwritten.is_empty());
    let cut = cut_lengths(&store);
    assert!(cut[0].1.is_some() && cut[1].1.is_none(), "{cut:?}");
    let want: Vec<Reading> = [&want[..1440], &quiet[..]].concat();
    assert_eq!(all(&store).await, want);

    // Retention to 12:00 of the second day takes the first day's head and
    // tail (the reading at the cut expires too).
    let store = store.with_retention(Retention::days(1));
    let now_s = (START + 86_400_000 + 12 * 3_600_000) / 1000 + 86_400;
    assert_eq!(store.delete_expired(now_s).await.unwrap(), 1440 + 721);
    assert_eq!(
        (block_rows(&store), table_rows(&store, "block_tails")),
        (1, 0)
    );
}

/// A version 9 file (every block whole, in one row, the file compact) is
/// cut when it is opened: its long blocks become head and tail, once (the
/// cut reads `CUT_BATCH` rows a query: two under test, so thirteen
/// blocks take seven), read as before, and the file is smaller.
#[tokio::test]
async fn a_version_9_file_s_long_blocks_are_cut_when_opened() {
    let dir = super::tests::temp_dir("v9-blocks");
    let path = dir.join("ingester.db");
    // Twelve noisy days (enough that the cut saves more than the new
    // table's first page), then a quiet day, short enough to stay whole.
    const NOISY: i64 = 12;
    let days: Vec<Reading> = (0..NOISY)
        .flat_map(|d| noisy_day(d, 3 + 2 * d as u64))
        .collect();
    let quiet: Vec<Reading> = (NOISY * 1440..(NOISY + 1) * 1440)
        .map(|m| make(1, m, 2, 1.0))
        .collect();
    {
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.write_readings(&days).await.unwritten.is_empty());
        assert!(store.write_readings(&quiet).await.unwritten.is_empty());
    }
    // As version 9 wrote it, in its 4 KB pages.
    {
        let conn = Connection::open(&path).unwrap();
        register_functions(&conn).unwrap();
        conn.execute_batch(
            "UPDATE blocks SET body = CAST(body || (SELECT t.body FROM block_tails t
                 WHERE t.key = blocks.key) AS BLOB)
                 WHERE key IN (SELECT key FROM block_tails);
             DROP TABLE block_tails;
             PRAGMA user_version = 9;
             PRAGMA journal_mode = DELETE;
             PRAGMA page_size = 4096;
             VACUUM;",
        )
        .unwrap();
    }
    let whole = std::fs::metadata(&path).unwrap().len();
    let store = SqliteStore::open(&path).unwrap();
    // Written anew: smaller than with whole blocks.
    let now = std::fs::metadata(&path).unwrap().len();
    assert!(now < whole, "{now} bytes, {whole} before");
    let cut = cut_lengths(&store);
    assert_eq!(cut.len(), NOISY as usize + 1);
    assert!(cut[NOISY as usize].1.is_none(), "{cut:?}");
    for (head, tail) in &cut[..NOISY as usize] {
        let tail = tail.expect("a noisy day is cut");
        assert_eq!(
            *head,
            block_tail::head_len(head + tail, blocks::page_size(&store.lock().conn).unwrap())
        );
    }
    assert_eq!(user_version(&store), schema::VERSION);
    let everything = RangeRequest {
        range: domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
        order: Order::Asc,
        limit: 20_000,
        after: None,
    };
    let page = store
        .device_readings(&days[0].device_id, &everything)
        .await
        .unwrap();
    assert_eq!(page.readings, [&days[..], &quiet[..]].concat());
    assert_eq!(
        store.stored_readings().await.unwrap(),
        (NOISY as u64 + 1) * 1440
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version 10 file's blocks are of codec version 4 (a meter's counter in
/// deltas): a build of this version opens it and reads them as they were,
/// and a day written again is of this build's codec version.
#[tokio::test]
async fn a_version_10_file_s_blocks_of_codec_version_4_still_read() {
    use domain::fixtures::VERSION_4_METER_BLOCK;
    an_older_file_still_reads(10, VERSION_4_METER_BLOCK, None).await;
}

/// A version 11 file's blocks are of codec version 5 (each column's sum in
/// the header) and its rollups' bodies of version 3 (each number alone):
/// both read as they were, and a day written again is written anew.
#[tokio::test]
async fn a_version_11_file_s_blocks_and_rollups_still_read() {
    use domain::fixtures::VERSION_3_METER;
    use domain::fixtures::VERSION_5_METER_BLOCK;
    an_older_file_still_reads(11, VERSION_5_METER_BLOCK, Some(VERSION_3_METER)).await;
}

/// `meter_readings(12)` stored, then its block's body replaced by
/// `block` and its day rollup's by `rollup` (hex), as a file of schema
/// `version` held them; the file opened by this build.
async fn an_older_file_still_reads(version: i64, block: &str, rollup: Option<&str>) {
    use domain::fixtures::{meter_readings, unhex};
    use domain::model::Span;
    use storage::format::rollup_body;
    let dir = super::tests::temp_dir(&format!("v{version}-blocks"));
    let path = dir.join("ingester.db");
    let day = meter_readings(12);
    let device = day[0].device_id.clone();
    let start = {
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.write_readings(&day).await.unwritten.is_empty());
        assert_eq!(block_rows(&store), 1);
        let start: i64 = store
            .lock()
            .conn
            .query_row("SELECT start FROM rollups", [], |r| r.get(0))
            .unwrap();
        start
    };
    // As that version wrote it.
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute("UPDATE blocks SET body = ?1", [unhex(block)])
            .unwrap();
        if let Some(rollup) = rollup {
            conn.execute("UPDATE rollups SET body = ?1", [unhex(rollup)])
                .unwrap();
        }
        conn.execute_batch(&format!("PRAGMA user_version = {version};"))
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&store), schema::VERSION);
    let body = |store: &SqliteStore, table: &str| -> Vec<u8> {
        store
            .lock()
            .conn
            .query_row(&format!("SELECT body FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    let everything = || RangeRequest {
        range: domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
        order: Order::Asc,
        limit: 5000,
        after: None,
    };
    let all = |store: &SqliteStore| {
        let (store, device) = (store.clone(), device.clone());
        async move {
            store
                .device_readings(&device, &everything())
                .await
                .unwrap()
                .readings
        }
    };
    let day_rollups = |store: &SqliteStore| {
        let (store, device) = (store.clone(), device.clone());
        async move {
            let range = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
            store.rollups(&device, Span::Day, &range).await.unwrap()
        }
    };
    assert_eq!(body(&store, "blocks")[0], unhex(block)[0]);
    assert_eq!(all(&store).await, day);
    assert_eq!(store.stored_readings().await.unwrap(), 12);
    // The old body is read as what it says (here another day's figures,
    // so that nothing but the body can have answered).
    let counted = match rollup {
        Some(rollup) => {
            let at = Timestamp::from_millis(start).unwrap();
            let said = rollup_body::decode(&unhex(rollup), start)
                .unwrap()
                .decode(Span::Day, at)
                .unwrap();
            assert_eq!(day_rollups(&store).await, vec![said.clone()]);
            said.all.count
        }
        None => 12,
    };
    // The day written again (a late reading) is encoded anew.
    let more = meter_readings(13);
    assert!(store.write_readings(&more[12..]).await.unwritten.is_empty());
    assert_eq!(body(&store, "blocks")[0], domain::block::VERSION);
    assert_eq!(body(&store, "rollups")[0], rollup_body::VERSION);
    assert_eq!(all(&store).await, more);
    // A late reading is added to the day's rollup as read.
    assert_eq!(day_rollups(&store).await[0].all.count, counted + 1);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

fn user_version(store: &SqliteStore) -> i64 {
    store
        .lock()
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

/// A block's count is read from its head alone; a head too short to hold
/// it (here its first byte) is counted with its tail.
#[tokio::test]
async fn readings_are_counted_from_heads_and_from_tails_where_a_head_is_short() {
    use domain::fixtures::meter_readings;
    let store = SqliteStore::in_memory().unwrap();
    assert!(store
        .write_readings(&meter_readings(12))
        .await
        .unwritten
        .is_empty());
    assert_eq!(store.stored_readings().await.unwrap(), 12);
    store
        .lock()
        .conn
        .execute_batch(
            "INSERT INTO block_tails (key, body) SELECT key, substr(body, 2) FROM blocks;
             UPDATE blocks SET body = substr(body, 1, 1);",
        )
        .unwrap();
    assert_eq!(table_rows(&store, "block_tails"), 1);
    assert_eq!(store.stored_readings().await.unwrap(), 12);
    // A damaged block is an error, not a count.
    store
        .lock()
        .conn
        .execute_batch("UPDATE block_tails SET body = x'ff';")
        .unwrap();
    assert!(store.stored_readings().await.is_err());
}

/// A late reading into a sealed day whose hours are kept: the day's bytes
/// changed, so its hours are computed again, and answer as a store that
/// never kept them does.
#[tokio::test]
async fn a_late_reading_into_a_sealed_day_changes_its_kept_hours() {
    let now = Timestamp::now().millis();
    let day: Vec<Reading> = (0..1440).step_by(10).map(|m| make(1, m, 1, 0.5)).collect();
    let late = vec![make(1, 125, 1, 0.99)];
    let store = SqliteStore::in_memory().unwrap();
    written(&store, std::slice::from_ref(&day), now);
    let sensor = DeviceId::parse("sensor-1").unwrap();
    let range = domain::model::TimeRange::new(at(0), at(1440)).unwrap();
    let tallies = |store: SqliteStore| {
        let sensor = sensor.clone();
        async move {
            store
                .rollup_tallies(&sensor, Span::Hour, &range, None)
                .await
                .unwrap()
        }
    };
    let before = tallies(store.clone()).await;
    assert_eq!(before.len(), 24);
    assert!(store.hours.bytes() > 0, "the day's hours are kept");
    assert_eq!(tallies(store.clone()).await, before, "from the kept hours");
    written(&store, std::slice::from_ref(&late), now);
    let after = tallies(store.clone()).await;
    let fresh = SqliteStore::in_memory().unwrap();
    written(&fresh, &[day, late], now);
    assert_eq!(after, tallies(fresh).await);
    assert_ne!(after, before, "the late reading is in its hour");
}

/// The days of a block of several days (a slow sensor's) have no stored
/// rollup: computed from the block at the first read, then kept, so a year
/// of daily stats does not decode a year of readings at every read. A late
/// reading into the block changes its bytes: its days are computed again,
/// and answer as a store that never kept them does.
#[tokio::test]
async fn the_days_of_a_block_of_several_days_are_kept_until_it_changes() {
    let now = Timestamp::now().millis();
    let days: Vec<Reading> = (0..3 * 1440)
        .step_by(10)
        .map(|m| make(1, m, 1, (m % 7) as f64 / 10.0))
        .collect();
    let late = vec![make(1, 1440 + 125, 1, 0.99)];
    let store = SqliteStore::in_memory().unwrap();
    written(&store, std::slice::from_ref(&days), now);
    assert_eq!(
        (block_rows(&store), table_rows(&store, "block_spans")),
        (1, 1),
        "the three days in one block"
    );
    let sensor = DeviceId::parse("sensor-1").unwrap();
    let range = domain::model::TimeRange::new(at(0), at(3 * 1440)).unwrap();
    let read = |store: SqliteStore| {
        let sensor = sensor.clone();
        async move {
            (
                store
                    .rollup_tallies(&sensor, Span::Day, &range, None)
                    .await
                    .unwrap(),
                store.rollups(&sensor, Span::Day, &range).await.unwrap(),
            )
        }
    };
    assert_eq!(store.hours.bytes(), 0);
    let before = read(store.clone()).await;
    assert_eq!((before.0.len(), before.1.len()), (3, 3));
    assert!(store.hours.bytes() > 0, "the block's days are kept");
    assert_eq!(read(store.clone()).await, before, "from the kept days");
    written(&store, std::slice::from_ref(&late), now);
    let after = read(store.clone()).await;
    let fresh = SqliteStore::in_memory().unwrap();
    written(&fresh, &[days, late], now);
    assert_eq!(after, read(fresh).await);
    assert_ne!(after, before, "the late reading is in its day");
}

/// What the hour cache keeps of a sealed day of a room sensor and of a
/// meter, each a reading a minute: the sizes docs/rollups.md gives its
/// default bound by (`hour_cache::DEFAULT_CAPACITY`).
#[tokio::test]
async fn a_kept_day_of_a_sensor_and_of_a_meter_takes_what_the_docs_say() {
    let now = Timestamp::now().millis();
    let range = domain::model::TimeRange::new(at(0), at(1440)).unwrap();
    let mut kept = Vec::new();
    for (device, kind) in [(1u8, 1u8), (0, 0)] {
        let day: Vec<Reading> = (0..1440)
            .map(|m| make(device, m, kind, (m % 17) as f64 / 17.0))
            .collect();
        let store = SqliteStore::in_memory().unwrap();
        written(&store, std::slice::from_ref(&day), now);
        let hours = store
            .rollup_tallies(&day[0].device_id, Span::Hour, &range, None)
            .await
            .unwrap();
        assert_eq!(hours.len(), 24);
        kept.push(store.hours.bytes());
    }
    let (sensor, meter) = (kept[0], kept[1]);
    let said = format!("a sensor's day: {sensor} bytes, a meter's {meter}");
    assert!((5_000..6_500).contains(&sensor), "{said}");
    assert!((16_500..21_500).contains(&meter), "{said}");
    // Five years of a household (three room sensors and a meter) fit.
    let year = 366 * (3 * sensor + meter);
    assert!(5 * year <= hour_cache::DEFAULT_CAPACITY, "{said}");
}
