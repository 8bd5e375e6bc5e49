//! Issue 76's bound, at its size: with 100,000 devices in 10,000 rooms on
//! the embedded store, every route that lists the registry (the JSON
//! lists with each filter, the dashboard's overview, room and device
//! pages, the alerts, InfluxQL's schema) answers inside Lambda's 6 MB; the
//! device and room lists, walked by cursor to their end, give every device
//! and room once. (DynamoDB at this size takes minutes to fill on
//! dynalite: `benches/fleet_dynamodb.rs` runs it.)

use integration_tests::{answer, api_event, app, handle};
use serde_json::Value;
use shared::api::RouteSet;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::SqliteStore;
use std::collections::BTreeSet;

const DEVICES: usize = 100_000;
/// Lambda's largest answer.
const LAMBDA_ANSWER: usize = 6 * 1024 * 1024;

fn sensor(i: usize) -> Reading {
    Reading {
        device_id: DeviceId::parse(&format!("sensor-{i:06}")).unwrap(),
        // A tenth of the fleet quiet since October.
        timestamp: Timestamp::parse(if i % 10 == 3 {
            "2026-10-01T00:00:00Z"
        } else {
            "2026-11-21T01:00:00Z"
        })
        .unwrap(),
        measurement: Measurement::climate(
            RoomId::parse(&format!("room-{:05}", i / 10)).unwrap(),
            18.0 + (i % 50) as f64 / 10.0,
            45.0,
        )
        .unwrap(),
    }
}

/// `GET path?query`: its status, its body's size, and its body.
async fn get(
    app: &shared::api::App<SqliteStore>,
    path: &str,
    query: &[(&str, &str)],
) -> (u16, usize, Value) {
    let response = handle(app, api_event("GET", path, query, None, &[])).await;
    let size = match &response.body {
        Some(aws_lambda_events::encodings::Body::Text(t)) => t.len(),
        Some(aws_lambda_events::encodings::Body::Binary(b)) => b.len(),
        _ => 0,
    };
    let (status, body) = answer(&response);
    (status, size, body)
}

/// Every page of a list, by cursor: the ids, each page inside the bound.
async fn walk(
    app: &shared::api::App<SqliteStore>,
    path: &str,
    query: &[(&str, &str)],
    key: &str,
    id: &str,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = query.to_vec();
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let (status, size, page) = get(app, path, &q).await;
        assert_eq!(status, 200, "{path} {q:?}: {page:.300}");
        assert!(size <= LAMBDA_ANSWER, "{path} {q:?}: {size} bytes");
        ids.extend(
            page[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d[id].as_str().unwrap().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn every_list_route_answers_inside_lambda_s_limit_at_100_000_devices() {
    let store = SqliteStore::in_memory().unwrap();
    let readings: Vec<Reading> = (0..DEVICES).map(sensor).collect();
    for batch in readings.chunks(10_000) {
        assert!(store.write_readings(batch).await.unwritten.is_empty());
    }
    let app = app(store, None, RouteSet::All).await;
    assert!(!app.registry.holds_whole(), "a fleet is not held");

    let devices = walk(&app, "/devices", &[], "devices", "device_id").await;
    assert_eq!(devices.len(), DEVICES);
    assert_eq!(
        devices.iter().collect::<BTreeSet<_>>().len(),
        DEVICES,
        "each device once"
    );
    let rooms = walk(&app, "/rooms", &[], "rooms", "room_id").await;
    assert_eq!(rooms.len(), DEVICES / 10);
    let quiet = walk(
        &app,
        "/devices",
        &[
            ("silent_since", "2026-11-01T00:00:00Z"),
            ("type", "climate"),
        ],
        "devices",
        "device_id",
    )
    .await;
    assert_eq!(quiet.len(), DEVICES / 10);
    assert!(quiet.iter().all(|d| d.ends_with('3')));
    for (path, query, key, expected) in [
        ("/devices", vec![("room", "room-04242")], "devices", 10),
        ("/devices", vec![("prefix", "sensor-04242")], "devices", 10),
        ("/devices", vec![("search", "SENSOR-099999")], "devices", 1),
        ("/rooms", vec![("prefix", "room-0424")], "rooms", 10),
        ("/rooms", vec![("search", "room-09999")], "rooms", 1),
    ] {
        let found = walk(
            &app,
            path,
            &query,
            key,
            if key == "devices" {
                "device_id"
            } else {
                "room_id"
            },
        )
        .await;
        assert_eq!(found.len(), expected, "{path} {query:?}");
    }
    let (status, size, room) = get(&app, "/rooms/room-04242", &[]).await;
    assert_eq!(
        (status, room["devices"].as_array().map(Vec::len)),
        (200, Some(10))
    );
    assert!(size <= LAMBDA_ANSWER);

    // The rest of what lists the registry, each inside the bound.
    let schema = [
        (
            "q",
            "SHOW TAG VALUES FROM \"climate\" WITH KEY = \"device_id\"",
        ),
        ("db", "ingester"),
    ];
    for (path, query) in [
        ("/", vec![]),
        ("/", vec![("search", "sensor-09999")]),
        ("/ui/rooms/room-04242", vec![]),
        ("/ui/devices/sensor-042421", vec![]),
        ("/alerts", vec![]),
        ("/alerts/rules", vec![]),
        (
            "/readings",
            vec![
                ("from", "2026-11-21T00:00:00Z"),
                ("to", "2026-11-22T00:00:00Z"),
            ],
        ),
        ("/query", schema.to_vec()),
    ] {
        let (status, size, body) = get(&app, path, &query).await;
        assert_eq!(status, 200, "{path} {query:?}: {body:.300}");
        assert!(size <= LAMBDA_ANSWER, "{path} {query:?}: {size} bytes");
    }
}
