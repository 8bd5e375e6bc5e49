//! `ingester-local backup` while a store takes readings: the copy holds every
//! reading acknowledged before it started and answers as the source did; a
//! failed or killed backup leaves no file under the final name and the
//! source intact. `restore` checks the backup, refuses a store that is open,
//! and keeps the file it replaces.

use shared::model::{DeviceId, Measurement, Reading, RoomId, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::{Order, RangeRequest, SqliteStore};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");
/// 2026-09-01T00:00:00Z.
const START: i64 = 1_788_220_800_000;
const DEVICES: usize = 4;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("backup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A store in a fresh folder `name`, its file `ingester.db`, holding `days`
/// days of every device's minutes from START.
async fn seeded(name: &str, days: i64) -> (PathBuf, PathBuf, SqliteStore) {
    let dir = dir(name);
    let db = dir.join("ingester.db");
    let store = SqliteStore::open(&db).unwrap();
    for chunk in minutes(0, days * 1440).chunks(1000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    (dir, db, store)
}

/// Writes `batch` minutes of every device at a time after the seeded ten
/// days, counting what was acknowledged in `acked`, until `running` is
/// cleared; between batches it yields, or with `max_pause_ms` sleeps up to
/// that long (writes in bursts). Its result is the next minute it would
/// have written.
fn steady_writer(
    store: &SqliteStore,
    acked: &Arc<AtomicU64>,
    running: &Arc<AtomicBool>,
    batch: i64,
    max_pause_ms: u64,
) -> tokio::task::JoinHandle<i64> {
    let (store, acked, running) = (store.clone(), acked.clone(), running.clone());
    tokio::spawn(async move {
        let mut rng = fastrand::Rng::with_seed(44);
        let mut m = 10 * 1440;
        while running.load(Ordering::Relaxed) {
            let readings = minutes(m, m + batch);
            assert!(store.write_readings(&readings).await.unwritten.is_empty());
            acked.fetch_add(readings.len() as u64, Ordering::SeqCst);
            m += batch;
            if max_pause_ms == 0 {
                tokio::task::yield_now().await;
            } else {
                let pause = rng.u64(0..max_pause_ms);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
        }
        m
    })
}

fn device(d: usize) -> DeviceId {
    DeviceId::parse(&format!("sensor-{d}")).unwrap()
}

/// Readings `from..to` minutes after START of every device: room sensors
/// reporting each minute.
fn minutes(from: i64, to: i64) -> Vec<Reading> {
    let mut out = Vec::new();
    for m in from..to {
        for d in 0..DEVICES {
            out.push(Reading {
                device_id: device(d),
                timestamp: Timestamp::from_millis(START + m * 60_000).unwrap(),
                measurement: Measurement::climate(
                    RoomId::parse(&format!("room-{d}")).unwrap(),
                    20.0 + ((m + d as i64) % 50) as f64 / 10.0,
                    40.0 + (m % 30) as f64,
                )
                .unwrap(),
            });
        }
    }
    out
}

async fn all_of(store: &SqliteStore, d: usize) -> Vec<Reading> {
    let range = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .device_readings(
                &device(d),
                &RangeRequest {
                    range,
                    order: Order::Asc,
                    limit: 1000,
                    after,
                },
            )
            .await
            .unwrap();
        out.extend(page.readings);
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
    }
}

fn backup(db: &Path, to: &Path) -> std::process::Output {
    backup_by(CopyWay::InMemory, db, to)
}

/// The two sizes of store a backup tells apart: up to `--in-memory-up-to`
/// (copied as the file is, when it holds every frame of its WAL, or else
/// through memory), or bigger (page by page, by the online backup API).
#[derive(Clone, Copy, Debug)]
enum CopyWay {
    InMemory,
    PageByPage,
}

impl CopyWay {
    /// What the backup's report may say of the way it copied.
    fn reported(self) -> &'static [&'static str] {
        match self {
            CopyWay::InMemory => &["whole file", "through memory"],
            CopyWay::PageByPage => &["page by page"],
        }
    }

    fn args(self) -> [&'static str; 2] {
        match self {
            CopyWay::InMemory => ["--in-memory-up-to", "1000000000"],
            CopyWay::PageByPage => ["--in-memory-up-to", "0"],
        }
    }
}

/// `ingester-local backup --db DB --to TO`, to be given more.
fn backup_command(db: &Path, to: &Path) -> Command {
    let mut command = Command::new(BIN);
    command.args(["backup", "--db"]).arg(db).arg("--to").arg(to);
    command
}

/// Asserts that a command ended well, showing its stderr where not.
fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn backup_by(copy: CopyWay, db: &Path, to: &Path) -> std::process::Output {
    backup_command(db, to).args(copy.args()).output().unwrap()
}

fn integrity(db: &Path) -> String {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    shared::store::sqlite::register_functions(&conn).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_during_ingest_holds_every_acknowledged_reading() {
    backup_during_ingest(CopyWay::InMemory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_page_by_page_during_ingest_holds_every_acknowledged_reading() {
    backup_during_ingest(CopyWay::PageByPage).await;
}

async fn backup_during_ingest(copy: CopyWay) {
    let dir = dir(&format!("steady-{copy:?}"));
    let db = dir.join("ingester.db");
    let to = dir.join("copy.db");
    let store = SqliteStore::open(&db).unwrap();
    // Ten days of history (closed days go into blocks), then a steady ingest.
    let seed = minutes(0, 10 * 1440);
    for chunk in seed.chunks(1000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let acked = Arc::new(AtomicU64::new(seed.len() as u64));
    let running = Arc::new(AtomicBool::new(true));
    let writer = steady_writer(&store, &acked, &running, 25, 0);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let before = acked.load(Ordering::SeqCst);
    let out = {
        let (db, to) = (db.clone(), to.clone());
        tokio::task::spawn_blocking(move || backup_by(copy, &db, &to))
            .await
            .unwrap()
    };
    running.store(false, Ordering::Relaxed);
    let written_minutes = writer.await.unwrap();
    succeeded(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let way = report["copied"].as_str().unwrap_or_default();
    assert!(copy.reported().contains(&way), "{copy:?}: {report}");
    let in_copy = report["readings"].as_u64().unwrap();
    assert!(
        in_copy >= before,
        "the copy has {in_copy} readings; {before} were acknowledged before it began"
    );
    assert!(
        in_copy <= minutes(0, written_minutes).len() as u64,
        "{in_copy} readings: more than were ever written"
    );
    assert!(!shared::store::sqlite::partial_name(&to).exists());
    assert_eq!(integrity(&to), "ok");
    assert_eq!(integrity(&db), "ok");
    // The copy answers as the source did, up to the copy's moment: each
    // device's readings are a prefix of the source's, the seed included.
    let copy = SqliteStore::open(&to).unwrap();
    assert_eq!(copy.stored_readings().await.unwrap(), in_copy);
    let mut total = 0;
    for d in 0..DEVICES {
        let (ours, theirs) = (all_of(&store, d).await, all_of(&copy, d).await);
        assert!(theirs.len() >= 10 * 1440, "device {d}: {}", theirs.len());
        assert_eq!(ours[..theirs.len()], theirs[..], "device {d}");
        total += theirs.len() as u64;
    }
    assert_eq!(total, in_copy);
    assert_eq!(
        report["bytes"].as_u64().unwrap(),
        std::fs::metadata(&to).unwrap().len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The copy of the store's file as it is (`"whole file"`), taken whenever
/// the file holds every frame of the WAL, while writes come in bursts and a
/// checkpoint runs every millisecond beside them (each may copy frames into
/// the file the backup is copying, unless the backup's read mark stops it):
/// every copy is whole, holds what was acknowledged before it began, and
/// answers as a prefix of the source. Then, deterministically: a quiet store
/// whose WAL is cut is copied as its file, byte for byte but for the journal
/// mode; one whose WAL holds a frame that a reader keeps out of the file is
/// copied through memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_file_copy_is_the_snapshot_while_writes_and_checkpoints_go_on() {
    let (dir, db, store) = seeded("whole-file", 10).await;
    let acked = Arc::new(AtomicU64::new(store.stored_readings().await.unwrap()));
    let running = Arc::new(AtomicBool::new(true));
    let writer = steady_writer(&store, &acked, &running, 5, 8);
    let checkpointer = {
        let (db, running) = (db.clone(), running.clone());
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&db).unwrap();
            shared::store::sqlite::register_functions(&conn).unwrap();
            while running.load(Ordering::Relaxed) {
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let mut ways = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..24 {
        let to = dir.join(format!("copy-{round}.db"));
        let before = acked.load(Ordering::SeqCst);
        let out = {
            let (db, to) = (db.clone(), to.clone());
            tokio::task::spawn_blocking(move || backup(&db, &to))
                .await
                .unwrap()
        };
        succeeded(&out);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let way = report["copied"].as_str().unwrap().to_owned();
        assert!(
            CopyWay::InMemory.reported().contains(&way.as_str()),
            "{report}"
        );
        *ways.entry(way.clone()).or_default() += 1;
        assert_eq!(integrity(&to), "ok", "round {round} ({way})");
        let in_copy = report["readings"].as_u64().unwrap();
        assert!(
            in_copy >= before,
            "round {round} ({way}): {in_copy} < {before}"
        );
        let copy = SqliteStore::open(&to).unwrap();
        assert_eq!(
            copy.stored_readings().await.unwrap(),
            in_copy,
            "round {round}"
        );
        for d in 0..DEVICES {
            let (ours, theirs) = (all_of(&store, d).await, all_of(&copy, d).await);
            assert_eq!(
                ours[..theirs.len()],
                theirs[..],
                "round {round} ({way}), device {d}"
            );
        }
        drop(copy);
        std::fs::remove_file(&to).unwrap();
    }
    running.store(false, Ordering::Relaxed);
    writer.await.unwrap();
    checkpointer.join().unwrap();
    eprintln!("the ways of 24 copies: {ways:?}");
    assert!(
        ways.get("whole file").copied().unwrap_or(0) > 0,
        "no copy of the file as it is in 24: {ways:?}"
    );

    // Closed, its WAL cut: the file as it is.
    let count = store.stored_readings().await.unwrap();
    drop(store);
    let to = dir.join("quiet.db");
    let out = backup(&db, &to);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["copied"], "whole file", "{report}");
    assert_eq!(report["readings"].as_u64(), Some(count));
    let (source, copy) = (std::fs::read(&db).unwrap(), std::fs::read(&to).unwrap());
    assert_eq!(source.len(), copy.len());
    assert_eq!(&source[18..20], &[2, 2], "the store's file is in WAL mode");
    assert_eq!(&copy[18..20], &[1, 1], "the copy is a file on its own");
    assert!(source[..18] == copy[..18] && source[20..] == copy[20..]);
    // Open again, and a frame that a reader (which began with the WAL
    // empty) keeps out of the file: through memory.
    let store = SqliteStore::open(&db).unwrap();
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    reader
        .query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
        .unwrap();
    assert!(store
        .write_readings(&minutes(100_000, 100_001))
        .await
        .unwritten
        .is_empty());
    let to = dir.join("busy.db");
    let out = backup(&db, &to);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["copied"], "through memory", "{report}");
    assert_eq!(report["readings"].as_u64(), Some(count + DEVICES as u64));
    assert_eq!(integrity(&to), "ok");
    reader.execute_batch("COMMIT").unwrap();
    drop((reader, store));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// mimalloc's pages in use at exit, as `MIMALLOC_SHOW_STATS` prints them
/// (its "pages" row's peak), or None where it printed no such row.
fn mimalloc_pages(stderr: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(stderr).lines().find_map(|line| {
        let (name, numbers) = line.split_once(':')?;
        (name.trim() == "pages").then(|| numbers.split_whitespace().next()?.parse().ok())?
    })
}

/// `backup` allocates with glibc's malloc, so that its start and exit do not
/// set up and purge mimalloc's arena (docs/BENCHMARKS.md, "glibc's malloc
/// for a backup"); the other commands keep mimalloc. mimalloc's statistics at
/// exit count the pages it handed out: none for a backup, and a backup
/// still copies and checks every reading.
#[tokio::test]
async fn a_backup_allocates_with_glibc_and_the_other_commands_with_mimalloc() {
    let (dir, db, store) = seeded("allocator", 2).await;
    let count = store.stored_readings().await.unwrap();
    drop(store);
    let to = dir.join("copy.db");
    let out = backup_command(&db, &to)
        .env("MIMALLOC_SHOW_STATS", "1")
        .output()
        .unwrap();
    succeeded(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["readings"].as_u64(), Some(count), "{report}");
    assert_eq!(integrity(&to), "ok");
    assert_eq!(
        mimalloc_pages(&out.stderr),
        None,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version = Command::new(BIN)
        .arg("--version")
        .env("MIMALLOC_SHOW_STATS", "1")
        .output()
        .unwrap();
    succeeded(&version);
    let pages = mimalloc_pages(&version.stderr);
    assert!(
        pages.is_some_and(|p| p > 0),
        "{}",
        String::from_utf8_lossy(&version.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_failed_or_killed_backup_leaves_no_file_and_the_source_whole() {
    let (dir, db, store) = seeded("killed", 20).await;
    let count = store.stored_readings().await.unwrap();
    // A target whose folder does not exist: a clear error, nothing written.
    let nowhere = dir.join("missing").join("copy.db");
    let out = backup(&db, &nowhere);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("backup:"), "{stderr}");
    assert!(!nowhere.exists());
    // No store there: said so.
    let out = backup(&dir.join("none.db"), &dir.join("x.db"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such store file"));
    assert!(!dir.join("x.db").exists());
    // SIGKILL at moments across the copy, either way of copying.
    let to = dir.join("copy.db");
    let mut rng = fastrand::Rng::with_seed(41);
    for round in 0..12 {
        let copy = [CopyWay::InMemory, CopyWay::PageByPage][round % 2];
        let mut child = backup_command(&db, &to)
            .args(copy.args())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(rng.u64(0..60)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        // Under the final name there is nothing, or a whole, checked copy
        // (it finished, or was killed after its rename): never a half file.
        if to.exists() {
            assert_eq!(integrity(&to), "ok");
            std::fs::remove_file(&to).unwrap();
        } else {
            assert!(
                !status.success(),
                "a backup that succeeded left no file ({copy:?})"
            );
        }
        assert_eq!(integrity(&db), "ok");
        assert_eq!(store.stored_readings().await.unwrap(), count);
    }
    // And the next backup after the kills succeeds over any partial file.
    let out = backup(&db, &to);
    succeeded(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["readings"].as_u64(), Some(count));
    assert_eq!(
        SqliteStore::open(&to)
            .unwrap()
            .stored_readings()
            .await
            .unwrap(),
        count
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A real full disk: the backup goes to a tmpfs of 48 KiB, mounted in a
/// mount namespace of its own (`unshare`, as root or in a user namespace),
/// where a store of ten days of four sensors (176 KB) cannot fit. The error says the disk is full,
/// the folder is left empty (no final file, no partial one), and the
/// source is whole.
#[tokio::test]
async fn a_full_disk_during_backup_is_a_clear_error_and_leaves_nothing() {
    let (dir, db, store) = seeded("full", 10).await;
    let count = store.stored_readings().await.unwrap();
    for copy in [CopyWay::InMemory, CopyWay::PageByPage] {
        backup_to_a_full_disk(copy, &dir, &db);
        assert_eq!(integrity(&db), "ok");
        assert_eq!(store.stored_readings().await.unwrap(), count);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn backup_to_a_full_disk(copy: CopyWay, dir: &Path, db: &Path) {
    let small = dir.join(format!("small-{copy:?}"));
    std::fs::create_dir_all(&small).unwrap();
    let script = r#"mount -t tmpfs -o size=48k tmpfs "$1" || exit 99
"$2" backup --db "$3" --to "$1/ingester-backup.db" $4 $5
echo "exit $?"
ls -A "$1""#;
    let out = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&small)
        .arg(BIN)
        .arg(db)
        .args(copy.args())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_ne!(out.status.code(), Some(99), "no tmpfs: {stderr}");
    assert!(
        stdout.starts_with("exit 1\n"),
        "{copy:?}: {stdout} {stderr}"
    );
    assert!(stderr.contains("is full"), "{copy:?}: {stderr}");
    assert_eq!(
        stdout.lines().count(),
        1,
        "left in the full folder ({copy:?}): {stdout}"
    );
}

/// A store whose file is damaged (the blocks table's root page no longer
/// a b-tree page) fails the backup's check, whichever way it copies: exit
/// status 1, an error that names the integrity check, and neither the
/// final file nor the partial one left behind.
#[tokio::test]
async fn a_damaged_store_fails_the_check_and_leaves_no_file() {
    let dir = dir("damaged");
    let db = dir.join("ingester.db");
    {
        let store = SqliteStore::open(&db).unwrap();
        for chunk in minutes(0, 3 * 1440).chunks(1000) {
            assert!(store.write_readings(chunk).await.unwritten.is_empty());
        }
    }
    assert_eq!(integrity(&db), "ok");
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        (
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'blocks'",
                [],
                |r| r.get(0),
            )
            .unwrap(),
            conn.query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap(),
        )
    };
    let mut bytes = std::fs::read(&db).unwrap();
    // A page's first byte is its b-tree type (2, 5, 10 or 13).
    bytes[((root - 1) * page_size) as usize] = 0x7f;
    std::fs::write(&db, &bytes).unwrap();
    for copy in [CopyWay::InMemory, CopyWay::PageByPage] {
        let to = dir.join("backup.db");
        let out = backup_by(copy, &db, &to);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{copy:?}: {stderr}");
        assert!(stderr.contains("integrity check"), "{copy:?}: {stderr}");
        assert!(!to.exists(), "{copy:?}");
        assert!(
            !shared::store::sqlite::partial_name(&to).exists(),
            "{copy:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn restore(from: &Path, db: &Path) -> std::process::Output {
    Command::new(BIN)
        .arg("restore")
        .arg(from)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_restore_is_checked_refused_while_open_and_keeps_what_it_replaces() {
    let (dir, db, store) = seeded("restore", 3).await;
    let saved = dir.join("saved.db");
    assert!(backup(&db, &saved).status.success());
    let at_backup: Vec<Vec<Reading>> = {
        let mut all = Vec::new();
        for d in 0..DEVICES {
            all.push(all_of(&store, d).await);
        }
        all
    };
    // Readings after the backup, which the restore takes back.
    assert!(store
        .write_readings(&minutes(3 * 1440, 3 * 1440 + 60))
        .await
        .unwritten
        .is_empty());
    // A store has the file open: refused, nothing touched.
    let out = restore(&saved, &db);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stop it first"), "{stderr}");
    assert_eq!(all_of(&store, 0).await.len(), 3 * 1440 + 60);
    drop(store);
    // A damaged backup: refused, the store untouched.
    let damaged = dir.join("damaged.db");
    let mut bytes = std::fs::read(&saved).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle..middle + 4096].fill(0xA5);
    std::fs::write(&damaged, &bytes).unwrap();
    let out = restore(&damaged, &db);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, b"not a database at all").unwrap();
    assert!(!restore(&garbage, &db).status.success());
    // Closed: restored, the replaced file kept beside it.
    let out = restore(&saved, &db);
    succeeded(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let replaced = PathBuf::from(report["replaced"].as_str().unwrap());
    let restored = SqliteStore::open(&db).unwrap();
    assert_eq!(
        report["readings"].as_u64(),
        Some(restored.stored_readings().await.unwrap())
    );
    for (d, expected) in at_backup.iter().enumerate() {
        assert_eq!(&all_of(&restored, d).await, expected, "device {d}");
    }
    drop(restored);
    let kept = SqliteStore::open(&replaced).unwrap();
    assert_eq!(
        all_of(&kept, 0).await.len(),
        3 * 1440 + 60,
        "the replaced file is whole"
    );
    drop(kept);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `/health`'s backup check, once `done` holds for it (the schedule runs
/// beside the server).
fn backup_check(
    server: &integration_tests::local_server::LocalServer,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, body) = server.request("GET", "/health", None);
        assert_eq!(status, 200, "{body}");
        let health: serde_json::Value = serde_json::from_str(&body).unwrap();
        let check = integration_tests::health_check(&health, "backup");
        if done(&check) {
            return check;
        }
        assert!(std::time::Instant::now() < deadline, "never: {check}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn serve_backs_up_on_schedule_keeps_the_newest_and_reports_failures() {
    let dir = dir("scheduled");
    let db = dir.join("ingester.db");
    let folder = dir.join("backups");
    let server = integration_tests::local_server::LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            db.to_str().unwrap(),
            "--backup-dir",
            folder.to_str().unwrap(),
            "--backup-every",
            "1s",
            "--backup-keep",
            "2",
        ],
        "info",
    );
    let reading = r#"{"device_id": "meter-1", "timestamp": "2026-11-21T10:00:00Z", "type": "power", "cumulative_kwh_p": 1234.5, "cumulative_kwh_n": 10.25, "current_w": 350}"#;
    let (status, body) = server.request("POST", "/readings", Some(reading));
    assert!(status < 300, "{status} {body}");
    let check = backup_check(&server, |c| {
        c["backups"]["successes"].as_u64() >= Some(3)
            && c["backups"]["last_success"]["readings"].as_u64() == Some(1)
    });
    assert_eq!(check["status"], "pass", "{check}");
    // The newest two are kept: between a new backup's rename and the
    // rotation after it there are three for a moment, never more.
    let list = || -> Vec<PathBuf> {
        std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "db"))
            .collect()
    };
    let counts: Vec<usize> = (0..10)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            list().len()
        })
        .collect();
    assert!(counts.iter().all(|n| (2..=3).contains(n)), "{counts:?}");
    assert!(counts.contains(&2), "{counts:?}");
    let newest = list().into_iter().max().unwrap();
    assert_eq!(integrity(&newest), "ok");
    drop(server);

    // A folder that cannot be: each attempt fails, is reported, and ingest goes on.
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, b"not a folder").unwrap();
    let db2 = dir.join("second.db");
    let server = integration_tests::local_server::LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            db2.to_str().unwrap(),
            "--backup-dir",
            blocked.to_str().unwrap(),
            "--backup-every",
            "1s",
        ],
        "info",
    );
    let check = backup_check(&server, |c| c["backups"]["failures"].as_u64() >= Some(2));
    assert_eq!(check["status"], "fail", "{check}");
    assert!(check["backups"]["last_error"].as_str().is_some(), "{check}");
    let (status, body) = server.request("POST", "/readings", Some(reading));
    assert!(status < 300, "{status} {body}");
    drop(server);

    // Backups of a store in memory cannot work: a settings error (78).
    let out = Command::new(BIN)
        .args(["serve", "--memory", "--addr", "127.0.0.1:0", "--backup-dir"])
        .arg(&folder)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(78),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
