//! Rollups on a DynamoDB table written before them (issue 14), as a user
//! meets it: the readings answer alone; once the stream function sees a
//! device, rollups answer from that hour on; `ingester-local rollups
//! rebuild` on the table makes them answer the whole history, with the
//! readings' answers; and a cascade a failed batch left half done heals on
//! the next delivery.

use integration_tests::{answer, api_event, app, dynalite, fresh_store, handle, stream_event_for};
use serde_json::Value;
use shared::api::RouteSet;
use shared::domain::aggregate::rollup::spans;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Span, TimeRange, Timestamp};
use shared::store::DynamoStore;
use shared::store::ReadingStore;
use shared::store::RollupStore;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

/// 2026-11-19T00:00:00Z
const START: i64 = 1_795_046_400_000;

fn reading(device: &str, minute: i64, measurement: Measurement) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(START + minute * 60_000).unwrap(),
        measurement,
    }
}

/// Two days: a meter every 10 minutes (with a dip), a bedroom sensor every 20.
fn history() -> Vec<Reading> {
    let mut out = Vec::new();
    for i in 0..288 {
        let kwh = if i == 100 {
            130.0
        } else {
            100.0 + i as f64 * 0.25
        };
        out.push(reading(
            "meter-1",
            i * 10,
            Measurement::power(kwh, 2.0, 300.0).unwrap(),
        ));
    }
    for i in 0..144 {
        let room = RoomId::parse("bedroom").unwrap();
        let t = 18.0 + (i % 9) as f64 * 0.5;
        out.push(reading(
            "sensor-1",
            i * 20,
            Measurement::climate(room, t, 48.0).unwrap(),
        ));
    }
    out
}

/// An answer without `source` and `items_read`, and those two.
async fn ask(
    app: &shared::api::App<DynamoStore>,
    path: &str,
    query: &[(&str, &str)],
) -> (Value, String) {
    let (status, mut body) = answer(&handle(app, api_event("GET", path, query, None, &[])).await);
    assert_eq!(status, 200, "{path}: {body}");
    let o = body.as_object_mut().unwrap();
    let source = o.remove("source").unwrap().as_str().unwrap().to_owned();
    o.remove("items_read");
    o.remove("read_units");
    (body, source)
}

const QUERIES: [(&str, [(&str, &str); 4]); 3] = [
    (
        "/devices/meter-1/energy",
        [
            ("from", "2026-11-19T00:00:00Z"),
            ("to", "2026-11-21T00:00:00Z"),
            ("bucket", "1d"),
            ("tz", "Europe/Berlin"),
        ],
    ),
    (
        "/devices/meter-1/stats",
        [
            ("from", "2026-11-19T00:00:00Z"),
            ("to", "2026-11-21T00:00:00Z"),
            ("bucket", "1d"),
            ("tz", "UTC"),
        ],
    ),
    (
        "/rooms/bedroom/stats",
        [
            ("from", "2026-11-19T00:00:00Z"),
            ("to", "2026-11-21T00:00:00Z"),
            ("bucket", "1h"),
            ("tz", "UTC"),
        ],
    ),
];

async fn answers(app: &shared::api::App<DynamoStore>) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    for (path, query) in QUERIES {
        out.push(ask(app, path, &query).await);
    }
    out
}

#[tokio::test]
async fn rebuild_on_a_table_from_before_rollups_then_answers_come_from_them() {
    let store = fresh_store(&dynalite(), "cli-rollups").await;
    let data = history();
    for chunk in data.chunks(100) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    // The registry function ran then; the rollups function did not exist yet.
    let r = shared::stream::handle(&store, stream_event_for(&data)).await;
    assert!(r.batch_item_failures.is_empty());
    let query = app(store.clone(), None, RouteSet::Query).await;
    let raw = answers(&query).await;
    assert!(raw.iter().all(|(_, source)| source == "raw"), "{raw:?}");

    // After the upgrade, the stream function sees new readings: rollups are
    // complete from their hour on, the readings answer before it.
    let late: Vec<Reading> = ["meter-1", "sensor-1"]
        .iter()
        .map(|d| {
            let m = if *d == "meter-1" {
                Measurement::power(200.0, 2.0, 1.0).unwrap()
            } else {
                Measurement::climate(RoomId::parse("bedroom").unwrap(), 20.0, 40.0).unwrap()
            };
            reading(d, 2 * 1440 - 5 + 24 * 60, m)
        })
        .collect();
    assert!(store.write_readings(&late).await.unwritten.is_empty());
    let report = shared::stream::rollups::handle_batch(&store, &stream_event_for(&late)).await;
    assert_eq!(report.failed, None);
    let meter = DeviceId::parse("meter-1").unwrap();
    let cover = store
        .rollup_coverage(std::slice::from_ref(&meter))
        .await
        .unwrap();
    assert_eq!(
        cover.map(|c| c.from().to_string()),
        Some("2026-11-21T23:00:00.000Z".to_owned()),
        "from the hour of the first reading it saw, older readings exist"
    );

    // `rollups rebuild` on the table, as a user runs it.
    let out = Command::new(BIN)
        .args(["rollups", "rebuild", "--table", store.table()])
        .args(["--dynamodb-endpoint", &dynalite()])
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let everything = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let mut kept = 0;
    for device in ["meter-1", "sensor-1"] {
        let device = DeviceId::parse(device).unwrap();
        for span in [Span::Hour, Span::Day] {
            kept += store
                .rollups(&device, span, &everything)
                .await
                .unwrap()
                .len();
        }
    }
    // Two days and the late hour, for two devices: 49 hours and 3 days each.
    assert_eq!(kept, 2 * (49 + 3));
    assert_eq!(
        summary,
        serde_json::json!({"devices": 2, "rollups_written": kept})
    );
    let cover = store
        .rollup_coverage(std::slice::from_ref(&meter))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cover.from().to_string(), "2026-11-19T00:00:00.000Z");

    // The readings' answers, now that the late readings are in.
    let baseline = app(store.clone().with_rollup_lag(None), None, RouteSet::Query).await;
    let raw = answers(&baseline).await;
    let rebuilt = answers(&query).await;
    for ((got, source), (want, _)) in rebuilt.iter().zip(&raw) {
        assert_eq!(source, "rollups", "{got}");
        assert_eq!(got, want);
    }

    // A cascade left half done (an hour entered with a chain that is not the
    // one leaving the hour before) heals when a batch touches the hour before.
    let hour = |m: i64| Timestamp::from_millis(START + m * 60_000).unwrap();
    let hour_2 = TimeRange::new(hour(120), hour(180)).unwrap();
    let mine: Vec<Reading> = data
        .iter()
        .filter(|r| r.device_id == meter && hour_2.contains(r.timestamp))
        .cloned()
        .collect();
    let wrong = spans(Span::Hour, Default::default(), mine.iter())
        .pop()
        .unwrap();
    let right = store.rollups(&meter, Span::Hour, &hour_2).await.unwrap();
    assert_ne!(right, vec![wrong.clone()]);
    store.put_rollup(&meter, &wrong).await.unwrap();
    let before: Vec<Reading> = data
        .iter()
        .filter(|r| r.device_id == meter && r.timestamp < hour(120))
        .rev()
        .take(1)
        .cloned()
        .collect();
    let report = shared::stream::rollups::handle_batch(&store, &stream_event_for(&before)).await;
    assert_eq!(report.failed, None);
    assert_eq!(
        store.rollups(&meter, Span::Hour, &hour_2).await.unwrap(),
        right
    );
    assert_eq!(answers(&query).await, rebuilt);
}
