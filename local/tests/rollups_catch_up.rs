//! Upgrades finish themselves (issue 79): `ingester-local serve` on a file
//! whose gas meter's rollups an earlier build wrote (without gas) rebuilds
//! them in the background, says so in its log and on `GET /health`, and
//! answers the meter's gas the same before and after.

use integration_tests::local_server::LocalServer;
use integration_tests::rollups_as_before_volumes;
use serde_json::Value;
use shared::model::{DeviceId, Measurement, Quantity, Reading, Span, Timestamp, HOUR_MS};
use shared::store::{ReadingStore, SqliteStore};
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

fn get(server: &LocalServer, path: &str) -> Value {
    let (status, text) = server.request("GET", path, None);
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

fn rollups_check(server: &LocalServer) -> Value {
    let health = get(server, "/health");
    health["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "rollups")
        .cloned()
        .unwrap_or_else(|| panic!("no rollups check: {health}"))
}

#[tokio::test]
async fn a_store_with_rollups_from_before_gas_rebuilds_them_in_the_background() {
    let dir = std::env::temp_dir().join(format!("catch-up-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ingester.db");
    // Three closed days of a P1 meter (electricity and gas) and a plug.
    let start = Span::Day.start_of(Timestamp::now()).millis() - 4 * 24 * HOUR_MS;
    let at = |i: i64| Timestamp::from_millis(start + i * 10 * 60_000).unwrap();
    let mut readings = Vec::new();
    for i in 0..3 * 144 {
        readings.push(Reading {
            device_id: DeviceId::parse("p1-meter").unwrap(),
            timestamp: at(i),
            measurement: Measurement::new(
                None,
                vec![
                    (Quantity::EnergyBought, 500.0 + i as f64 * 0.125),
                    (Quantity::Gas, 4021.117 + (i / 3) as f64 * 0.011),
                ],
            )
            .unwrap(),
        });
        readings.push(Reading {
            device_id: DeviceId::parse("plug").unwrap(),
            timestamp: at(i),
            measurement: Measurement::power(10.0 + i as f64 * 0.01, 0.0, 40.0).unwrap(),
        });
    }
    {
        let store = SqliteStore::open(&file).unwrap();
        assert!(store.write_readings(&readings).await.unwritten.is_empty());
    }
    let energy = |server: &LocalServer| {
        let from = Timestamp::from_millis(start).unwrap().to_string();
        let body = get(
            server,
            &format!("/devices/p1-meter/energy?from={from}&bucket=1d"),
        );
        body["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["m3_gas"].as_f64().unwrap_or(f64::NAN))
            .collect::<Vec<f64>>()
    };
    // The answers of fresh rollups, before the file is made old.
    let fresh = {
        let server = LocalServer::start(Path::new(BIN), &["--db", file.to_str().unwrap()], "info");
        let answer = energy(&server);
        let check = rollups_check(&server);
        assert_eq!(check["rollups"]["devices"], 0, "{check}");
        drop(server);
        answer
    };
    assert_eq!(fresh.len(), 3, "{fresh:?}");
    assert!(rollups_as_before_volumes(&file) >= 3);

    let server = LocalServer::start(Path::new(BIN), &["--db", file.to_str().unwrap()], "info");
    // Right while (or after) it rebuilds: from the readings until then.
    assert_eq!(energy(&server), fresh);
    let deadline = Instant::now() + Duration::from_secs(30);
    let check = loop {
        let check = rollups_check(&server);
        if check["rollups"]["finished"] == true {
            break check;
        }
        assert!(Instant::now() < deadline, "never finished: {check}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The meter alone: the plug's rollups hold all it reports.
    assert_eq!(check["rollups"]["devices"], 1, "{check}");
    assert_eq!(check["rollups"]["rebuilt"], 1, "{check}");
    assert_eq!(check["status"], "pass");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("rebuilt: 1 devices"),
        "{check}"
    );
    assert_eq!(energy(&server), fresh);
    let log = server.log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("rollups rebuilt") && l.contains("p1-meter")),
        "{log:?}"
    );
    drop(server);
    // Nothing is left for the next start.
    let server = LocalServer::start(Path::new(BIN), &["--db", file.to_str().unwrap()], "info");
    let deadline = Instant::now() + Duration::from_secs(30);
    while rollups_check(&server)["rollups"]["finished"] != true {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(rollups_check(&server)["rollups"]["devices"], 0);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
