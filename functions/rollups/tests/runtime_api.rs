//! The `rollups` binary under a Lambda Runtime API emulator: the sample
//! stream event, over a dynalite table holding the readings it names,
//! leaves each touched device's hour and day rollups.

use integration_tests::runtime_api::Runtime;
use integration_tests::{dynalite, fresh_store};
use serde_json::{json, Value};
use shared::model::{Reading, Span, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::RollupStore;

fn events(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn the_rollups_binary_keeps_the_rollups_of_the_sample_stream_event() {
    let store = fresh_store(&dynalite(), "bin-rollups").await;
    // The readings the stream event's records are about (the POST fixtures').
    let mut readings: Vec<Reading> = Vec::new();
    for name in ["01-post-reading-power.json", "02-post-readings-batch.json"] {
        let body: Value = serde_json::from_str(events(name)["body"].as_str().unwrap()).unwrap();
        let values = match body {
            Value::Array(values) => values,
            one => vec![one],
        };
        readings.extend(
            values
                .iter()
                .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap()),
        );
    }
    assert!(store.write_readings(&readings).await.unwritten.is_empty());

    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_rollups"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
        ],
    );
    let answer = rt.invoke(events("04-stream-registry.json")).await.unwrap();
    assert_eq!(answer, json!({"batchItemFailures": []}));

    let day = TimeRange::new(
        Timestamp::parse("2026-11-21T00:00:00Z").unwrap(),
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap(),
    )
    .unwrap();
    let bedroom = "sensor-bedroom".parse().unwrap();
    let hours = store.rollups(&bedroom, Span::Hour, &day).await.unwrap();
    assert_eq!(hours.len(), 1);
    assert_eq!(hours[0].all.count, 2, "both bedroom readings of 01:00");
    // The device's newest day is open: its day item is written when the day
    // closes, and aggregates read its hours meanwhile (docs/rollups.md).
    let days = store.rollups(&bedroom, Span::Day, &day).await.unwrap();
    assert!(days.is_empty(), "{days:?}");
    // The meter's two readings, one per record, in the same hour.
    let meter = "meter-1".parse().unwrap();
    let hours = store.rollups(&meter, Span::Hour, &day).await.unwrap();
    assert_eq!(hours.iter().map(|h| h.all.count).sum::<u64>(), 2);
}
