//! A full disk on the embedded store, through HTTP (issue 24): a write that
//! needs a page the file may not grow by is a 503 whose error names every
//! reading of the batch, and nothing of it is stored.

use integration_tests::{
    answer, api_event, app, assert_every_reading_unwritten, climate, handle, power,
};
use shared::api::RouteSet;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::SqliteStore;

/// As a device meets it: a 503 whose error names every reading of the batch
/// as unwritten, and nothing of it stored.
#[tokio::test]
async fn a_full_disk_is_a_503_naming_every_unwritten_reading() {
    let dir = std::env::temp_dir().join(format!("full-disk-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    // A day of one sensor, stored before the disk fills.
    let first: Vec<Reading> = (0..1440)
        .map(|m| Reading {
            device_id: DeviceId::parse("sensor-1").unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + m * 60_000).unwrap(),
            measurement: Measurement::climate(RoomId::parse("bedroom").unwrap(), 16.0, 50.0)
                .unwrap(),
        })
        .collect();
    assert!(store.write_readings(&first).await.unwritten.is_empty());
    store.cap_file_for_tests(true).unwrap();
    let app = app(store.clone(), None, RouteSet::All).await;
    // A full batch of three devices from the last minutes: hot rows, which
    // need pages the file may not grow by.
    let now = Timestamp::now().millis();
    let body: Vec<serde_json::Value> = (0..1000i64)
        .map(|m| {
            let at = Timestamp::from_millis(now - (1000 - m) * 1000)
                .unwrap()
                .to_string();
            let x = (m % 10) as f64 / 10.0;
            match m % 3 {
                0 => power("meter-1", &at, 1000.0 + m as f64 * 0.01, 2.0, 100.0 + x),
                1 => climate("sensor-1", "bedroom", &at, 15.0 + x * 10.0, 50.0),
                _ => climate("sensor-2", "hall", &at, 15.0 + x, 40.0 + x),
            }
        })
        .collect();
    let body = serde_json::to_string(&body).unwrap();
    let (status, answer) =
        answer(&handle(&app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
    assert_eq!(status, 503, "{answer}");
    assert_every_reading_unwritten(&answer, 1000);
    assert_eq!(store.stored_readings().await.unwrap(), 1440);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
