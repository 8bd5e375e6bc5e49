//! Read answers report what they consumed (issue 16): on DynamoDB (dynalite)
//! as the server reports it through `ReturnConsumedCapacity`, and on the
//! embedded store as computed from the size its readings' items would have
//! on DynamoDB with no optional index (the template's default). For a
//! 1000-reading page of a device the two are equal, and both are DynamoDB's
//! rule (0.5 per 4 KB) over those items; a room's page reads the smaller
//! `room-time` entries on DynamoDB; a box search reports what it read.

use integration_tests::{answer, api_event, app, climate, handle, TestStore};
use serde_json::Value;
use shared::api::RouteSet;
use shared::model::{Reading, Timestamp};
use shared::store::format::billing::{read_units, reading_size};
use shared::store::{DynamoStore, Indexes, SqliteStore, Store};

fn history() -> Vec<Value> {
    (0..1000)
        .map(|i| {
            let t = Timestamp::from_millis(1_795_219_200_000 + i * 60_000).unwrap();
            climate(
                "s-bed",
                "bedroom",
                &t.to_string(),
                18.0 + (i % 50) as f64 / 10.0,
                40.0 + (i % 20) as f64,
            )
        })
        .collect()
}

async fn units<S: Store>(store: S) -> Vec<(String, f64)> {
    let app = app(store, None, RouteSet::All).await;
    let body = Value::Array(history()).to_string();
    let (status, _) =
        answer(&handle(&app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
    assert_eq!(status, 200);
    let range = [
        ("from", "2026-11-21T00:00:00Z"),
        ("to", "2026-11-22T00:00:00Z"),
    ];
    let mut out = Vec::new();
    for (path, extra) in [
        ("/devices/s-bed/readings", vec![("limit", "1000")]),
        ("/rooms/bedroom/readings", vec![("limit", "1000")]),
        (
            "/devices/s-bed/search",
            vec![("tmin", "19"), ("tmax", "20")],
        ),
    ] {
        let query: Vec<(&str, &str)> = range.iter().copied().chain(extra).collect();
        let (status, body) = answer(&handle(&app, api_event("GET", path, &query, None, &[])).await);
        let units = match status {
            200 => body["read_units"].as_f64().unwrap(),
            404 if body["error"]["code"] == "index_disabled" => 0.0,
            _ => panic!("{path}: {status} {body}"),
        };
        out.push((path.to_owned(), units));
    }
    out
}

#[tokio::test]
async fn both_engines_report_the_read_units_dynamodb_charges() {
    let dynamo = units(
        DynamoStore::fresh("read-units")
            .await
            .with_indexes(Indexes {
                room_time: true,
                box_search: true,
                all_devices: false,
            }),
    )
    .await;
    let plain = units(
        DynamoStore::fresh("read-units")
            .await
            .with_indexes(Indexes {
                room_time: true,
                box_search: false,
                all_devices: false,
            }),
    )
    .await;
    let sqlite = units(SqliteStore::fresh("read-units").await).await;
    let readings: Vec<Reading> = history()
        .iter()
        .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
        .collect();
    let bytes: usize = readings.iter().map(reading_size).sum();
    // A device's page: the same on both engines, and DynamoDB's rule.
    assert_eq!(plain[0].1, read_units(bytes), "DynamoDB");
    assert_eq!(sqlite[0].1, read_units(bytes), "embedded");
    // With box search on, each reading also carries its `z`: more to read.
    assert!(dynamo[0].1 > plain[0].1);
    // A room's page reads `room-time` entries on DynamoDB: smaller items.
    assert!(
        plain[1].1 > 0.0 && plain[1].1 <= sqlite[1].1,
        "{plain:?} {sqlite:?}"
    );
    // A box search reads index items, returned or not.
    assert!(
        dynamo[2].1 > 0.0 && sqlite[2].1 > 0.0,
        "{dynamo:?} {sqlite:?}"
    );
    assert_eq!(
        plain[2].1, 0.0,
        "box search is off there: a 404 read nothing"
    );
}
