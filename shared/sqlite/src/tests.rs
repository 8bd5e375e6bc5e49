use super::*;
use domain::model::Reading;
use domain::model::RoomId;
use domain::model::{Measurement, Name, Quantity, Timestamp};
use std::collections::BTreeSet;
use storage::Order;
use storage::ReadingStore;
use storage::RegistryStore;
use storage::RollupStore;

fn at(minute: i64) -> Timestamp {
    Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap()
}

fn reading(device: &str, room: Option<&str>, minute: i64, value: f64) -> Reading {
    let measurement = match room {
        Some(r) => Measurement::climate(RoomId::parse(r).unwrap(), value, 50.0),
        None => Measurement::power(value, 0.0, 100.0),
    };
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: at(minute),
        measurement: measurement.unwrap(),
    }
}

fn all(range_minutes: i64) -> RangeRequest {
    RangeRequest {
        range: domain::model::TimeRange::new(at(0), at(range_minutes)).unwrap(),
        order: Order::Asc,
        limit: 1000,
        after: None,
    }
}

pub(super) fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_new_file_s_schema_keeps_no_comments_and_fits_4_kb() {
    let dir = temp_dir("schema-text");
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let texts: Vec<String> = {
        let guard = store.lock();
        let mut statement = guard
            .conn
            .prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL")
            .unwrap();
        let rows = statement.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(texts.len() > 10, "{texts:?}");
    for text in &texts {
        assert!(!text.contains("--") && !text.contains("  "), "{text}");
    }
    // Every table's row of `sqlite_schema` (type, names, root page and
    // text) in 4 KB (two 2 KB pages), with room to spare.
    let total: usize = texts.iter().map(|t| t.len() + 40).sum();
    assert!(total < 3500, "{total} bytes of schema");
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn readings_come_back_whole_across_families_and_the_last_write_wins_whole() {
    let store = SqliteStore::in_memory().unwrap();
    let aranet = Reading {
        device_id: DeviceId::parse("aranet-1").unwrap(),
        timestamp: at(1),
        measurement: Measurement::new(
            Some(RoomId::parse("office").unwrap()),
            vec![
                (Quantity::Temperature, 21.0),
                (Quantity::Humidity, 40.1),
                (Quantity::Co2, 612.0),
                (Quantity::Battery, 0.1 + 0.2),
            ],
        )
        .unwrap(),
    };
    let meter = Reading {
        device_id: DeviceId::parse("meter-1").unwrap(),
        timestamp: at(1),
        measurement: Measurement::power(5210.125, 1e-7, -350.5).unwrap(),
    };
    let later = Reading {
        timestamp: at(2),
        ..aranet.clone()
    };
    let report = store
        .write_readings(&[aranet.clone(), meter.clone(), later.clone()])
        .await;
    assert_eq!((report.items_written, report.unwritten.len()), (3, 0));
    let page = store
        .device_readings(&aranet.device_id, &all(10))
        .await
        .unwrap();
    assert_eq!(page.readings, vec![aranet.clone(), later.clone()]);
    assert_eq!(
        store
            .device_readings(&meter.device_id, &all(10))
            .await
            .unwrap()
            .readings,
        vec![meter.clone()]
    );
    assert_eq!(store.stored_readings().await.unwrap(), 3);
    // A later write of the key replaces the whole reading: its battery and
    // CO2 (other family tables) go too.
    let replaced = Reading {
        measurement: Measurement::climate(RoomId::parse("office").unwrap(), 22.0, 41.0).unwrap(),
        ..aranet.clone()
    };
    store.write_readings(std::slice::from_ref(&replaced)).await;
    let page = store
        .device_readings(&aranet.device_id, &all(10))
        .await
        .unwrap();
    assert_eq!(page.readings, vec![replaced, later.clone()]);
    // And in one batch, the last of a key wins.
    let first = reading("meter-1", None, 5, 1.0);
    let second = Reading {
        measurement: Measurement::new(None, vec![(Quantity::Battery, 50.0)]).unwrap(),
        ..first.clone()
    };
    let report = store.write_readings(&[first, second.clone()]).await;
    assert_eq!((report.items_written, report.duplicates), (1, 1));
    assert_eq!(
        store.latest_reading(&second.device_id).await.unwrap(),
        Some(second)
    );
}

/// Readings of today are rows, one in each family a reading has quantities
/// of: each is counted once (a backup's check counts them so).
#[tokio::test]
async fn today_s_rows_count_each_reading_once_across_families() {
    let store = SqliteStore::in_memory().unwrap();
    let now = Timestamp::now().millis() - 60_000;
    let climate_and_battery = |device: &str, t: i64| Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(t).unwrap(),
        measurement: Measurement::new(
            None,
            vec![(Quantity::Temperature, 21.0), (Quantity::Battery, 90.0)],
        )
        .unwrap(),
    };
    let power = |device: &str, t: i64| Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(t).unwrap(),
        measurement: Measurement::power(5210.125, 0.0, 350.5).unwrap(),
    };
    let battery = |device: &str, t: i64| Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(t).unwrap(),
        measurement: Measurement::new(None, vec![(Quantity::Battery, 50.0)]).unwrap(),
    };
    // Two devices whose keys interleave across the families.
    let mut readings = Vec::new();
    for i in 0..5 {
        readings.push(climate_and_battery("aranet-1", now + i * 2_000));
        readings.push(battery("aranet-1", now + i * 2_000 + 1_000));
        readings.push(power("meter-1", now + i * 2_000));
        readings.push(battery("meter-1", now + i * 2_000 + 500));
    }
    let report = store.write_readings(&readings).await;
    assert_eq!((report.items_written, report.unwritten.len()), (20, 0));
    assert_eq!(store.stored_readings().await.unwrap(), 20);
}

