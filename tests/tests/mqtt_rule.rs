//! The AWS IoT Core topic rule's handler (issue 26, part 1): every payload
//! shape stored and read back through the HTTP API on dynalite; messages
//! that can never be stored answered (not retried) with what is wrong; a
//! message the store could not take fails the invocation, so Lambda retries
//! it and then keeps it in the failure queue; once the store recovers, the
//! same message is stored.

use base64::Engine;
use integration_tests::{answer, api_event, app, dynalite, fresh_store, handle};
use serde_json::{json, Value};
use shared::api::RouteSet;
use shared::model::Timestamp;
use shared::mqtt::iot_rule::{handle as on_message, RuleMessage};
use shared::store::SqliteStore;

fn message(topic: &str, payload: &str, received: i64) -> RuleMessage {
    RuleMessage {
        topic: topic.into(),
        payload: base64::engine::general_purpose::STANDARD.encode(payload),
        received,
    }
}

/// 2026-11-21T02:00:00Z.
const RECEIVED: i64 = 1_795_226_400_000;

#[tokio::test]
async fn every_payload_shape_is_stored_and_read_back() {
    let store = fresh_store(&dynalite(), "mqtt-rule").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let query = app(store.clone(), None, RouteSet::Query).await;
    let cases: [(&str, &str, &str, Value); 6] = [
        (
            "readings/meter-7",
            r#"{"timestamp":"2026-11-21T01:00:00Z","cumulative_kwh_p":1.5,"current_w":300}"#,
            "meter-7",
            json!({"timestamp": "2026-11-21T01:00:00.000Z", "cumulative_kwh_p": 1.5, "current_w": 300.0}),
        ),
        (
            "readings/telegraf",
            "climate,device=th-9,room=hall temperature=19.5,humidity=51 1795222800000000000\n",
            "th-9",
            json!({"timestamp": "2026-11-21T01:00:00.000Z", "room": "hall", "temperature": 19.5}),
        ),
        (
            "tele/pow-1/SENSOR",
            r#"{"Time":"2026-11-21T03:00:00","ENERGY":{"Total":123.456,"Power":150,"Voltage":231,"Current":0.652},"SI7021":{"Temperature":68.9,"Humidity":40.1},"TempUnit":"F"}"#,
            "pow-1",
            json!({"timestamp": "2026-11-21T02:00:00.000Z", "cumulative_kwh_p": 123.456, "voltage_v": 231.0, "temperature": 20.5, "humidity": 40.1}),
        ),
        (
            "zigbee2mqtt/Kitchen sensor",
            r#"{"temperature":22.4,"humidity":55,"co2":640,"linkquality":80}"#,
            "Kitchen-sensor",
            json!({"timestamp": "2026-11-21T02:00:00.000Z", "temperature": 22.4, "co2_ppm": 640.0}),
        ),
        (
            "zigbee2mqtt/plug-2",
            r#"{"power":41.5,"energy":2.75,"state":"ON"}"#,
            "plug-2",
            json!({"current_w": 41.5, "cumulative_kwh_p": 2.75}),
        ),
        (
            "shellyplus1pm-c1/status/switch:0",
            r#"{"id":0,"output":true,"apower":8.9,"voltage":237.5,"current":0.068,"aenergy":{"total":6532.1,"by_minute":[0,0,0],"minute_ts":1795226400}}"#,
            "shellyplus1pm-c1",
            json!({"current_w": 8.9, "cumulative_kwh_p": 6.5321, "voltage_v": 237.5}),
        ),
    ];
    for (topic, payload, device, want) in cases {
        let outcome = on_message(&store, &ingest.registry, &message(topic, payload, RECEIVED))
            .await
            .unwrap();
        assert_eq!((outcome.written, &outcome.rejected), (1, &None), "{topic}");
        let (status, body) = answer(
            &handle(
                &query,
                api_event("GET", &format!("/devices/{device}/latest"), &[], None, &[]),
            )
            .await,
        );
        assert_eq!(status, 200, "{topic}: {body}");
        for (k, v) in want.as_object().unwrap() {
            let got = &body["reading"][k];
            match (got.as_f64(), v.as_f64()) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "{topic} {k}: {got} vs {v}"),
                _ => assert_eq!(got, v, "{topic} {k}"),
            }
        }
    }
    // The same message again: the same key, nothing new.
    let again = on_message(
        &store,
        &ingest.registry,
        &message(
            "zigbee2mqtt/plug-2",
            r#"{"power":41.5,"energy":2.75}"#,
            RECEIVED,
        ),
    )
    .await
    .unwrap();
    assert_eq!(again.rejected, None);
}

