//! `ingester-local migrate` as a user runs it: an embedded file to a DynamoDB
//! table and back (dynalite and moto), a re-run that copies nothing, and a run
//! killed part way (SIGKILL) that resumes where it stopped (moto).

use ingester_local::migrate::Checkpoint;
use integration_tests::{client, dynalite, moto, table_name};
use serde_json::Value;
use shared::model::{DeviceId, Measurement, Name, Reading, RoomId, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use shared::store::{
    Alerts, DynamoStore, Order, RangeRequest, RegistrySnapshot, SqliteStore, Store,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

/// A meter and two room sensors, a reading a minute each.
fn readings(per_device: usize) -> Vec<Reading> {
    let at = |i: usize| Timestamp::from_millis(1_795_219_200_000 + i as i64 * 60_000).unwrap();
    let mut out = Vec::new();
    for i in 0..per_device {
        out.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: at(i),
            measurement: Measurement::power(5210.125 + i as f64 * 0.01, 812.5, 350.0 + i as f64)
                .unwrap(),
        });
        for (device, room) in [("sensor-a", "bedroom"), ("sensor-b", "kitchen")] {
            out.push(Reading {
                device_id: DeviceId::parse(device).unwrap(),
                timestamp: at(i),
                measurement: Measurement::climate(
                    RoomId::parse(room).unwrap(),
                    20.0 + (i % 40) as f64 / 8.0,
                    45.5,
                )
                .unwrap(),
            });
        }
    }
    out
}

/// An alert rule the user put (docs/alerts.md).
const FUSE: &str =
    r#"{"kind":"threshold","scope":{"device":"meter-1"},"quantity":"current_w","above":9000}"#;

/// A file with those readings, the names a user gave and an alert rule.
async fn source_file(dir: &Path, per_device: usize) -> (PathBuf, Vec<Reading>) {
    let path = dir.join("source.db");
    let store = SqliteStore::open(&path).unwrap();
    let data = readings(per_device);
    for chunk in data.chunks(500) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let name = |n: &str| Name::parse(n).unwrap();
    store
        .set_device_profile(
            &DeviceId::parse("meter-1").unwrap(),
            Some(&name("Smart meter")),
            None,
        )
        .await
        .unwrap();
    store
        .set_room_name(&RoomId::parse("kitchen").unwrap(), Some(&name("Kitchen")))
        .await
        .unwrap();
    store.put_alert_rule("fuse", FUSE).await.unwrap();
    (path, data)
}

/// Every reading (device by device, in time order) and the registry of a store.
async fn contents<S: Store>(store: &S) -> (Vec<Reading>, RegistrySnapshot) {
    let registry = store.load_registry().await.unwrap();
    let mut all = Vec::new();
    for device in registry.devices.keys() {
        let mut after = None;
        loop {
            let request = RangeRequest {
                range: TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
                order: Order::Asc,
                limit: 1000,
                after,
            };
            let page = store.device_readings(device, &request).await.unwrap();
            all.extend(page.readings);
            match page.next {
                Some(p) => after = Some(p),
                None => break,
            }
        }
    }
    (all, registry)
}

fn sorted(mut readings: Vec<Reading>) -> Vec<Reading> {
    readings.sort_by(|a, b| (&a.device_id, a.timestamp).cmp(&(&b.device_id, b.timestamp)));
    readings
}

/// Runs `migrate`; its summary (stdout) when it succeeds.
fn migrate(args: &[&str]) -> Result<Value, String> {
    let out = Command::new(BIN)
        .arg("migrate")
        .args(args)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_ACCESS_KEY_ID")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}")))
    } else {
        Err(stderr)
    }
}

