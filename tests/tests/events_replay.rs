//! Every file in `events/` replayed through the real handlers on every engine
//! (`on_every_store!`), in an order that makes each answer meaningful, with the
//! answers checked; and the two engines give identical answers.

use integration_tests::handle;
use integration_tests::{answer, app, on_every_store, stream_event_for, TestStore};
use serde_json::{json, Value};
use shared::api::RouteSet;
use shared::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use shared::aws_lambda_events::event::dynamodb::Event;
use std::path::PathBuf;

fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events")
}

fn load(name: &str) -> Value {
    let text =
        std::fs::read_to_string(events_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn api(name: &str) -> ApiGatewayV2httpRequest {
    serde_json::from_value(load(name))
        .unwrap_or_else(|e| panic!("{name} is not an API Gateway v2 event: {e}"))
}

fn stream(name: &str) -> Event {
    serde_json::from_value(load(name))
        .unwrap_or_else(|e| panic!("{name} is not a DynamoDB Streams event: {e}"))
}

/// The files this test replays, in order. A new fixture must be added here.
const ORDER: [&str; 17] = [
    "01-post-reading-power.json",
    "02-post-readings-batch.json",
    "03-post-readings-invalid.json",
    "04-stream-registry.json",
    "05-get-devices.json",
    "06-get-device.json",
    "07-get-device-readings.json",
    "08-get-device-latest.json",
    "09-get-rooms.json",
    "10-get-room.json",
    "11-get-room-readings.json",
    "12-get-device-stats.json",
    "13-iot-rule-tasmota.json",
    "14-iot-rule-zigbee2mqtt.json",
    "15-influxql-query.json",
    "16-post-readings-bought-only.json",
    "17-get-device-energy.json",
];

#[test]
fn every_fixture_is_replayed() {
    let mut files: Vec<String> = std::fs::read_dir(events_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = ORDER.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
    // docs/lambda-emulator.md says which function takes each file, every
    // one by name.
    let doc = std::fs::read_to_string(events_dir().join("../docs/lambda-emulator.md")).unwrap();
    let table = doc
        .split("Which function takes each file:")
        .nth(1)
        .expect("docs/lambda-emulator.md's replay table");
    for file in &files {
        assert!(
            table.contains(&format!("`{file}`")),
            "docs/lambda-emulator.md: which function takes {file}?"
        );
    }
}

async fn fixtures_replay_through_the_handlers<S: TestStore>() {
    let store = S::fresh("replay").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let run = |name: &'static str| {
        let ingest = &ingest;
        async move { answer(&handle(ingest, api(name)).await) }
    };
    assert_eq!(
        run("01-post-reading-power.json").await,
        (200, json!({"written": 1}))
    );
    assert_eq!(
        run("02-post-readings-batch.json").await,
        (200, json!({"written": 4}))
    );
    let (status, body) = run("03-post-readings-invalid.json").await;
    assert_eq!(status, 400);
    let fields: Vec<(u64, &str)> = body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["index"].as_u64().unwrap(), d["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fields,
        vec![
            (1, "device_id"),
            (1, "timestamp"),
            (1, "temprature"),
            (1, "room"),
            (1, "humidity")
        ]
    );

    let response = shared::stream::handle(&store, stream("04-stream-registry.json")).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    // The same stream batch reaches the rollups function (a no-op on the
    // embedded store, which keeps rollups in the write transaction).
    let response = shared::stream::rollups::handle(&store, stream("04-stream-registry.json")).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let registry = store.load_registry().await.unwrap();
    assert_eq!(
        registry.devices.len(),
        3,
        "the TTL removal and the registry's own record changed nothing"
    );
    let meter = &registry.devices[&"meter-1".parse().unwrap()];
    assert_eq!(
        meter.first_seen.unwrap().to_string(),
        "2026-11-21T01:00:00.000Z",
        "the 2025 TTL removal is ignored"
    );

    let query = app(store.clone(), None, RouteSet::Query).await;
    let get = |name: &'static str| {
        let query = &query;
        async move {
            let (status, body) = answer(&handle(query, api(name)).await);
            assert_eq!(status, 200, "{name}: {body}");
            body
        }
    };
    let devices = get("05-get-devices.json").await;
    let ids: Vec<&str> = devices["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["meter-1", "sensor-bedroom", "sensor-kitchen"]);
    let device = get("06-get-device.json").await;
    assert_eq!(device["device"]["latest"]["current_w"], json!(-120.0));
    assert_eq!(device["device"]["types"], json!(["power"]));
    let page = get("07-get-device-readings.json").await;
    assert_eq!(page["readings"][0]["timestamp"], "2026-11-21T01:00:00.000Z");
    assert!(
        page["next_cursor"].is_string(),
        "limit=1 of 2 readings leaves a cursor"
    );
    assert_eq!(
        get("08-get-device-latest.json").await["reading"]["timestamp"],
        "2026-11-21T01:05:00.000Z"
    );
    let rooms = get("09-get-rooms.json").await;
    assert_eq!(rooms["rooms"].as_array().unwrap().len(), 2);
    let room = get("10-get-room.json").await;
    assert_eq!(room["room"]["devices"], json!(["sensor-bedroom"]));
    assert_eq!(
        room["room"]["latest"]["temperature"],
        json!(21.7),
        "the MODIFY's new image"
    );
    let readings = get("11-get-room-readings.json").await;
    let temps: Vec<f64> = readings["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(temps, vec![21.7, 21.5]);
    let stats = get("12-get-device-stats.json").await;
    let hour = &stats["buckets"][0];
    assert_eq!(
        (
            stats["buckets"].as_array().unwrap().len(),
            &hour["start"],
            &hour["count"]
        ),
        (1, &json!("2026-11-21T01:00:00.000Z"), &json!(2))
    );
    assert_eq!(
        hour["fields"]["temperature"],
        json!({"min": 21.5, "max": 21.7, "mean": 21.6, "count": 2})
    );
    // Both engines answer from the hour rollup: the embedded store's, kept in
    // the write transaction, and DynamoDB's, kept by the rollups stream handler.
    assert_eq!(
        (
            stats["source"].as_str().unwrap(),
            stats["items_read"].as_u64().unwrap()
        ),
        ("rollups", 1)
    );

    // Grafana's InfluxDB data source (issue 27): a dashboard panel's query,
    // hourly means of the bedroom sensor, the empty hour filled with null.
    let dashboard = app(store.clone(), None, RouteSet::Dashboard).await;
    let (status, influx) = answer(&handle(&dashboard, api("15-influxql-query.json")).await);
    assert_eq!(status, 200, "{influx}");
    let series = &influx["results"][0]["series"][0];
    assert_eq!(series["columns"], json!(["time", "mean", "count"]));
    let rows = series["values"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{influx}");
    assert_eq!(rows[0], json!([1_795_219_200_000i64, null, 0]));
    assert_eq!(rows[1][0], json!(1_795_222_800_000i64));
    assert!((rows[1][1].as_f64().unwrap() - 21.6).abs() < 1e-9);
    assert_eq!(rows[1][2], json!(2));

    // IoT Core topic rule messages (issue 26): a Tasmota plug with a
    // climate sensor, a Zigbee2MQTT sensor; neither names a room.
    for (name, device) in [
        ("13-iot-rule-tasmota.json", "pow-1"),
        ("14-iot-rule-zigbee2mqtt.json", "hall-sensor"),
    ] {
        let message: shared::mqtt::iot_rule::RuleMessage =
            serde_json::from_value(load(name)).unwrap();
        let outcome = shared::mqtt::iot_rule::handle(&store, &ingest.registry, &message)
            .await
            .unwrap();
        assert_eq!((outcome.written, outcome.rejected), (1, None), "{name}");
        let (status, body) = answer(
            &handle(
                &query,
                integration_tests::api_event(
                    "GET",
                    &format!("/devices/{device}/latest"),
                    &[],
                    None,
                    &[],
                ),
            )
            .await,
        );
        assert_eq!(status, 200, "{body}");
        if device == "pow-1" {
            assert_eq!(body["reading"]["cumulative_kwh_p"], json!(123.456));
            assert_eq!(body["reading"]["current_w"], json!(150.0));
            assert_eq!(body["reading"]["temperature"], json!(21.4));
            assert_eq!(
                body["reading"]["timestamp"], "2026-11-21T02:00:00.000Z",
                "the receive time"
            );
        } else {
            assert_eq!(body["reading"]["pressure_hpa"], json!(1012.4));
            assert_eq!(body["reading"]["battery_pct"], json!(87.0));
        }
    }

    // A plug that reports its bought counter alone (issue 38): its energy
    // per hour, from the rollups each engine keeps.
    assert_eq!(
        run("16-post-readings-bought-only.json").await,
        (200, json!({"written": 4}))
    );
    let written: Vec<shared::model::Reading> = serde_json::from_str::<Vec<Value>>(
        load("16-post-readings-bought-only.json")["body"]
            .as_str()
            .unwrap(),
    )
    .unwrap()
    .iter()
    .map(|r| {
        shared::model::Reading::from_json(r, shared::model::Timestamp::now(), |_| None).unwrap()
    })
    .collect();
    let response = shared::stream::rollups::handle(&store, stream_event_for(&written)).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let energy = get("17-get-device-energy.json").await;
    let buckets: Vec<(&str, f64, f64)> = energy["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                &b["start"].as_str().unwrap()[11..16],
                b["kwh_bought"].as_f64().unwrap(),
                b["kwh_sold"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        buckets,
        vec![("00:00", 1.25, 0.0), ("01:00", 0.75, 0.0)],
        "{energy}"
    );
    assert_eq!(energy["kwh_bought"], json!(2.0));
}

async fn a_poison_record_is_reported_by_sequence_number_and_the_rest_applied<S: TestStore>() {
    let store = S::fresh("poison").await;
    let mut event = load("04-stream-registry.json");
    // Record 2 (sensor-bedroom INSERT) gets a temperature that is not a number.
    event["Records"][2]["dynamodb"]["NewImage"]["temperature"] = json!({"S": "warm"});
    let poisoned_seq = event["Records"][2]["dynamodb"]["SequenceNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    let event: Event = serde_json::from_value(event).unwrap();
    let response = shared::stream::handle(&store, event).await;
    let ids: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone().unwrap())
        .collect();
    assert_eq!(ids, vec![poisoned_seq]);
    // Everything else was applied, including records after the poison one.
    let registry = store.load_registry().await.unwrap();
    assert!(registry
        .devices
        .contains_key(&"sensor-kitchen".parse().unwrap()));
    assert!(registry.devices.contains_key(&"meter-1".parse().unwrap()));
    let bedroom = &registry.devices[&"sensor-bedroom".parse().unwrap()];
    assert_eq!(
        bedroom.first_seen.unwrap().to_string(),
        "2026-11-21T01:05:00.000Z",
        "only the MODIFY of it was good"
    );
}

async fn registry_converges_under_duplicate_and_reversed_delivery<S: TestStore>() {
    use shared::model::{Reading, Timestamp};
    let body: Vec<Value> = serde_json::from_str(
        load("02-post-readings-batch.json")["body"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let mut readings: Vec<Reading> = body
        .iter()
        .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
        .collect();
    let first: Value =
        serde_json::from_str(load("01-post-reading-power.json")["body"].as_str().unwrap()).unwrap();
    readings.push(Reading::from_json(&first, Timestamp::now(), |_| None).unwrap());

    let forward = S::fresh("converge-a").await;
    let r = shared::stream::handle(&forward, stream_event_for(&readings)).await;
    assert!(r.batch_item_failures.is_empty());
    let expected = forward.load_registry().await.unwrap();
    assert_eq!(expected.devices.len(), 3);
    // The same batch again, then every record alone in reverse order.
    assert!(
        shared::stream::handle(&forward, stream_event_for(&readings))
            .await
            .batch_item_failures
            .is_empty()
    );
    for r in readings.iter().rev() {
        assert!(
            shared::stream::handle(&forward, stream_event_for(std::slice::from_ref(r)))
                .await
                .batch_item_failures
                .is_empty()
        );
    }
    assert_eq!(forward.load_registry().await.unwrap(), expected);

    // A fresh store fed only the reversed, duplicated records ends the same.
    let reversed = S::fresh("converge-b").await;
    let mut shuffled: Vec<Reading> = readings.iter().rev().cloned().collect();
    shuffled.extend(readings.iter().cloned());
    for chunk in shuffled.chunks(2) {
        assert!(shared::stream::handle(&reversed, stream_event_for(chunk))
            .await
            .batch_item_failures
            .is_empty());
    }
    assert_eq!(reversed.load_registry().await.unwrap(), expected);
}

/// Replays the fixtures on one store and returns every answer body in order.
async fn answers<S: TestStore>() -> Vec<Value> {
    let store = S::fresh("agree").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let mut out = Vec::new();
    for name in [
        "01-post-reading-power.json",
        "02-post-readings-batch.json",
        "03-post-readings-invalid.json",
    ] {
        out.push(answer(&handle(&ingest, api(name)).await).1);
    }
    out.push(
        serde_json::to_value(
            shared::stream::handle(&store, stream("04-stream-registry.json")).await,
        )
        .unwrap(),
    );
    let query = app(store, None, RouteSet::Query).await;
    for name in &ORDER[4..12] {
        let (status, body) = answer(&handle(&query, api(name)).await);
        out.push(json!({ "status": status, "body": body }));
    }
    for name in &ORDER[12..14] {
        let message: shared::mqtt::iot_rule::RuleMessage =
            serde_json::from_value(load(name)).unwrap();
        let outcome = shared::mqtt::iot_rule::handle(&query.store, &query.registry, &message)
            .await
            .unwrap();
        out.push(serde_json::to_value(outcome).unwrap());
    }
    let (status, body) = answer(&handle(&query, api(ORDER[14])).await);
    out.push(json!({ "status": status, "body": body }));
    out.push(answer(&handle(&ingest, api(ORDER[15])).await).1);
    let (status, body) = answer(&handle(&query, api(ORDER[16])).await);
    out.push(json!({ "status": status, "body": body }));
    out
}

#[tokio::test]
async fn the_embedded_store_and_dynamodb_give_the_same_answers() {
    let mut dynamo = answers::<shared::store::DynamoStore>().await;
    let mut sqlite = answers::<shared::store::SqliteStore>().await;
    assert_eq!(dynamo.len(), 17);
    // What an aggregate was computed from differs (rollups on the embedded
    // store only); what it answers may not.
    for answers in [&mut dynamo, &mut sqlite] {
        for i in [11, 16] {
            let body = answers[i]["body"].as_object_mut().unwrap();
            assert!(body.remove("source").is_some() && body.remove("items_read").is_some());
        }
    }
    // Read units: as dynalite reports them, and as the embedded store
    // computes them from the same item sizes; they agree.
    for (i, (d, s)) in dynamo.iter_mut().zip(sqlite.iter_mut()).enumerate() {
        let units = |a: &mut Value| {
            a["body"]
                .as_object_mut()
                .and_then(|b| b.remove("read_units"))
                .and_then(|u| u.as_f64())
        };
        let (du, su) = (units(d), units(s));
        assert_eq!(du.is_some(), su.is_some(), "answer {i}");
        if let (Some(du), Some(su)) = (du, su) {
            assert!(
                du > 0.0 && (du - su).abs() <= 0.5,
                "answer {i}: {du} against {su}"
            );
        }
        assert_eq!(d, s, "answer {i} ({})", ORDER[i]);
    }
}

on_every_store!(
    fixtures_replay_through_the_handlers,
    a_poison_record_is_reported_by_sequence_number_and_the_rest_applied,
    registry_converges_under_duplicate_and_reversed_delivery,
);
