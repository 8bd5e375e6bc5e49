//! `ingester-local blocks rebuild` on a DynamoDB table written before blocks
//! (issue 24, docs/blocks.md), on dynalite: a run that resumes after the
//! devices its checkpoint names, then a whole run; afterwards, with the raw
//! items before the raw window's cutoff gone, a range reads every reading.

use integration_tests::{dynalite, expire_raw_before, fresh_store, RawItems};
use serde_json::Value;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Span, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::{Order, RangeRequest, Retention};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");
const HOUR: i64 = 3_600_000;

fn rebuild(table: &str, checkpoint: &std::path::Path) -> Value {
    let out = Command::new(BIN)
        .args(["blocks", "rebuild", "--table", table])
        .args(["--dynamodb-endpoint", &dynalite()])
        .arg("--checkpoint")
        .arg(checkpoint)
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn rebuild_gives_every_hour_its_block_and_resumes_after_the_devices_done() {
    let store = fresh_store(&dynalite(), "blocks-rebuild").await;
    // Two devices, every 7 minutes from 40 hours ago to 20 hours ago; the
    // rollups function never ran, so no hour has an item.
    let start = Span::Hour.start_of(Timestamp::now()).millis() - 40 * HOUR;
    let mut readings = Vec::new();
    for i in 0..(20 * 60 / 7) {
        let t = Timestamp::from_millis(start + i * 7 * 60_000).unwrap();
        readings.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: t,
            measurement: Measurement::power(100.0 + i as f64 * 0.125, 0.0, 300.0).unwrap(),
        });
        readings.push(Reading {
            device_id: DeviceId::parse("sensor-1").unwrap(),
            timestamp: t,
            measurement: Measurement::climate(
                RoomId::parse("lab").unwrap(),
                (2000 + i % 13) as f64 / 100.0,
                48.5,
            )
            .unwrap(),
        });
    }
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    // The registry function ran (devices are listed from the registry).
    let event = integration_tests::stream_event_for(&readings);
    assert!(shared::stream::handle(&store, event)
        .await
        .batch_item_failures
        .is_empty());

    let dir = std::env::temp_dir().join(format!("blocks-rebuild-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let checkpoint = dir.join("checkpoint.json");
    // A run that stopped after meter-1: this one does sensor-1 only.
    std::fs::write(&checkpoint, r#"{"done": ["meter-1"], "written": 0}"#).unwrap();
    let first = rebuild(store.table(), &checkpoint);
    assert_eq!(first["devices"], 2);
    assert_eq!(first["resumed_after"], 1);
    assert!(
        !checkpoint.exists(),
        "a finished run removes its checkpoint"
    );
    let hour_item = |device: &str, h: i64| {
        let store = store.clone();
        let device = device.to_owned();
        let hour = Timestamp::from_millis(start + h * HOUR).unwrap();
        async move {
            let sk = shared::keys::rollup_sk(Span::Hour, hour);
            store.raw_item(&device, &sk).await.map(
                std::collections::HashMap::<String, aws_sdk_dynamodb::types::AttributeValue>::from,
            )
        }
    };
    assert!(
        hour_item("meter-1", 3).await.is_none(),
        "skipped: done before"
    );
    assert!(hour_item("sensor-1", 3)
        .await
        .unwrap()
        .contains_key(shared::keys::attr::BLOCK));

    let second = rebuild(store.table(), &checkpoint);
    assert_eq!(second["resumed_after"], 0);
    // 20 hours and 2 days of each device.
    assert!(second["items_written"].as_u64().unwrap() >= 2 * 21);
    for h in 0..20 {
        for device in ["meter-1", "sensor-1"] {
            let item = hour_item(device, h).await.unwrap();
            assert!(
                item.contains_key(shared::keys::attr::BLOCK),
                "{device} hour {h}"
            );
        }
    }

    // TTL past a day's raw window: every raw item before the cutoff goes.
    let windowed = store.clone().with_raw_window(Retention::days(1));
    let cutoff = windowed.raw_cutoff().unwrap();
    let gone = expire_raw_before(&store, &readings, cutoff).await;
    assert!(gone > 100, "{gone} raw items gone");
    for device in ["meter-1", "sensor-1"] {
        let device = DeviceId::parse(device).unwrap();
        let page = windowed
            .device_readings(
                &device,
                &RangeRequest {
                    range: TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
                    order: Order::Asc,
                    limit: 1000,
                    after: None,
                },
            )
            .await
            .unwrap();
        let mine: Vec<Reading> = readings
            .iter()
            .filter(|r| r.device_id == device)
            .cloned()
            .collect();
        assert_eq!(page.readings, mine, "{device}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