fn temp_dir(hint: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("migrate-{hint}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The table, read as the functions read it: a migrated history's closed
/// hours went in as their blocks (BatchBlocks' default, docs/batches.md).
fn dynamo(endpoint: &str, table: &str) -> DynamoStore {
    DynamoStore::new(client(endpoint), table).with_hour_blocks(true)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_moves_to_dynalite_and_back_losing_nothing() {
    round_trip(&dynalite(), "dynalite").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_moves_to_moto_and_back_losing_nothing() {
    round_trip(&moto(), "moto").await;
}

async fn round_trip(endpoint: &str, hint: &str) {
    let dir = temp_dir(hint);
    let (file, data) = source_file(&dir, 120).await;
    let (source_readings, source_registry) = contents(&SqliteStore::open(&file).unwrap()).await;
    assert_eq!(source_readings.len(), data.len());
    let table = table_name("migrate");
    let target = format!("dynamodb:{table}@{endpoint}");
    let file_arg = file.to_str().unwrap();
    let checkpoint = dir.join("to-dynamodb.json");
    let there = [
        "--from",
        file_arg,
        "--to",
        &target,
        "--create-table",
        "--page",
        "100",
        "--checkpoint",
        checkpoint.to_str().unwrap(),
    ];
    let summary = migrate(&there).unwrap();
    assert_eq!(summary["copied"], data.len());
    assert_eq!(summary["source_readings"], data.len());
    assert_eq!(summary["target_readings"], data.len());
    assert_eq!(
        (summary["devices"].clone(), summary["rooms"].clone()),
        (3.into(), 2.into())
    );

    let table_store = dynamo(endpoint, &table);
    let (copied, registry) = contents(&table_store).await;
    assert_eq!(sorted(copied), sorted(source_readings.clone()));
    assert_eq!(registry, source_registry, "names and registry records too");
    assert_eq!(
        table_store.alert_rules().await.unwrap(),
        vec![("fuse".to_owned(), FUSE.to_owned())],
        "alert rules too"
    );

    // A re-run of a finished migration copies nothing and still verifies.
    let again = migrate(&there[..]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again["copied"], 0);
    assert_eq!(again["target_readings"], data.len());

    // And back, to a new file: the same readings and registry.
    let back = dir.join("back.db");
    let summary = migrate(&[
        "--from",
        &target,
        "--to",
        back.to_str().unwrap(),
        "--checkpoint",
        dir.join("back.json").to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(summary["copied"], data.len());
    let (returned, registry) = contents(&SqliteStore::open(&back).unwrap()).await;
    assert_eq!(sorted(returned), sorted(source_readings));
    assert_eq!(registry, source_registry);

    // A checkpoint belongs to one pair of stores.
    let other = dir.join("other.db");
    let err = migrate(&[
        "--from",
        file_arg,
        "--to",
        other.to_str().unwrap(),
        "--checkpoint",
        checkpoint.to_str().unwrap(),
    ])
    .unwrap_err();
    assert!(
        err.contains("is the checkpoint of a migration from"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_migration_resumes_where_it_stopped_and_copies_nothing_twice() {
    let dir = temp_dir("killed");
    let (file, data) = source_file(&dir, 150).await;
    let table = table_name("migrate-kill");
    let target = format!("dynamodb:{table}@{}", moto());
    let checkpoint = dir.join("checkpoint.json");
    let args = [
        "--from",
        file.to_str().unwrap(),
        "--to",
        &target,
        "--create-table",
        "--page",
        "10",
        "--checkpoint",
        checkpoint.to_str().unwrap(),
    ];
    let mut child = Command::new(BIN)
        .arg("migrate")
        .args(args)
        .env("AWS_REGION", "us-east-1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL: no chance to tidy up) once some pages are copied.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reached = Checkpoint::load(&checkpoint).ok().flatten();
        if reached.is_some_and(|c| c.copied >= 50) {
            child.kill().unwrap();
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "it was killed");
    let at_kill = Checkpoint::load(&checkpoint).unwrap().unwrap();
    assert!(!at_kill.done);
    assert!(at_kill.copied > 0 && (at_kill.copied as usize) < data.len());

    let summary = migrate(&args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        summary["copied"].as_u64().unwrap() + at_kill.copied,
        data.len() as u64,
        "the resumed run starts after what the first run recorded"
    );
    assert_eq!(summary["target_readings"], data.len());
    let (copied, _) = contents(&dynamo(&moto(), &table)).await;
    assert_eq!(sorted(copied), sorted(data));
    let done = Checkpoint::load(&checkpoint).unwrap().unwrap();
    assert!(done.done);
    assert_eq!(
        done.copied as usize,
        summary["source_readings"].as_u64().unwrap() as usize
    );
    let _ = std::fs::remove_dir_all(&dir);
}