#[tokio::test]
async fn writes_keep_the_registry_in_the_same_transaction() {
    let store = SqliteStore::in_memory().unwrap();
    let (a, b) = (reading("m-1", None, 2, 10.0), reading("m-1", None, 1, 9.0));
    let s = reading("s-1", Some("hall"), 1, 20.0);
    assert!(store
        .write_readings(&[a.clone(), b.clone(), s.clone()])
        .await
        .unwritten
        .is_empty());
    let registry = store.load_registry().await.unwrap();
    let meter = &registry.devices[&a.device_id];
    assert_eq!(
        (meter.first_seen, meter.last_seen),
        (Some(b.timestamp), Some(a.timestamp))
    );
    assert_eq!(meter.latest.as_ref(), Some(&a));
    let hall = &registry.rooms[&RoomId::parse("hall").unwrap()];
    assert_eq!(hall.devices, BTreeSet::from([s.device_id.clone()]));
    assert_eq!(registry.devices[&s.device_id].room, s.room().cloned());
}

/// A room's readings without a room index: the devices that have been in
/// the room, keeping the rows written there, so a device that moves counts
/// where it was at the time; and they page by (time, device).
#[tokio::test]
async fn a_room_s_readings_follow_a_moving_device_and_page() {
    let store = SqliteStore::in_memory().unwrap();
    let readings = vec![
        reading("s-1", Some("kitchen"), 1, 20.0),
        reading("s-2", Some("kitchen"), 1, 21.0),
        reading("s-1", Some("hall"), 2, 19.0),
        reading("s-1", Some("kitchen"), 3, 20.5),
        reading("s-2", Some("office"), 4, 22.0),
    ];
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let kitchen = RoomId::parse("kitchen").unwrap();
    let got = store.room_readings(&kitchen, &all(10)).await.unwrap();
    assert_eq!(
        got.readings,
        vec![
            readings[0].clone(),
            readings[1].clone(),
            readings[3].clone()
        ]
    );
    let mut request = RangeRequest {
        limit: 2,
        ..all(10)
    };
    let first = store.room_readings(&kitchen, &request).await.unwrap();
    assert_eq!(first.readings, got.readings[..2].to_vec());
    request.after = first.next;
    let second = store.room_readings(&kitchen, &request).await.unwrap();
    assert_eq!(second.readings, got.readings[2..].to_vec());
    assert!(second.next.is_none());
    let attic = RoomId::parse("attic").unwrap();
    assert!(store
        .room_readings(&attic, &all(10))
        .await
        .unwrap()
        .readings
        .is_empty());
}

