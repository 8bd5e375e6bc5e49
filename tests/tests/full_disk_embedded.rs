//! A full disk on the embedded store, through HTTP (issue 24): a write that
//! needs a page the file may not grow by is a 503 whose error names every
//! reading of the batch, and nothing of it is stored.

use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::{SqliteStore, Store};

fn make(device: u8, minute: i64, x: f64) -> Reading {
    let device_id = DeviceId::parse(["meter-1", "sensor-1", "sensor-2"][device as usize]).unwrap();
    let measurement = match device {
        0 => Measurement::power(1000.0 + minute as f64 * 0.01, 2.0, 100.0 + x),
        1 => Measurement::climate(RoomId::parse("bedroom").unwrap(), 15.0 + x * 10.0, 50.0),
        _ => Measurement::climate(RoomId::parse("hall").unwrap(), 15.0 + x, 40.0 + x),
    };
    Reading {
        device_id,
        timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap(),
        measurement: measurement.unwrap(),
    }
}

/// The same through HTTP, as a device meets it: a 503 whose error names every
/// reading of the batch as unwritten, and nothing of it stored.
#[tokio::test]
async fn a_full_disk_is_a_503_naming_every_unwritten_reading() {
    let dir = std::env::temp_dir().join(format!("full-disk-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let first: Vec<Reading> = (0..1440).map(|m| make(1, m, 0.1)).collect();
    assert!(store.write_readings(&first).await.unwritten.is_empty());
    store.cap_file_for_tests(true).unwrap();
    let app = shared::api::App::new(
        store.clone(),
        shared::api::Access::open(),
        shared::api::RouteSet::All,
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap();
    // A full batch of three devices from the last minutes: hot rows, which
    // need pages the file may not grow by.
    let now = Timestamp::now().millis();
    let body: Vec<serde_json::Value> = (0..1000)
        .map(|m| {
            let r = make((m % 3) as u8, m, (m % 10) as f64 / 10.0);
            let at = Timestamp::from_millis(now - (1000 - m) * 1000).unwrap();
            let mut v = serde_json::json!({
                "device_id": r.device_id.as_str(),
                "timestamp": at.to_string(),
                "type": r.kind().as_str(),
            });
            if let Some(room) = r.room() {
                v["room"] = room.as_str().into();
            }
            for (q, x) in r.measurement.values() {
                v[q.name()] = (*x).into();
            }
            v
        })
        .collect();
    let body = serde_json::to_string(&body).unwrap();
    let (status, answer) = integration_tests::answer(
        &integration_tests::handle(
            &app,
            integration_tests::api_event("POST", "/readings", &[], Some(&body), &[]),
        )
        .await,
    );
    assert_eq!(status, 503, "{answer}");
    let unwritten: Vec<u64> = answer["error"]["unwritten"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(unwritten, (0..1000).collect::<Vec<u64>>());
    assert_eq!(answer["error"]["written"], 0);
    assert_eq!(store.stored_readings().await.unwrap(), 1440);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
