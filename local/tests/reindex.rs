//! `ingester-local reindex` on dynalite: readings written while the optional
//! indexes were off (or before they existed) get their keys, in parallel
//! segments; the feed and the box search then see every reading; a second run
//! changes nothing; a run resumes from its checkpoint; nothing is removed.

use integration_tests::{client, dynalite, table_name, RawItems};
use serde_json::Value;
use shared::model::{DeviceId, Measurement, Reading, RoomId, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::{DynamoStore, Indexes, Order, RangeRequest};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

fn readings() -> Vec<Reading> {
    let at = |i: i64| Timestamp::from_millis(1_795_219_200_000 + i * 60_000).unwrap();
    let mut out = Vec::new();
    for i in 0..120 {
        out.push(Reading {
            device_id: DeviceId::parse(&format!("sensor-{}", i % 6)).unwrap(),
            timestamp: at(i),
            measurement: Measurement::climate(
                RoomId::parse("bedroom").unwrap(),
                20.0 + (i % 9) as f64,
                45.0,
            )
            .unwrap(),
        });
        out.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: at(i),
            measurement: Measurement::power(100.0 + i as f64, 1.0, 300.0).unwrap(),
        });
    }
    out
}

async fn feed(store: &DynamoStore) -> usize {
    let range = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let page = store
        .all_readings(&RangeRequest {
            range,
            order: Order::Asc,
            limit: 1000,
            after: None,
        })
        .await
        .unwrap();
    page.readings.len()
}

fn reindex(table: &str, extra: &[&str]) -> Result<Value, String> {
    let out = Command::new(BIN)
        .args([
            "reindex",
            "--table",
            table,
            "--dynamodb-endpoint",
            &dynalite(),
        ])
        .args(extra)
        .env("AWS_REGION", "us-east-1")
        // The stack's settings after turning both indexes on.
        .env("ROOM_INDEX", "enabled")
        .env("BOX_SEARCH", "enabled")
        .env("ALL_DEVICES_FEED", "enabled")
        .output()
        .unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[tokio::test]
async fn reindex_gives_every_reading_the_keys_of_the_indexes_that_are_on() {
    let table = table_name("reindex");
    let full = DynamoStore::new(client(&dynalite()), &table);
    full.create_table().await.unwrap();
    // Written while both optional indexes were off.
    let off = full.clone().with_indexes(Indexes {
        room_time: true,
        box_search: false,
        all_devices: false,
    });
    let data = readings();
    assert!(off.write_readings(&data).await.unwritten.is_empty());
    // And one reading in the shape from before issue 7 (no index keys at all).
    let before: serde_dynamo::Item = serde_json::from_value(serde_json::json!({
        "pk": {"S": "sensor-old"}, "sk": {"S": "TS#2026-11-21T05:00:00.000Z"}, "type": {"S": "climate"},
        "room": {"S": "bedroom"}, "temperature": {"N": "19.5"}, "humidity": {"N": "50"}
    }))
    .unwrap();
    full.put_raw(before).await;
    assert_eq!(feed(&full).await, 0, "nothing in the feed yet");

    // A run stopped after segment 0 of 2 (its checkpoint says so) does segment 1 only.
    let dir = std::env::temp_dir().join(format!("reindex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let checkpoint = dir.join("checkpoint.json");
    std::fs::write(
        &checkpoint,
        r#"{"segments":2,"next":[null,null],"done":[true,false],"scanned":0,"updated":0}"#,
    )
    .unwrap();
    let cp = checkpoint.to_str().unwrap();
    let err = reindex(&table, &["--segments", "3", "--checkpoint", cp]).unwrap_err();
    assert!(err.contains("--segments 2"), "{err}");
    let first = reindex(&table, &["--segments", "2", "--checkpoint", cp]).unwrap();
    assert!(!checkpoint.exists(), "a finished run leaves no checkpoint");
    let partly = feed(&full).await;
    assert!(
        partly > 0 && partly < data.len() + 1,
        "{partly}: one segment's readings"
    );
    assert_eq!(first["updated"].as_u64().unwrap() as usize, partly);

    // The rest, in three segments.
    let second = reindex(&table, &["--segments", "3", "--checkpoint", cp]).unwrap();
    assert_eq!(second["scanned"].as_u64().unwrap() as usize, data.len() + 1);
    assert_eq!(
        first["updated"].as_u64().unwrap() + second["updated"].as_u64().unwrap(),
        data.len() as u64 + 1
    );
    assert_eq!(
        feed(&full).await,
        data.len() + 1,
        "every reading in the feed"
    );
    let old = full
        .raw_item("sensor-old", "TS#2026-11-21T05:00:00.000Z")
        .await
        .unwrap();
    let old: Value = serde_json::to_value(old).unwrap();
    for key in ["z", "shard", "ats"] {
        assert!(old.get(key).is_some(), "the old reading has {key}: {old}");
    }
    // Power readings get no z (they are in no box); nothing else changed.
    let meter: Value = serde_json::to_value(
        full.raw_item("meter-1", "TS#2026-11-21T00:00:00.000Z")
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(meter.get("z").is_none() && meter.get("shard").is_some());
    assert_eq!(meter["current_w"], serde_json::json!({"N": "300"}));

    // Again: nothing to do.
    let third = reindex(&table, &["--checkpoint", cp]).unwrap();
    assert_eq!(third["updated"], 0);

    // Turning the feed off removes nothing.
    let fourth = reindex(
        &table,
        &["--checkpoint", cp, "--all-devices-feed", "disabled"],
    )
    .unwrap();
    assert_eq!(fourth["updated"], 0);
    assert_eq!(feed(&full).await, data.len() + 1);
    std::fs::remove_dir_all(&dir).ok();
}