/// Box search reads the expression index, in its order: no sort, no scan.
#[test]
fn the_z_order_read_uses_its_index() {
    let store = SqliteStore::in_memory().unwrap();
    let plan = store.z_query_plan().unwrap();
    assert!(plan.contains("readings_climate_z"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
}

/// WAL and the read connections: a write transaction in progress (here
/// held open on another thread, and deleting everything) neither blocks a
/// read nor shows it anything uncommitted. With one shared connection this
/// read would wait for the writer and the timeout would fail the test.
#[tokio::test]
async fn reads_go_on_while_a_write_transaction_is_open() {
    let dir = temp_dir("readers");
    let store = SqliteStore::open(dir.join("r.db")).unwrap();
    let r = reading("m-1", None, 1, 10.0);
    assert!(store
        .write_readings(std::slice::from_ref(&r))
        .await
        .unwritten
        .is_empty());
    let writer = WriterHeld::on_a_thread(
        &store,
        "BEGIN IMMEDIATE; DELETE FROM readings_power; DELETE FROM devices;",
    );
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        store.latest_reading(&r.device_id),
    )
    .await
    .expect("a read does not wait for the writer");
    assert_eq!(read.unwrap(), Some(r.clone()));
    let registry = tokio::time::timeout(std::time::Duration::from_secs(5), store.load_registry())
        .await
        .expect("nor does loading the registry")
        .unwrap();
    assert!(registry.devices.contains_key(&r.device_id));
    writer.release();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The writer held by another thread, in `sql`'s open transaction (none for
/// no SQL), until released (or ten seconds): the transaction then rolls back.
struct WriterHeld {
    release: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl WriterHeld {
    fn on_a_thread(store: &SqliteStore, sql: &'static str) -> Self {
        let (held, is_held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let store = store.clone();
        let thread = std::thread::spawn(move || {
            let writer = store.lock();
            writer.conn.execute_batch(sql).unwrap();
            held.send(()).unwrap();
            let _ = released.recv_timeout(std::time::Duration::from_secs(10));
            if !sql.is_empty() {
                writer.conn.execute_batch("ROLLBACK").unwrap();
            }
        });
        is_held.recv().unwrap();
        Self { release, thread }
    }

    fn release(self) {
        self.release.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

/// The writer merges a batch's registry changes into the records it last
/// wrote rather than reading them back: what the file holds afterwards is
/// the records as read back would give, a new device in a room gets its
/// row, and a user's name set between batches is kept by the next batch
/// (every registry write of the writer goes through the records).
#[tokio::test]
async fn the_writer_s_registry_records_stay_what_the_file_holds() {
    let dir = temp_dir("registry-records");
    let path = dir.join("r.db");
    let store = SqliteStore::open(&path).unwrap();
    let write = |readings: Vec<Reading>| {
        let store = store.clone();
        async move { assert!(store.write_readings(&readings).await.unwritten.is_empty()) }
    };
    write(vec![reading("s-1", Some("living"), 1, 20.0)]).await;
    write(vec![
        reading("s-2", Some("living"), 2, 21.0),
        reading("s-1", Some("living"), 3, 22.0),
    ])
    .await;
    let (s1, living) = (
        DeviceId::parse("s-1").unwrap(),
        RoomId::parse("living").unwrap(),
    );
    store
        .set_device_profile(&s1, Some(&Name::parse("Sofa").unwrap()), None)
        .await
        .unwrap();
    store
        .set_room_name(&living, Some(&Name::parse("Living room").unwrap()))
        .await
        .unwrap();
    let newest = reading("s-1", Some("living"), 4, 23.0);
    write(vec![newest.clone()]).await;
    let written = store.load_registry().await.unwrap();
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    let read_back = reopened.load_registry().await.unwrap();
    assert_eq!(written, read_back);
    let device = &read_back.devices[&s1];
    assert_eq!(
        device.name.as_deref(),
        Some("Sofa"),
        "the name set between batches stays"
    );
    assert_eq!(device.latest.as_ref(), Some(&newest));
    assert_eq!(device.first_seen, Some(at(1)));
    let room = &read_back.rooms[&living];
    assert_eq!(room.name.as_deref(), Some("Living room"));
    assert_eq!(
        room.devices.iter().map(|d| d.as_str()).collect::<Vec<_>>(),
        ["s-1", "s-2"]
    );
    assert_eq!(room.latest.as_ref(), Some(&newest));
    drop(reopened);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write runs on its task when the writer is free; when a sweep holds the
/// writer, it waits on the blocking pool, not on the runtime's thread. On
/// a current-thread runtime a wait on the task would stop every other task
/// (the ticker below) until the writer is free.
#[tokio::test(flavor = "current_thread")]
async fn a_write_that_must_wait_for_the_writer_waits_off_the_runtime() {
    let dir = temp_dir("busy-writer");
    let store = SqliteStore::open(dir.join("w.db")).unwrap();
    let first = reading("m-1", None, 1, 10.0);
    assert!(store
        .write_readings(std::slice::from_ref(&first))
        .await
        .unwritten
        .is_empty());
    let holder = WriterHeld::on_a_thread(&store, "");
    let second = reading("m-1", None, 2, 11.0);
    let write = tokio::spawn({
        let (store, second) = (store.clone(), second.clone());
        async move { store.write_readings(&[second]).await }
    });
    // The runtime still runs other tasks while the write waits.
    let mut ticks = 0;
    while ticks < 5 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        ticks += 1;
    }
    assert!(!write.is_finished(), "the writer is still held");
    holder.release();
    let report = tokio::time::timeout(std::time::Duration::from_secs(5), write)
        .await
        .expect("the write goes on once the writer is free")
        .unwrap();
    assert!(report.unwritten.is_empty());
    assert_eq!(
        store.latest_reading(&second.device_id).await.unwrap(),
        Some(second)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
/// The layout's bytes per reading, with every index, the registry and the
/// rollups, for four weeks of the benchmark's household (a meter and three
/// room sensors at 1 reading a minute), long closed, so sealed into blocks.
/// A fixed 120 KB or so (an 8 KB page per table and index) is part of it.
#[tokio::test]
async fn a_sealed_reading_costs_under_2_bytes_on_disk() {
    let dir = temp_dir("bytes");
    let path = dir.join("ts.db");
    let store = SqliteStore::open(&path).unwrap();
    let (mut kwh, mut n) = (5210.125f64, 0usize);
    let mut batch = Vec::with_capacity(1000);
    // 2026-09-01T00:00:00Z.
    let at = |minute: i64| Timestamp::from_millis(1_788_220_800_000 + minute * 60_000).unwrap();
    for i in 0..28 * 1440 {
        let x = i as f64;
        let w = ((350.0 + 200.0 * (x / 50.0).sin()) * 10.0).round() / 10.0;
        kwh = ((kwh + w.max(0.0) / 60_000.0) * 1000.0).round() / 1000.0;
        batch.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: at(i),
            measurement: Measurement::power(kwh, 812.5, w).unwrap(),
        });
        for d in 2..=4 {
            let t = ((21.0 + 2.0 * (x / 300.0 + d as f64).sin()) * 100.0).round() / 100.0;
            let h = ((45.0 + 5.0 * (x / 400.0 + d as f64).sin()) * 10.0).round() / 10.0;
            batch.push(Reading {
                device_id: DeviceId::parse(&format!("sensor-{d}")).unwrap(),
                timestamp: at(i),
                measurement: Measurement::climate(
                    RoomId::parse(&format!("room-{d}")).unwrap(),
                    t,
                    h,
                )
                .unwrap(),
            });
        }
        if batch.len() >= 1000 {
            assert!(store.write_readings(&batch).await.unwritten.is_empty());
            n += batch.len();
            batch.clear();
        }
    }
    assert!(store.write_readings(&batch).await.unwritten.is_empty());
    n += batch.len();
    store.checkpoint().await.unwrap();
    assert_eq!(store.stored_readings().await.unwrap(), n as u64);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let per_reading = bytes as f64 / n as f64;
    eprintln!("{per_reading:.2} bytes per reading ({bytes} bytes, {n} readings)");
    assert!(per_reading <= 2.0, "{per_reading:.2} bytes per reading");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version 1 file (every item as DynamoDB JSON in `items`) with changes
/// its registry consumer had not applied when it stopped: opening it moves
/// every reading and registry item, applies the pending changes, and leaves
/// no version 1 table behind.
#[tokio::test]
async fn a_version_1_file_with_a_change_log_is_migrated_whole() {
    use dynamodb::item::ReadingItem;
    let dir = temp_dir("v1");
    let path = dir.join("old.db");
    let applied = reading("m-1", None, 1, 10.0);
    let pending = reading("s-2", Some("kitchen"), 2, 19.5);
    let pending_later = reading("s-2", Some("kitchen"), 3, 19.75);
    let item_text = |r: &Reading| {
        let item: serde_dynamo::Item =
            serde_dynamo::to_item(ReadingItem::stored(r, None, storage::keys::DEFAULT_SHARDS))
                .unwrap();
        serde_json::to_string(&item).unwrap()
    };
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE items (pk TEXT NOT NULL, sk TEXT NOT NULL, room TEXT, item TEXT NOT NULL,
                expires_at INTEGER, shard TEXT, ats TEXT, z TEXT, PRIMARY KEY (pk, sk)) WITHOUT ROWID;
             CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE change_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_name TEXT NOT NULL,
                pk TEXT NOT NULL, sk TEXT NOT NULL, new_image TEXT, old_image TEXT, at_ms INTEGER NOT NULL);
             CREATE TABLE checkpoints (consumer TEXT PRIMARY KEY, seq INTEGER NOT NULL);",
        )
        .unwrap();
        for r in [&applied, &pending, &pending_later] {
            conn.execute(
                "INSERT INTO items (pk, sk, item) VALUES (?1, ?2, ?3)",
                rusqlite::params![
                    r.device_id.as_str(),
                    storage::keys::reading_sk(r.timestamp),
                    item_text(r)
                ],
            )
            .unwrap();
        }
        // The registry saw the meter (an item from before `quantities`), named by its user.
        let device_item = serde_json::json!({
            "pk": {"S": "DEVICE"}, "sk": {"S": "m-1"}, "name": {"S": "Meter"}, "types": {"SS": ["power"]},
            "first_seen": {"S": applied.timestamp.to_string()}, "last_seen": {"S": applied.timestamp.to_string()},
            "latest": {"M": {"device_id": {"S": "m-1"}, "timestamp": {"S": applied.timestamp.to_string()},
                "type": {"S": "power"}, "cumulative_kwh_p": {"N": "10"}, "cumulative_kwh_n": {"N": "0"},
                "current_w": {"N": "100"}}}
        });
        conn.execute(
            "INSERT INTO items (pk, sk, item) VALUES ('DEVICE', 'm-1', ?1)",
            [device_item.to_string()],
        )
        .unwrap();
        let log = |name: &str, r: &Reading, new: Option<String>| {
            conn.execute(
                "INSERT INTO change_log (event_name, pk, sk, new_image, old_image, at_ms) VALUES (?1, ?2, ?3, ?4, NULL, 0)",
                rusqlite::params![name, r.device_id.as_str(), storage::keys::reading_sk(r.timestamp), new],
            )
            .unwrap();
        };
        log("INSERT", &applied, Some(item_text(&applied)));
        conn.execute("INSERT INTO checkpoints VALUES ('registry', 1)", [])
            .unwrap();
        log("INSERT", &pending, Some(item_text(&pending)));
        log("REMOVE", &applied, None);
        log("INSERT", &pending_later, Some(item_text(&pending_later)));
    }
    let store = SqliteStore::open(&path).unwrap();
    let registry = store.load_registry().await.unwrap();
    let sensor = &registry.devices[&pending.device_id];
    assert_eq!(
        (sensor.first_seen, sensor.last_seen),
        (Some(pending.timestamp), Some(pending_later.timestamp))
    );
    assert_eq!(sensor.latest.as_ref(), Some(&pending_later));
    let kitchen = &registry.rooms[&RoomId::parse("kitchen").unwrap()];
    assert_eq!(kitchen.devices, BTreeSet::from([pending.device_id.clone()]));
    let meter = &registry.devices[&applied.device_id];
    assert_eq!(meter.last_seen, Some(applied.timestamp));
    assert_eq!(meter.name.as_deref(), Some("Meter"));
    let quantities: Vec<&str> = meter.quantities.iter().map(|q| q.name()).collect();
    assert_eq!(
        quantities,
        ["cumulative_kwh_p", "cumulative_kwh_n", "current_w"]
    );
    // Every reading is there, and nothing of version 1.
    assert_eq!(store.stored_readings().await.unwrap(), 3);
    for r in [&applied, &pending, &pending_later] {
        let page = store.device_readings(&r.device_id, &all(10)).await.unwrap();
        assert!(page.readings.contains(r), "{r:?}");
    }
    let tables: Vec<String> = store.read(|conn| {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let names = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        names
    });
    for old in ["items", "change_log", "checkpoints", "settings"] {
        assert!(!tables.iter().any(|t| t == old), "{tables:?}");
    }
    drop(store);
    // Opening it again changes nothing.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.stored_readings().await.unwrap(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An item that does not decode stops the migration and leaves the file as
/// it was: nothing is dropped on the way.
#[tokio::test]
async fn a_version_1_item_that_does_not_decode_leaves_the_file_unchanged() {
    let dir = temp_dir("v1-bad");
    let path = dir.join("old.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE items (pk TEXT NOT NULL, sk TEXT NOT NULL, room TEXT, item TEXT NOT NULL,
                PRIMARY KEY (pk, sk)) WITHOUT ROWID;
             INSERT INTO items VALUES ('m-1', 'TS#2026-11-01T00:00:00.000Z', NULL,
                '{\"pk\":{\"S\":\"m-1\"},\"sk\":{\"S\":\"TS#2026-11-01T00:00:00.000Z\"},\"mystery\":{\"N\":\"1\"}}');",
        )
        .unwrap();
    }
    let err = SqliteStore::open(&path).err().expect("refused");
    assert!(
        err.to_string().contains("m-1") && err.to_string().contains("unchanged"),
        "{err}"
    );
    let conn = Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The WAL is copied into the database file by the checkpointer thread, not
/// by the writer's commits: after a write the file itself grows within a
/// few checkpoint periods, with no explicit checkpoint.
#[tokio::test]
async fn the_checkpointer_copies_the_wal_into_the_file() {
    let dir = temp_dir("checkpointer");
    let path = dir.join("c.db");
    let store = SqliteStore::open(&path).unwrap();
    let size = || std::fs::metadata(&path).unwrap().len();
    let before = size();
    let readings: Vec<Reading> = (0..5000)
        .map(|m| reading("m-1", None, m, m as f64))
        .collect();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while size() <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "the file never grew: {before} bytes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(store.stored_readings().await.unwrap(), 5000);
    drop(store);
    // Closed, the file holds everything and the WAL nothing.
    let wal = path.with_extension("db-wal");
    assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.stored_readings().await.unwrap(), 5000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A burst leaves its WAL beside the file until the store has been quiet
/// for a while (300 ms under test); then the checkpointer cuts it to
/// nothing, and the store answers and takes writes as before.
#[tokio::test]
async fn a_quiet_store_s_wal_is_cut_to_nothing() {
    let dir = temp_dir("quiet-wal");
    let path = dir.join("q.db");
    let store = SqliteStore::open(&path).unwrap();
    let wal = path.with_extension("db-wal");
    let wal_bytes = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    let readings: Vec<Reading> = (0..5000)
        .map(|m| reading("m-1", None, m, m as f64))
        .collect();
    let started = std::time::Instant::now();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    // The burst left a WAL, unless the quiet period since it has passed
    // already (a slow machine): never cut sooner.
    let burst = wal_bytes();
    assert!(
        burst > 0 || started.elapsed() >= super::checkpointer::QUIET_BEFORE_TRUNCATE,
        "the WAL was cut before the store had been quiet"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while wal_bytes() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the quiet store kept a WAL of {} bytes",
            wal_bytes()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(store.stored_readings().await.unwrap(), 5000);
    let more = [reading("m-1", None, 6000, 1.0)];
    assert!(store.write_readings(&more).await.unwritten.is_empty());
    assert_eq!(store.stored_readings().await.unwrap(), 5001);
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.stored_readings().await.unwrap(), 5001);
    let _ = std::fs::remove_dir_all(&dir);
}

mod rollups_kept {
    use super::*;
    use domain::aggregate::rollup::spans;
    use domain::model::Span;
    use proptest::prelude::*;

    /// A reading of a generated history: device, minute, kind, value.
    fn readings() -> impl Strategy<Value = Vec<(u8, i64, u8, f64)>> {
        prop::collection::vec((0u8..2, 0i64..4 * 1440, 0u8..4, 0.0f64..1.0), 1..200)
    }

    fn make(device: u8, minute: i64, kind: u8, x: f64) -> Reading {
        let device_id = DeviceId::parse(["meter-1", "sensor-1"][device as usize]).unwrap();
        let measurement = match kind {
            // A counter that mostly grows, sometimes dips, reads 0 or restarts.
            0 | 1 => Measurement::power(
                match (x * 20.0) as u32 {
                    0 => 0.0,
                    1 => 3.0,
                    2 => 900.0 + minute as f64 * 0.01,
                    _ => 1000.0 + minute as f64 * 0.01,
                },
                2.0,
                100.0,
            ),
            2 => Measurement::climate(RoomId::parse("bedroom").unwrap(), 15.0 + x * 10.0, 50.0),
            _ => Measurement::climate(RoomId::parse("hall").unwrap(), 15.0 + x * 10.0, 40.0),
        };
        Reading {
            device_id,
            timestamp: at(minute),
            measurement: measurement.unwrap(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever the batches and their order (late readings, a key
        /// written again with other values, a batch out of order), the kept
        /// rollups are those of the stored readings computed afresh.
        #[test]
        fn kept_rollups_are_the_stored_readings_rollups(
            history in readings(),
            batch in 1usize..60,
            sorted in any::<bool>(),
        ) {
            let mut history: Vec<Reading> = history.into_iter().map(|(d, m, k, x)| make(d, m, k, x)).collect();
            if sorted {
                // Mostly appends: the usual case, continued span by span.
                history.sort_by_key(|r| r.timestamp);
            }
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let store = SqliteStore::in_memory().unwrap();
                for chunk in history.chunks(batch) {
                    assert!(store.write_readings(chunk).await.unwritten.is_empty());
                }
                let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
                let writer = store.lock();
                for device in ["meter-1", "sensor-1"] {
                    let device_id = DeviceId::parse(device).unwrap();
                    let Some(id) = names::find(&writer.conn, names::DEVICE, device).unwrap() else { continue };
                    let stored = series::device_readings(
                        &writer.conn, id, &device_id,
                        rows::Bounds { lo: 0, hi: i64::MAX }, Order::Asc, 1_000_000,
                    ).unwrap();
                    for span in [Span::Hour, Span::Day] {
                        let kept = rollups::within(&writer.conn, (id, &device_id), span, &everything, None, None).unwrap().0;
                        let fresh = spans(span, Default::default(), stored.iter());
                        if let Some(i) = (0..kept.len().max(fresh.len())).find(|&i| kept.get(i) != fresh.get(i)) {
                            panic!("{device} {span:?}: {} kept, {} fresh; first difference at {i}:\n{:?}\n{:?}", kept.len(), fresh.len(), kept.get(i), fresh.get(i));
                        }
                    }
                }
            });
        }
    }
}

/// A version 2 file (the time-series tables, no rollups) gets its rollups
/// built from its readings when it is opened, once.
#[tokio::test]
async fn a_version_2_file_gets_its_rollups_on_open() {
    use domain::aggregate::rollup::spans;
    use domain::model::Span;
    let dir = temp_dir("v2-rollups");
    let path = dir.join("ingester.db");
    let written: Vec<Reading> = (0..300)
        .map(|m| reading("meter-1", None, m * 7, 100.0 + m as f64 * 0.5))
        .chain((0..300).map(|m| reading("sensor-1", Some("hall"), m * 7, 20.0 + (m % 9) as f64)))
        .collect();
    {
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.write_readings(&written).await.unwritten.is_empty());
    }
    {
        // As version 2 left it.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE rollups; PRAGMA user_version = 2;")
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let writer = store.lock();
    let version: i64 = writer
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::VERSION);
    for device in ["meter-1", "sensor-1"] {
        let id = names::find(&writer.conn, names::DEVICE, device)
            .unwrap()
            .unwrap();
        let mine: Vec<Reading> = written
            .iter()
            .filter(|r| r.device_id.as_str() == device)
            .cloned()
            .collect();
        let device_id = DeviceId::parse(device).unwrap();
        for span in [Span::Hour, Span::Day] {
            let kept = rollups::within(
                &writer.conn,
                (id, &device_id),
                span,
                &everything,
                None,
                None,
            )
            .unwrap()
            .0;
            assert!(!kept.is_empty());
            assert_eq!(
                kept,
                spans(span, Default::default(), mine.iter()),
                "{device} {span:?}"
            );
        }
    }
}

/// A rollup keeps its metered size with its body. A version 5 file (no
/// `size` column) gets the column on open, and its rollups, NULL there, are
/// metered as before, from their bodies, until they are written again.
#[tokio::test]
async fn rollups_keep_their_size_and_a_version_5_file_gets_the_column() {
    use domain::model::Span;
    let dir = temp_dir("rollup-sizes");
    let path = dir.join("ingester.db");
    // A reading a minute: days that keep their rollup rows (a slower
    // series' closed days share a block, and their rollups are computed).
    let written: Vec<Reading> = (0..2400)
        .map(|m| reading("sensor-1", Some("hall"), m, 20.0 + (m % 9) as f64 * 0.37))
        .collect();
    let everything = domain::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let device_id = DeviceId::parse("sensor-1").unwrap();
    let metered = |store: &SqliteStore| {
        let writer = store.lock();
        let id = names::find(&writer.conn, names::DEVICE, "sensor-1")
            .unwrap()
            .unwrap();
        let (days, bytes) = rollups::within(
            &writer.conn,
            (id, &device_id),
            Span::Day,
            &everything,
            Some(8),
            None,
        )
        .unwrap();
        let sizes: Vec<(i64, Vec<u8>, Option<i64>)> = writer
            .conn
            .prepare("SELECT start, body, size FROM rollups ORDER BY start")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        (days, bytes, sizes)
    };
    let (days, bytes, sizes) = {
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.write_readings(&written).await.unwritten.is_empty());
        metered(&store)
    };
    assert!(days.len() >= 2, "{}", days.len());
    assert_eq!(sizes.len(), days.len());
    let mut from_bodies = 0;
    for (start, body, size) in &sizes {
        let stored = rollups::stored_of(*start, body).unwrap();
        let body_size = storage::format::billing::stored_size(&stored);
        assert_eq!(*size, Some(body_size as i64));
        from_bodies += storage::format::billing::rollup_item_size(8, body_size);
    }
    assert_eq!(bytes, from_bodies);
    {
        // As version 5 left it.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("ALTER TABLE rollups DROP COLUMN size; PRAGMA user_version = 5;")
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let (days_after, bytes_after, sizes_after) = metered(&store);
    assert_eq!((days_after, bytes_after), (days.clone(), bytes));
    assert!(sizes_after.iter().all(|(_, _, size)| size.is_none()));
    let version: i64 = store
        .lock()
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::VERSION);
    // A reading of the first day writes that day's rollup again, sized.
    let late = reading("sensor-1", Some("hall"), 3, 25.0);
    assert!(store.write_readings(&[late]).await.unwritten.is_empty());
    let (_, _, sizes_now) = metered(&store);
    assert!(sizes_now[0].2.is_some());
    assert!(sizes_now[1..].iter().all(|(_, _, size)| size.is_none()));
}

/// A statement with `device = ?` runs with one device after another without
/// being prepared again: SQLite's planner would otherwise take a bound 1 as
/// a hint and prepare the statement anew whenever the id moves to or from 1.
#[test]
fn statements_are_not_prepared_again_for_each_device() {
    let store = SqliteStore::in_memory().unwrap();
    let readings: Vec<Reading> = (0..4)
        .flat_map(|minute| {
            [
                reading("meter-1", None, minute, 1.0),
                reading("sensor-2", Some("hall"), minute, 20.0),
            ]
        })
        .collect();
    assert!(store
        .write_readings_at(&readings, at(0).millis())
        .unwritten
        .is_empty());
    let writer = store.lock();
    let conn = &writer.conn;
    let family = &schema::families()[0];
    let bounds = rows::Bounds {
        lo: at(0).millis(),
        hi: at(10).millis(),
    };
    for device_id in ["meter-1", "sensor-2", "meter-1", "sensor-2", "meter-1"] {
        let id = names::find(conn, names::DEVICE, device_id)
            .unwrap()
            .unwrap();
        let device = DeviceId::parse(device_id).unwrap();
        rows::device_readings(conn, id, &device, bounds, Order::Asc, 100).unwrap();
        rows::newest_time(conn, id).unwrap();
    }
    let ids: Vec<i64> = ["meter-1", "sensor-2"]
        .iter()
        .map(|d| names::find(conn, names::DEVICE, d).unwrap().unwrap())
        .collect();
    assert!(ids.contains(&1), "device 1 is one of them: {ids:?}");
    for sql in [&family.select[0], &family.newest] {
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(
            stmt.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "{sql}"
        );
    }
}

/// A meter that reports only its bought counter had no energy in the
/// rollups of builds before each counter was followed on its own (rollup
/// version 1). Such bodies still read, as rollups whose counters do not
/// stand for their readings (so `query::energy` reads those spans' readings;
/// tested end to end on DynamoDB in `tests/tests/rollups.rs`), until
/// `rollups rebuild` writes them again as version 2.
#[tokio::test]
async fn version_1_rollups_of_a_bought_only_meter_read_until_rebuilt() {
    use domain::aggregate::rollup::spans;
    use domain::model::Span;
    use storage::format::rollup::StoredV1;
    let store = SqliteStore::in_memory().unwrap();
    let device = DeviceId::parse("tasmota-1").unwrap();
    let readings = three_meter_days(&device, |i| {
        vec![
            (Quantity::EnergyBought, 500.0 + i as f64 * 0.125),
            (Quantity::Power, 750.0),
        ]
    });
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let range = domain::model::TimeRange::new(at(0), at(3 * 1440)).unwrap();
    let fresh = store.rollups(&device, Span::Day, &range).await.unwrap();
    assert!(!fresh.is_empty());
    assert!(fresh
        .iter()
        .all(|r| r.counters.bought.is_some() && r.counters_cover_readings()));
    // Every rollup body as version 1 stored it: no counters, no chain.
    {
        let writer = store.lock();
        let bodies: Vec<((i64, i64, i64), Vec<u8>)> = writer
            .conn
            .prepare("SELECT device, span, start, body FROM rollups")
            .unwrap()
            .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!bodies.is_empty());
        for ((device, span, start), body) in bodies {
            let now = rollups::stored_of(start, &body).unwrap();
            assert!(now.b.is_some() || now.k.0.is_some(), "{now:?}");
            let old = StoredV1 {
                v: 1,
                n: now.n,
                f: now.f,
                r: now.r,
                c: None,
                ch: None,
            };
            writer
                .conn
                .execute(
                    "UPDATE rollups SET body = ?1, size = NULL
                     WHERE device = ?2 AND span = ?3 AND start = ?4",
                    rusqlite::params![postcard::to_allocvec(&old).unwrap(), device, span, start],
                )
                .unwrap();
        }
    }
    let old = store.rollups(&device, Span::Day, &range).await.unwrap();
    assert_eq!(old.len(), fresh.len());
    for (o, f) in old.iter().zip(&fresh) {
        assert_eq!((o.start, o.all.count), (f.start, f.all.count));
        assert!(
            !o.counters_cover_readings(),
            "version 1 left the counter out"
        );
    }
    // Rebuilt, they are version 3 again and carry the energy themselves.
    rebuild_in_transaction(&store, &device, range).await;
    let rebuilt = store.rollups(&device, Span::Day, &range).await.unwrap();
    assert_eq!(rebuilt, fresh);
    assert_eq!(
        rebuilt,
        spans(Span::Day, Default::default(), readings.iter())
    );
}

/// Three days of a meter, a reading every ten minutes, its `i`th reading's
/// values from `values(i)`.
fn three_meter_days(
    device: &DeviceId,
    values: impl Fn(i64) -> Vec<(Quantity, f64)>,
) -> Vec<Reading> {
    (0..3 * 144)
        .map(|i| Reading {
            device_id: device.clone(),
            timestamp: at(i * 10),
            measurement: Measurement::new(None, values(i)).unwrap(),
        })
        .collect()
}

/// Rollup bodies as versions before 3 wrote them (postcard, 8-byte floats,
/// quantities by name) read as they did: a store's years of rollups are not
/// rewritten when it is upgraded, and new days are written as version 3.
#[tokio::test]
async fn version_2_rollup_bodies_read_as_before_and_new_ones_are_version_3() {
    use domain::model::Span;
    use storage::format::rollup_body;
    let store = SqliteStore::in_memory().unwrap();
    let device = DeviceId::parse("meter-7").unwrap();
    let readings = three_meter_days(&device, |i| {
        vec![
            (Quantity::EnergyBought, 500.0 + i as f64 * 0.125),
            (Quantity::EnergySold, 20.0 + (i / 7) as f64 * 0.001),
            (Quantity::Power, 750.0 + (i % 13) as f64 * 0.1),
        ]
    });
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let range = domain::model::TimeRange::new(at(0), at(3 * 1440)).unwrap();
    let fresh = store.rollups(&device, Span::Day, &range).await.unwrap();
    assert_eq!(fresh.len(), 3);
    let bodies = |store: &SqliteStore| -> Vec<(i64, Vec<u8>)> {
        store
            .lock()
            .conn
            .prepare("SELECT start, body FROM rollups ORDER BY start")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let mut saved = 0;
    for (start, body) in bodies(&store) {
        assert_eq!(body[0], rollup_body::VERSION);
        // What a build before wrote: postcard of the same stored shape.
        let old = postcard::to_allocvec(&rollups::stored_of(start, &body).unwrap()).unwrap();
        assert_eq!(old[0], 2);
        saved += old.len() - body.len();
        store
            .lock()
            .conn
            .execute(
                "UPDATE rollups SET body = ?1 WHERE start = ?2",
                rusqlite::params![old, start],
            )
            .unwrap();
    }
    // Three meter days: more than a hundred bytes each saved.
    assert!(saved > 300, "{saved}");
    assert_eq!(
        store.rollups(&device, Span::Day, &range).await.unwrap(),
        fresh
    );
    // A day written again is written as version 3.
    assert!(store
        .write_readings(&readings[..1])
        .await
        .unwritten
        .is_empty());
    let after = bodies(&store);
    assert_eq!(after[0].1[0], rollup_body::VERSION);
    assert!(after[1..].iter().all(|(_, body)| body[0] == 2));
    assert_eq!(
        store.rollups(&device, Span::Day, &range).await.unwrap(),
        fresh
    );
}

/// A day denser than one reading a second (a meter every half second) is
/// counted whole, kept out of order and rebuilt: no cap on a span's readings.
#[tokio::test]
async fn a_day_of_more_than_86400_readings_is_rolled_up_whole() {
    use domain::model::Span;
    let store = SqliteStore::in_memory().unwrap();
    let device = DeviceId::parse("fast-meter").unwrap();
    let day = Timestamp::parse("2026-09-01T00:00:00Z").unwrap();
    let n = 90_000i64;
    let readings: Vec<Reading> = (0..n)
        .map(|i| Reading {
            device_id: device.clone(),
            timestamp: day.saturating_add_millis(i * 500),
            measurement: Measurement::power(1000.0 + i as f64 / 1000.0, 0.0, 500.0).unwrap(),
        })
        .collect();
    // Newest first: every batch after the first recomputes the day.
    for chunk in readings.chunks(10_000).rev() {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let whole = TimeRange::new(day, Span::Day.end_of(day)).unwrap();
    let count =
        |r: &[domain::aggregate::rollup::Rollup]| r.iter().map(|r| r.all.count).sum::<u64>();
    let kept = store.rollups(&device, Span::Day, &whole).await.unwrap();
    assert_eq!(count(&kept), n as u64);
    rebuild_in_transaction(&store, &device, whole).await;
    let rebuilt = store.rollups(&device, Span::Day, &whole).await.unwrap();
    assert_eq!(count(&rebuilt), n as u64);
    assert_eq!(rebuilt, kept);
}

/// A device's or a room's stats fold the tallies of day rollups, read from
/// each body's first fields (and its rooms'): the same tallies, and the same
/// read units, as the whole rollups give, whatever form a body was stored
/// in (version 4 with its size, without it as before version 6, postcard's
/// version 2).
#[tokio::test]
async fn day_tallies_are_the_rollups_own_in_every_body_form() {
    use domain::model::Span;
    use storage::format::rollup::Stored;
    use storage::metering::metered;
    let store = SqliteStore::in_memory().unwrap();
    let meter = DeviceId::parse("meter-1").unwrap();
    let readings = three_meter_days(&meter, |i| {
        vec![
            (Quantity::EnergyBought, 500.0 + i as f64 * 0.125),
            (Quantity::Power, 750.0 + (i % 7) as f64),
        ]
    });
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    // A sensor moved from the kitchen to the hall halfway through each day.
    let sensor = DeviceId::parse("sensor-1").unwrap();
    let moved: Vec<Reading> = (0..3 * 144)
        .map(|i| {
            let room = if i % 144 < 72 { "kitchen" } else { "hall" };
            let values = vec![
                (Quantity::Temperature, 20.0 + (i % 11) as f64 * 0.1),
                (Quantity::Humidity, 40.0 + (i % 5) as f64),
            ];
            Reading {
                device_id: sensor.clone(),
                timestamp: at(i * 10),
                measurement: Measurement::new(Some(RoomId::parse(room).unwrap()), values).unwrap(),
            }
        })
        .collect();
    assert!(store.write_readings(&moved).await.unwritten.is_empty());
    let range = domain::model::TimeRange::new(at(0), at(3 * 1440)).unwrap();
    let kitchen = RoomId::parse("kitchen").unwrap();
    let attic = RoomId::parse("attic").unwrap();
    let asked = [
        (meter.clone(), None),
        (sensor.clone(), None),
        (sensor.clone(), Some(kitchen)),
        (sensor.clone(), Some(attic.clone())),
    ];
    let check = |what: &'static str| {
        let (store, asked, attic) = (store.clone(), asked.clone(), attic.clone());
        async move {
            for (device, room) in &asked {
                let (whole, whole_units) = metered(store.rollups(device, Span::Day, &range)).await;
                let (tallies, units) =
                    metered(store.rollup_tallies(device, Span::Day, &range, room.as_ref())).await;
                let whole: Vec<_> = whole
                    .unwrap()
                    .into_iter()
                    .map(|r| r.into_tally(room.as_ref()))
                    .collect();
                assert_eq!(whole.len(), 3, "{what}");
                let found = whole.iter().filter(|(_, t)| t.is_some()).count();
                assert_eq!(found, if room.as_ref() == Some(&attic) { 0 } else { 3 });
                assert_eq!(tallies.unwrap(), whole, "{what} {device:?} {room:?}");
                assert!(units > 0.0, "{what}");
                assert_eq!(units, whole_units, "{what}");
                // Not metered: the same tallies.
                let unmetered = store
                    .rollup_tallies(device, Span::Day, &range, room.as_ref())
                    .await;
                assert_eq!(unmetered.unwrap(), whole, "{what}");
            }
        }
    };
    check("version 4, sized").await;
    let rewrite = |sql: &str, body: fn(i64, &[u8]) -> Vec<u8>| {
        let writer = store.lock();
        let rows: Vec<(i64, Vec<u8>)> = writer
            .conn
            .prepare("SELECT start, body FROM rollups WHERE span = 1")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (start, old) in rows {
            writer
                .conn
                .execute(sql, rusqlite::params![body(start, &old), start])
                .unwrap();
        }
    };
    rewrite(
        "UPDATE rollups SET body = ?1, size = NULL WHERE span = 1 AND start = ?2",
        |_, b| b.to_vec(),
    );
    check("version 4, stored without its size").await;
    rewrite(
        "UPDATE rollups SET body = ?1 WHERE span = 1 AND start = ?2",
        |start, b| {
            let stored: Stored<&str> = rollups::stored_of(start, b).unwrap();
            postcard::to_allocvec(&stored).unwrap()
        },
    );
    check("postcard's version 2").await;
}

/// The domain's rebuild in one write transaction, as the rollups use case
/// runs it on this store.
async fn rebuild_in_transaction(store: &SqliteStore, device: &DeviceId, range: TimeRange) {
    use domain::rollup_upkeep::{at_once, rebuild};
    store
        .in_rollup_transaction(device, move |spans| at_once(rebuild(spans, range)))
        .await
        .unwrap();
}

/// A file made before the tariff counters (issue 79: version 13, whose
/// `readings_power` has no column for them) gets the columns on open, in
/// place: its readings read as before, and a two-tariff meter's telegram
/// is stored and read back whole.
#[tokio::test]
async fn a_version_13_file_gets_the_tariff_columns_on_open() {
    let dir = temp_dir("tariff-columns");
    let path = dir.join("ingester.db");
    let earlier: Vec<Reading> = (0..3)
        .map(|m| reading("meter-1", None, m, 1000.0 + m as f64))
        .collect();
    {
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.write_readings(&earlier).await.unwritten.is_empty());
    }
    {
        // As version 13 left it.
        let conn = Connection::open(&path).unwrap();
        for q in [
            "cumulative_kwh_p_t1",
            "cumulative_kwh_p_t2",
            "cumulative_kwh_n_t1",
            "cumulative_kwh_n_t2",
        ] {
            conn.execute_batch(&format!("ALTER TABLE readings_power DROP COLUMN {q}"))
                .unwrap();
        }
        conn.pragma_update(None, "user_version", 13).unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let telegram = Reading {
        device_id: DeviceId::parse("meter-1").unwrap(),
        timestamp: at(3),
        measurement: Measurement::new(
            None,
            vec![
                (Quantity::EnergyBought, 1003.5),
                (Quantity::EnergyBoughtT1, 603.25),
                (Quantity::EnergyBoughtT2, 400.25),
                (Quantity::Power, 120.0),
            ],
        )
        .unwrap(),
    };
    assert!(store
        .write_readings(std::slice::from_ref(&telegram))
        .await
        .unwritten
        .is_empty());
    let back = store
        .device_readings(&telegram.device_id, &all(10))
        .await
        .unwrap();
    let mut want = earlier.clone();
    want.push(telegram);
    assert_eq!(back.readings, want);
    let version: i64 = store
        .lock()
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::VERSION);
}