#[tokio::test]
async fn messages_that_can_never_be_stored_are_answered_with_the_reason() {
    let store = fresh_store(&dynalite(), "mqtt-bad").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let mut bad = vec![
        (
            message("zigbee2mqtt/s1", r#"{"temperature":500}"#, RECEIVED),
            "temperature",
        ),
        (message("tele/x/SENSOR", "{not json", RECEIVED), "not JSON"),
        (message("elsewhere/x", "{}", RECEIVED), "none of the shapes"),
        (
            message("readings/m", r#"{"current_w":"high"}"#, RECEIVED),
            "current_w",
        ),
    ];
    let mut not_base64 = message("readings/m", "", RECEIVED);
    not_base64.payload = "%%%".into();
    bad.push((not_base64, "base64"));
    for (m, says) in &bad {
        let outcome = on_message(&store, &ingest.registry, m).await.unwrap();
        let reason = outcome.rejected.unwrap_or_default();
        assert_eq!(outcome.written, 0);
        assert!(reason.contains(says), "{}: {reason}", m.topic);
    }
    // A good message after the bad ones is stored.
    let good = on_message(
        &store,
        &ingest.registry,
        &message("zigbee2mqtt/s1", r#"{"temperature":21}"#, RECEIVED),
    )
    .await
    .unwrap();
    assert_eq!(good.written, 1);
}

#[tokio::test]
async fn a_message_the_store_cannot_take_fails_and_is_stored_when_it_can() {
    let dir = std::env::temp_dir().join(format!("mqtt-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let ingest = app(store.clone(), None, RouteSet::All).await;
    let now = Timestamp::now().millis();
    // A batch on readings/<device>, as a gateway sends its backlog: pages
    // the file may not grow by.
    let batch: Vec<Value> = (0..1000i64)
        .map(|i| {
            let at = Timestamp::from_millis(now - (1000 - i) * 1000)
                .unwrap()
                .to_string();
            json!({"timestamp": at, "battery_pct": 90, "current_w": i})
        })
        .collect();
    let m = message("readings/s2", &Value::Array(batch).to_string(), now);
    store.cap_file_for_tests(true).unwrap();
    let err = on_message(&store, &ingest.registry, &m).await.unwrap_err();
    assert!(err.may_succeed_later(), "{err}");
    store.cap_file_for_tests(false).unwrap();
    let outcome = on_message(&store, &ingest.registry, &m).await.unwrap();
    assert_eq!(outcome.written, 1000);
    let (status, body) = answer(
        &handle(
            &ingest,
            api_event("GET", "/devices/s2/latest", &[], None, &[]),
        )
        .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reading"]["current_w"], json!(999.0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Energy from every MQTT payload that carries a counter (issue 38), as
/// meters give them: a Tasmota plug (`ENERGY.Total`, kWh), a Shelly switch
/// (`aenergy.total`, Wh), a Zigbee2MQTT plug (`energy`, kWh), a Shelly Gen1
/// plug (`relay/0/energy`, Watt-minutes) and a Gen1 EM's second channel
/// (`emeter/1/total`, Wh) the bought one alone; a Zigbee DIN meter (`energy`, `produced_energy`), a smart
/// meter through Tasmota's Smart Meter Interface (`Total_in`, `Total_out`,
/// kWh), a Shelly Pro 3EM (`emdata`'s `total_act`, `total_act_ret`, Wh), a
/// Shelly Pro EM's second channel (`em1data`), a PM Mini behind a
/// balcony inverter (`ret_aenergy`) and a P1 meter through DSMR-reader
/// (`dsmr/json`, two tariffs each way, at the meter's time) both. Each message every 10 minutes for
/// three hours; hourly energy is the counters' own differences, on DynamoDB
/// and on the embedded store.
#[tokio::test]
async fn counters_from_mqtt_payloads_give_energy_on_both_engines() {
    let dir = std::env::temp_dir().join(format!("mqtt-energy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let dynamo = fresh_store(&dynalite(), "mqtt-energy").await;
    // (topic, payload of the counters' values in kWh, device, whether it sells)
    // (the counters in kWh, bought and sold, and the time of the message)
    type Payload = fn(f64, f64, &str) -> String;
    let devices: [(&str, Payload, &str, bool); 11] = [
        (
            "tele/pow-1/SENSOR",
            |kwh, _, _| {
                format!(
                    r#"{{"Time":"2026-11-21T03:00:00","ENERGY":{{"Total":{kwh:.3},"Power":150,"Voltage":231}}}}"#
                )
            },
            "pow-1",
            false,
        ),
        (
            "shellyplus1pm-c1/status/switch:0",
            |kwh, _, _| {
                format!(
                    r#"{{"id":0,"output":true,"apower":8.9,"aenergy":{{"total":{:.1},"by_minute":[0,0,0],"minute_ts":1795226400}}}}"#,
                    kwh * 1000.0
                )
            },
            "shellyplus1pm-c1",
            false,
        ),
        (
            "zigbee2mqtt/plug-2",
            |kwh, _, _| format!(r#"{{"power":41.5,"energy":{kwh:.3},"state":"ON"}}"#),
            "plug-2",
            false,
        ),
        (
            "shellies/shellyplug-s-7e1d/relay/0/energy",
            // Watt-minutes, as plain text.
            |kwh, _, _| format!("{}", (kwh * 60_000.0).round()),
            "shellyplug-s-7e1d",
            false,
        ),
        (
            "shellies/shellyem-b1/emeter/1/total",
            |kwh, _, _| format!("{:.2}", kwh * 1000.0),
            "shellyem-b1-1",
            false,
        ),
        (
            "zigbee2mqtt/din-meter",
            |kwh, sold, _| {
                format!(r#"{{"power":-640,"energy":{kwh:.3},"produced_energy":{sold:.3}}}"#)
            },
            "din-meter",
            true,
        ),
        (
            "tele/hichi/SENSOR",
            |kwh, sold, _| {
                format!(
                    r#"{{"Time":"2026-11-21T03:00:00","SML":{{"Total_in":{kwh:.4},"Total_out":{sold:.4},"Power_curr":-420,"Meter_Id":"0a01"}}}}"#
                )
            },
            "hichi",
            true,
        ),
        (
            "shellypro3em-c8f09e/status/emdata:0",
            |kwh, sold, _| {
                format!(
                    r#"{{"id":0,"a_total_act_energy":1.0,"total_act":{:.2},"total_act_ret":{:.2}}}"#,
                    kwh * 1000.0,
                    sold * 1000.0
                )
            },
            "shellypro3em-c8f09e",
            true,
        ),
        (
            "shellyproem50-08f9e0/status/em1data:1",
            |kwh, sold, _| {
                format!(
                    r#"{{"id":1,"total_act_energy":{:.2},"total_act_ret_energy":{:.2}}}"#,
                    kwh * 1000.0,
                    sold * 1000.0
                )
            },
            "shellyproem50-08f9e0-1",
            true,
        ),
        (
            "shellypmmini-b1/status/pm1:0",
            |kwh, sold, _| {
                format!(
                    r#"{{"id":0,"apower":-381.4,"aenergy":{{"total":{:.3}}},"ret_aenergy":{{"total":{:.3}}}}}"#,
                    kwh * 1000.0,
                    sold * 1000.0
                )
            },
            "shellypmmini-b1",
            true,
        ),
        (
            // A P1 meter's two tariffs, on their own registers: the low one
            // until 121.5 kWh, the high one after (bought is their sum).
            // As DSMR-reader publishes them: decimals as text.
            "dsmr/json",
            |kwh, sold, at| {
                format!(
                    r#"{{"id":7,"timestamp":"{at}","electricity_delivered_1":"{:.3}","electricity_delivered_2":"{:.3}","electricity_returned_1":"{:.3}","electricity_returned_2":"55.000","electricity_currently_delivered":"0.210","electricity_currently_returned":"0.000","extra_device_delivered":null}}"#,
                    3000.0 + kwh.min(121.5),
                    2000.0 + (kwh - 121.5).max(0.0),
                    100.0 + sold
                )
            },
            "dsmr",
            true,
        ),
    ];
    let kwh = |i: i64| 120.0 + (0..i).map(|j| (j % 3 + 1) as f64 * 0.125).sum::<f64>();
    let sold = |i: i64| 40.0 + (0..i).map(|j| (j % 2) as f64 * 0.25).sum::<f64>();
    let sqlite_app = app(sqlite, None, RouteSet::All).await;
    let dynamo_app = app(dynamo, None, RouteSet::All).await;
    for i in 0..=18i64 {
        let received = RECEIVED + i * 600_000;
        let at = Timestamp::from_millis(received).unwrap().to_string();
        for (topic, payload, _, _) in &devices {
            let m = message(topic, &payload(kwh(i), sold(i), &at), received);
            let s = on_message(&sqlite_app.store, &sqlite_app.registry, &m)
                .await
                .unwrap();
            let d = on_message(&dynamo_app.store, &dynamo_app.registry, &m)
                .await
                .unwrap();
            assert_eq!((s.written, d.written), (1, 1), "{topic}");
        }
    }
    let q = [
        ("from", "2026-11-21T02:00:00Z"),
        ("to", "2026-11-21T05:00:00Z"),
        ("bucket", "1h"),
    ];
    for (_, _, device, sells) in &devices {
        let path = format!("/devices/{device}/energy");
        let answers = [
            (
                "sqlite",
                answer(&handle(&sqlite_app, api_event("GET", &path, &q, None, &[])).await),
            ),
            (
                "dynamodb",
                answer(&handle(&dynamo_app, api_event("GET", &path, &q, None, &[])).await),
            ),
        ];
        for (store_name, (status, body)) in answers {
            assert_eq!(status, 200, "{store_name} {device}: {body}");
            let buckets = body["buckets"].as_array().unwrap();
            assert_eq!(buckets.len(), 3, "{store_name} {device}: {body}");
            for (h, b) in buckets.iter().enumerate() {
                let expected = kwh(6 * (h as i64 + 1)) - kwh(6 * h as i64);
                let got = b["kwh_bought"].as_f64().unwrap();
                assert!(
                    (got - expected).abs() < 1e-6,
                    "{store_name} {device} hour {h}: {got} vs {expected}"
                );
                let expected = if *sells {
                    sold(6 * (h as i64 + 1)) - sold(6 * h as i64)
                } else {
                    0.0
                };
                let got = b["kwh_sold"].as_f64().unwrap();
                assert!(
                    (got - expected).abs() < 1e-6,
                    "{store_name} {device} hour {h} sold: {got} vs {expected}"
                );
            }
        }
    }
}

/// IoT Core's side of a redelivery (issue 79): the rule's message carries
/// IoT Core's receive time, so a message Lambda delivers again (its retry
/// after a failed invocation, or a replay of the failure queue) keeps it: a
/// payload with no time of its own is one reading, not one a delivery.
#[tokio::test]
async fn a_message_without_a_time_delivered_again_is_one_reading() {
    let store = fresh_store(&dynalite(), "mqtt-again").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let query = app(store.clone(), None, RouteSet::Query).await;
    let m = message("readings/plug-9", r#"{"current_w":41.5}"#, RECEIVED);
    for _ in 0..3 {
        let outcome = on_message(&store, &ingest.registry, &m).await.unwrap();
        assert_eq!(outcome.rejected, None);
    }
    let (status, body) = answer(
        &handle(
            &query,
            api_event(
                "GET",
                "/devices/plug-9/readings",
                &[("from", "2026-11-21T00:00:00Z")],
                None,
                &[],
            ),
        )
        .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["readings"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["readings"][0]["timestamp"], "2026-11-21T02:00:00.000Z");
}
