//! Sealing is crash safe: `ingester-local serve` converts a version 3 file
//! (every reading a row) on open, moving each closed day into its block; a
//! SIGKILL in the middle of that loses nothing, and the next start goes on
//! where the last one stopped.

use rusqlite::{params, Connection};
use shared::model::{DeviceId, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::{Order, RangeRequest, SqliteStore};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");
const DEVICES: i64 = 8;
const DAYS: i64 = 30;
/// 2026-09-01T00:00:00Z: long closed.
const START: i64 = 1_788_220_800_000;

/// A room sensor's reading `i` minutes after START: (temperature, humidity)
/// in thousandths, a random walk at sensor resolution.
fn values(device: i64, minutes: i64) -> Vec<(i64, i64)> {
    let mut rng = fastrand::Rng::with_seed(device as u64);
    let (mut t, mut h) = (21_000i64, 45_000i64);
    (0..minutes)
        .map(|_| {
            t = (t + rng.i64(-1..=1) * 10).clamp(15_000, 30_000);
            h = (h + rng.i64(-1..=1) * 100).clamp(20_000, 80_000);
            (t, h)
        })
        .collect()
}

/// A file as version 3 left it: names, the family tables as rows, no blocks.
fn version_3_file(path: &Path) {
    {
        // Today's schema, written by today's code, then taken back to 3.
        let store = SqliteStore::open(path).unwrap();
        drop(store);
    }
    let mut conn = Connection::open(path).unwrap();
    shared::store::sqlite::register_functions(&conn).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute_batch("DROP TABLE blocks; PRAGMA user_version = 3;")
        .unwrap();
    for d in 0..DEVICES {
        tx.execute(
            "INSERT INTO names (id, kind, text) VALUES (?1, 0, ?2)",
            params![d + 1, format!("sensor-{d}")],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO names (id, kind, text) VALUES (?1, 1, ?2)",
            params![100 + d, format!("room-{d}")],
        )
        .unwrap();
        let mut insert = tx
            .prepare(
                "INSERT INTO readings_climate (device, ts, room, temperature, humidity)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        for (i, (t, h)) in values(d, DAYS * 1440).into_iter().enumerate() {
            insert
                .execute(params![d + 1, START + i as i64 * 60_000, 100 + d, t, h])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// `serve` on the file, its log appended to `log` beside it.
fn serve(path: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path.with_extension("log"))
        .unwrap();
    Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--db",
            path.to_str().unwrap(),
        ])
        .env("RUST_LOG", "info")
        .env_remove("INGEST_TOKEN")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn log(path: &Path) -> String {
    std::fs::read_to_string(path.with_extension("log")).unwrap_or_default()
}

/// Blocks in the file and rows left, read the way SQLite reads a file after
/// a crash (its WAL replayed).
fn progress(path: &Path) -> (i64, i64) {
    let conn = Connection::open(path).unwrap();
    shared::store::sqlite::register_functions(&conn).unwrap();
    let blocks: i64 = conn
        .query_row("SELECT count(*) FROM blocks", [], |r| r.get(0))
        .unwrap_or(0);
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM readings_climate", [], |r| r.get(0))
        .unwrap();
    (blocks, rows)
}

#[tokio::test]
async fn a_sigkill_while_sealing_loses_no_reading() {
    let dir = std::env::temp_dir().join(format!("sealing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ingester.db");
    version_3_file(&path);
    let total = DEVICES * DAYS * 1440;
    assert_eq!(progress(&path), (0, total));

    // Kill it part way, as often as it takes to catch it in the middle.
    let mut killed_mid_seal = 0;
    let mut wait = Duration::from_millis(300);
    let deadline = Instant::now() + Duration::from_secs(120);
    while killed_mid_seal < 3 && Instant::now() < deadline {
        let mut child = serve(&path);
        std::thread::sleep(wait);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (blocks, rows) = progress(&path);
        if blocks == DEVICES * DAYS {
            break; // finished before the kill: the loop below still checks
        }
        if rows > 0 && rows < total {
            killed_mid_seal += 1;
            // Every reading is in its rows or in its block, never both, never neither.
            assert_eq!(rows % 1440, 0, "a day moved whole or not at all");
            assert_eq!(blocks * 1440 + rows, total);
        }
        wait += Duration::from_millis(200);
    }
    assert!(killed_mid_seal > 0, "never caught it sealing");

    // One more start finishes the work.
    let mut child = serve(&path);
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress(&path) != (DEVICES * DAYS, 0) {
        assert!(
            Instant::now() < deadline,
            "sealing never finished: {:?}\n{}",
            progress(&path),
            log(&path)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Every reading, exactly.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.stored_readings().await.unwrap(), total as u64);
    let range = TimeRange::new(
        Timestamp::from_millis(START).unwrap(),
        Timestamp::from_millis(START + DAYS * 86_400_000).unwrap(),
    )
    .unwrap();
    for d in 0..DEVICES {
        let device = DeviceId::parse(&format!("sensor-{d}")).unwrap();
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .device_readings(
                    &device,
                    &RangeRequest {
                        range,
                        order: Order::Asc,
                        limit: 5000,
                        after,
                    },
                )
                .await
                .unwrap();
            got.extend(page.readings.iter().map(|r| {
                (
                    r.timestamp.millis(),
                    r.room().map(|r| r.as_str().to_owned()),
                    (r.get(shared::model::Quantity::Temperature).unwrap() * 1000.0).round() as i64,
                    (r.get(shared::model::Quantity::Humidity).unwrap() * 1000.0).round() as i64,
                )
            }));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let want: Vec<_> = values(d, DAYS * 1440)
            .into_iter()
            .enumerate()
            .map(|(i, (t, h))| (START + i as i64 * 60_000, Some(format!("room-{d}")), t, h))
            .collect();
        assert_eq!(got.len(), want.len(), "sensor-{d}");
        assert!(got == want, "sensor-{d}: a reading differs");
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
