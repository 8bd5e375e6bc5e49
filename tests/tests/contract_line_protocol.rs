//! The InfluxDB write API on every engine (`on_every_store!`), through the
//! Router as the Lambda runs it: each client of issue 12 as it really writes
//! (Home Assistant, Tasmota, Telegraf v1 and v2), InfluxDB's statuses and
//! bodies, the token as each presents it, all or nothing.

use base64::Engine;
use integration_tests::{answer, api_event, app, handle, on_every_store_and_batches, TestStore};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use shared::store::Store;
use std::io::Write;

const TOKEN: &str = "lp-token-1";
const DAY: [(&str, &str); 2] = [
    ("from", "2026-11-21T00:00:00Z"),
    ("to", "2026-11-22T00:00:00Z"),
];
/// 2026-11-21T01:02:03Z in nanoseconds.
const T_NS: &str = "1795222923000000000";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

async fn write<S: Store>(
    app: &App<S>,
    path: &str,
    query: &[(&str, &str)],
    body: &str,
    headers: &[(&str, &str)],
) -> ApiGatewayV2httpResponse {
    handle(app, api_event("POST", path, query, Some(body), headers)).await
}

async fn write_gzip<S: Store>(
    app: &App<S>,
    path: &str,
    query: &[(&str, &str)],
    body: &str,
    headers: &[(&str, &str)],
) -> ApiGatewayV2httpResponse {
    let mut headers = headers.to_vec();
    headers.push(("content-encoding", "gzip"));
    let mut event = api_event("POST", path, query, None, &headers);
    event.body = Some(base64::engine::general_purpose::STANDARD.encode(gzip(body.as_bytes())));
    event.is_base64_encoded = true;
    handle(app, event).await
}

async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    let auth = format!("Bearer {TOKEN}");
    answer(
        &handle(
            app,
            api_event("GET", path, query, None, &[("authorization", &auth)]),
        )
        .await,
    )
}

async fn readings<S: Store>(app: &App<S>, device: &str) -> Value {
    let (status, body) = get(app, &format!("/devices/{device}/readings"), &DAY).await;
    assert_eq!(status, 200, "{body}");
    body["readings"].clone()
}

async fn home_assistant_writes_with_its_default_layout<S: TestStore>() {
    let app = app(S::fresh("lp-ha").await, Some(TOKEN), RouteSet::All).await;
    let v1 = [
        ("db", "home_assistant"),
        ("u", "homeassistant"),
        ("p", TOKEN),
    ];
    // At setup it writes an empty body and expects 204.
    assert_eq!(write(&app, "/write", &v1, "", &[]).await.status_code, 204);
    let body = format!(
        "°C,domain=sensor,entity_id=living_temperature value=21.5,friendly_name_str=\"Living room\",device_class_str=\"temperature\",state_class_str=\"measurement\" {T_NS}\n\
         %,domain=sensor,entity_id=living_humidity value=45,device_class_str=\"humidity\",friendly_name_str=\"Living humidity\" {T_NS}\n\
         W,domain=sensor,entity_id=fridge_plug value=85.5,voltage=229.9 {T_NS}\n\
         state,domain=binary_sensor,entity_id=front_door value=1i,state=\"on\" {T_NS}\n"
    );
    let resp = write(&app, "/write", &v1, &body, &[]).await;
    assert_eq!(resp.status_code, 204, "{resp:?}");
    assert_eq!(resp.headers.get("x-ingester-skipped-lines").unwrap(), "1");
    // `/health` says which line was skipped, and why.
    let (status, health) = get(&app, "/health", &[]).await;
    assert_eq!(status, 200, "{health}");
    let check = health["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "line protocol")
        .unwrap_or_else(|| panic!("{health}"));
    assert_eq!(check["lines"]["skipped"], 1, "{check}");
    let last = check["lines"]["last_skipped"].as_str().unwrap();
    assert!(
        last.starts_with("state,entity_id=front_door: the value's measurement \"state\""),
        "{last}"
    );
    assert_eq!(
        readings(&app, "living_temperature").await,
        json!([{"device_id":"living_temperature","timestamp":"2026-11-21T01:02:03.000Z","type":"climate","temperature":21.5}])
    );
    assert_eq!(readings(&app, "living_humidity").await[0]["humidity"], 45.0);
    assert_eq!(
        readings(&app, "fridge_plug").await,
        json!([{"device_id":"fridge_plug","timestamp":"2026-11-21T01:02:03.000Z","type":"power","current_w":85.5}]),
        "an attribute (voltage) that is not a catalogue name is ignored"
    );
    // A field that is a catalogue quantity out of range is still a 400.
    let bad = format!("W,domain=sensor,entity_id=fridge_plug value=85.5,battery_pct=250 {T_NS}");
    let resp = write(&app, "/write", &v1, &bad, &[]).await;
    let (status, body) = answer(&resp);
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid")));
    assert!(
        body["message"].as_str().unwrap().contains("line 1"),
        "{body}"
    );
}

/// A Home Assistant household's energy counters, as its InfluxDB integration
/// writes them (measurement = the unit, state changes only, batches of a few
/// seconds): the grid meter's import and export entities (a DSMR reader's),
/// and a plug in Wh. Each is a device with one counter, bought or sold as its
/// name says; the day's energy per hour is the counter's own growth.
/// Home Assistant's tariff entities (the DSMR integration's
/// `..._consumption_tarif_1` and `_2`, a state each when it changes) are
/// one meter (issue 79): its energy per hour is both tariffs', each
/// tariff's kWh beside; no device per entity.
async fn home_assistant_tariff_entities_are_one_meter<S: TestStore>() {
    let app = app(S::fresh("lp-ha-tariffs").await, Some(TOKEN), RouteSet::All).await;
    let v1 = [("db", "home_assistant"), ("p", TOKEN)];
    let t0 = 1_795_219_200i64; // 2026-11-21T00:00:00Z
    let (start1, start2) = (4021.117f64, 3817.25f64);
    let (mut t1, mut t2) = (start1, start2);
    let mut body = String::new();
    // Tariff 2 (low) until 07:00, tariff 1 after: the running tariff's
    // state every 10 minutes, as it changes.
    for hour in 0..12i64 {
        for step in 0..6i64 {
            let t = (t0 + hour * 3600 + step * 600) * 1_000_000_000;
            let (tariff, value) = match hour < 7 {
                true => (2, &mut t2),
                false => (1, &mut t1),
            };
            body += &format!(
                "kWh,domain=sensor,entity_id=electricity_meter_energy_consumption_tarif_{tariff} value={},device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n",
                *value
            );
            *value = ((*value + 0.04) * 1000.0).round() / 1000.0;
        }
    }
    let t = (t0 + 12 * 3600) * 1_000_000_000;
    body += &format!(
        "kWh,domain=sensor,entity_id=electricity_meter_energy_consumption_tarif_1 value={t1},device_class_str=\"energy\" {t}\n\
         kWh,domain=sensor,entity_id=electricity_meter_energy_consumption_tarif_2 value={t2},device_class_str=\"energy\" {t}\n"
    );
    let resp = write(&app, "/write", &v1, &body, &[]).await;
    assert_eq!(resp.status_code, 204, "{resp:?}");
    let query = [DAY[0], DAY[1], ("bucket", "1h")];
    let (status, e) = get(
        &app,
        "/devices/electricity_meter_energy_consumption/energy",
        &query,
    )
    .await;
    assert_eq!(status, 200, "{e}");
    let buckets = e["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 12, "{e}");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    for (hour, b) in buckets.iter().enumerate() {
        let got = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("{k}: {b}"));
        let (one, two) = (got("kwh_bought_t1"), got("kwh_bought_t2"));
        assert!(close(got("kwh_bought"), one + two), "hour {hour}: {b}");
        match hour {
            0..=5 => assert!(one == 0.0 && two > 0.1, "hour {hour}, tariff 2: {b}"),
            7..=10 => assert!(one > 0.1 && two == 0.0, "hour {hour}, tariff 1: {b}"),
            _ => {}
        }
    }
    let total = |k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k}: {e}"));
    assert!(close(total("kwh_bought_t1"), t1 - start1), "{e}");
    assert!(close(total("kwh_bought_t2"), t2 - start2), "{e}");
    assert!(close(total("kwh_bought"), t1 - start1 + t2 - start2), "{e}");
    assert!(e.get("kwh_sold_t1").is_none(), "{e}");
    for entity in ["_tarif_1", "_tarif_2"] {
        let id = format!("electricity_meter_energy_consumption{entity}");
        assert_eq!(readings(&app, &id).await, json!([]), "no device of its own");
    }
}

async fn home_assistant_energy_counters_give_energy_each_way<S: TestStore>() {
    let app = app(S::fresh("lp-ha-energy").await, Some(TOKEN), RouteSet::All).await;
    let v1 = [("db", "home_assistant"), ("p", TOKEN)];
    let t0 = 1_795_219_200i64; // 2026-11-21T00:00:00Z
    let (mut import, mut export, mut plug_wh) = (10_512.25f64, 2_310.5f64, 80_000.0f64);
    let mut hourly: Vec<(f64, f64, f64)> = Vec::new();
    for hour in 0..24i64 {
        let (at_import, at_export, at_plug) = (import, export, plug_wh);
        let mut body = String::new();
        // The state at the hour, then every 5 minutes while it changes.
        for step in 0..12i64 {
            let t = (t0 + hour * 3600 + step * 300) * 1_000_000_000;
            body += &format!(
                "kWh,domain=sensor,entity_id=electricity_meter_energy_consumption value={import},device_class_str=\"energy\",state_class_str=\"total_increasing\",friendly_name_str=\"Electricity Meter Energy consumption\",unit_of_measurement_str=\"kWh\" {t}\n"
            );
            import = ((import + 0.05 + (hour % 5) as f64 * 0.01) * 1000.0).round() / 1000.0;
            if (8..16).contains(&hour) {
                body += &format!(
                    "kWh,domain=sensor,entity_id=electricity_meter_energy_production value={export},device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n"
                );
                export = ((export + 0.125) * 1000.0).round() / 1000.0;
            }
            if step % 3 == 0 {
                body += &format!(
                    "Wh,domain=sensor,entity_id=washer_plug_energy value={plug_wh},device_class_str=\"energy\" {t}\n"
                );
                plug_wh += 37.0;
            }
        }
        if hour == 16 {
            // The export's last change, at 16:00.
            let t = (t0 + 16 * 3600) * 1_000_000_000;
            body += &format!(
                "kWh,domain=sensor,entity_id=electricity_meter_energy_production value={export},device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n"
            );
        }
        let resp = write(&app, "/write", &v1, &body, &[]).await;
        assert_eq!(resp.status_code, 204, "{resp:?}");
        hourly.push((
            import - at_import,
            export - at_export,
            (plug_wh - at_plug) / 1000.0,
        ));
    }
    // The last hour closes at midnight with one more state each; the
    // export's next change is the next morning's at 08:00: the night
    // between, with no state, sold nothing.
    let t = (t0 + 24 * 3600) * 1_000_000_000;
    let morning = (t0 + 32 * 3600) * 1_000_000_000;
    let next = export + 0.125;
    let body = format!(
        "kWh,domain=sensor,entity_id=electricity_meter_energy_consumption value={import},device_class_str=\"energy\" {t}\n\
         Wh,domain=sensor,entity_id=washer_plug_energy value={plug_wh},device_class_str=\"energy\" {t}\n\
         kWh,domain=sensor,entity_id=electricity_meter_energy_production value={next},device_class_str=\"energy\" {morning}\n"
    );
    assert_eq!(
        write(&app, "/write", &v1, &body, &[]).await.status_code,
        204
    );

    let energy = |device: &'static str| {
        let app = &app;
        async move {
            let query = [DAY[0], DAY[1], ("bucket", "1h")];
            let (status, body) = get(app, &format!("/devices/{device}/energy"), &query).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    let per_hour = |body: &Value, key: &str| -> Vec<(String, f64)> {
        body["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["start"].as_str().unwrap()[11..13].to_owned(),
                    b[key].as_f64().unwrap(),
                )
            })
            .collect()
    };
    // Bought: every hour of the day, nothing sold.
    let consumption = energy("electricity_meter_energy_consumption").await;
    let bought = per_hour(&consumption, "kwh_bought");
    assert_eq!(bought.len(), 24, "{consumption}");
    for (hour, (_, kwh)) in bought.iter().enumerate() {
        assert!(
            close(*kwh, hourly[hour].0),
            "hour {hour}: {kwh} against {}",
            hourly[hour].0
        );
    }
    assert_eq!(consumption["kwh_sold"], json!(0.0));
    // Sold: the eight hours of daylight, nothing bought, and nothing in the
    // night before the next morning's change (counter::spread_from).
    let production = energy("electricity_meter_energy_production").await;
    let sold = per_hour(&production, "kwh_sold");
    let hours: Vec<&str> = sold.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        hours,
        ["08", "09", "10", "11", "12", "13", "14", "15"],
        "{production}"
    );
    for (h, kwh) in &sold {
        let hour: usize = h.parse().unwrap();
        assert!(
            close(*kwh, hourly[hour].1),
            "hour {h}: {kwh} against {}",
            hourly[hour].1
        );
    }
    assert!(close(
        production["kwh_sold"].as_f64().unwrap(),
        8.0 * 12.0 * 0.125
    ));
    assert_eq!(production["kwh_bought"], json!(0.0));
    // The plug's Wh in kWh.
    let plug = energy("washer_plug_energy").await;
    assert!(
        close(plug["kwh_bought"].as_f64().unwrap(), 24.0 * 4.0 * 0.037),
        "{plug}"
    );
    for (hour, (_, kwh)) in per_hour(&plug, "kwh_bought").iter().enumerate() {
        assert!(close(*kwh, hourly[hour].2), "plug, hour {hour}: {kwh}");
    }
}

async fn tasmota_probes_health_and_writes_one_line_per_quantity<S: TestStore>() {
    let app = app(S::fresh("lp-tasmota").await, Some(TOKEN), RouteSet::All).await;
    let (status, health) = answer(&handle(&app, api_event("GET", "/health", &[], None, &[])).await);
    assert_eq!((status, health["status"].as_str()), (200, Some("pass")));
    let ping = handle(&app, api_event("GET", "/ping", &[], None, &[])).await;
    assert_eq!(ping.status_code, 204);
    assert!(ping.headers.get("x-influxdb-version").is_some());
    let token = format!("Token {TOKEN}");
    let resp = write(
        &app,
        "/api/v2/write",
        &[("org", "home"), ("bucket", "tasmota")],
        "temperature,device=tasmota_5A3F,sensor=am2301 value=22.6\nhumidity,device=tasmota_5A3F,sensor=am2301 value=40.1\n",
        &[("authorization", &token)],
    )
    .await;
    assert_eq!(resp.status_code, 204, "{resp:?}");
    let (_, latest) = get(&app, "/devices/tasmota_5A3F/latest", &[]).await;
    assert_eq!(latest["reading"]["temperature"], 22.6);
    assert_eq!(latest["reading"]["humidity"], 40.1);
}

async fn telegraf_creates_its_database_and_writes_gzip_nanoseconds<S: TestStore>() {
    let app = app(S::fresh("lp-telegraf").await, Some(TOKEN), RouteSet::All).await;
    // v1: CREATE DATABASE first, with HTTP Basic (the token as password).
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("telegraf:{TOKEN}"))
    );
    let mut create = api_event(
        "POST",
        "/query",
        &[],
        Some("q=CREATE+DATABASE+%22telegraf%22"),
        &[
            ("authorization", &basic),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
    );
    create.headers.insert(
        "content-type",
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    let (status, body) = answer(&handle(&app, create).await);
    assert_eq!(
        (status, body),
        (200, json!({"results": [{"statement_id": 0}]}))
    );
    let lines = format!(
        "climate,device=th-1,room=living temperature=21.5,humidity=45 {T_NS}\n\
         power,host=meter-1 cumulative_kwh_p=1234.5,cumulative_kwh_n=10.25,current_w=350i {T_NS}\n\
         cpu,host=meter-1,cpu=cpu-total usage_idle=98.5 {T_NS}\n"
    );
    let resp = write_gzip(
        &app,
        "/write",
        &[("db", "telegraf")],
        &lines,
        &[("authorization", &basic)],
    )
    .await;
    assert_eq!(resp.status_code, 204, "{resp:?}");
    // v2: gzip, nanoseconds, a Token header.
    let token = format!("Token {TOKEN}");
    let later = "climate,device=th-1,room=living temperature=22,humidity=44 1795223923000000000";
    let resp = write_gzip(
        &app,
        "/api/v2/write",
        &[("org", "o"), ("bucket", "b"), ("precision", "ns")],
        later,
        &[("authorization", &token)],
    )
    .await;
    assert_eq!(resp.status_code, 204, "{resp:?}");
    assert_eq!(
        readings(&app, "th-1").await,
        json!([
            {"device_id":"th-1","timestamp":"2026-11-21T01:02:03.000Z","type":"climate","room":"living","temperature":21.5,"humidity":45.0},
            {"device_id":"th-1","timestamp":"2026-11-21T01:18:43.000Z","type":"climate","room":"living","temperature":22.0,"humidity":44.0}
        ])
    );
    assert_eq!(
        readings(&app, "meter-1").await[0]["cumulative_kwh_p"],
        1234.5
    );
}

async fn bad_lines_wrong_tokens_and_big_bodies_get_influxdbs_answers<S: TestStore>() {
    let app = app(S::fresh("lp-errors").await, Some(TOKEN), RouteSet::All).await;
    let token = format!("Token {TOKEN}");
    let auth = [("authorization", token.as_str())];
    // All or nothing: a good line before a bad one is not written.
    let body = format!(
        "climate,device=a,room=r temperature=20 {T_NS}\nclimate,device=b temperature=oops {T_NS}\n"
    );
    let (status, err) = answer(&write(&app, "/api/v2/write", &[], &body, &auth).await);
    assert_eq!((status, err["code"].as_str()), (400, Some("invalid")));
    assert!(
        err["message"].as_str().unwrap().starts_with("line 2:"),
        "{err}"
    );
    assert_eq!(readings(&app, "a").await, json!([]));
    let (status, err) = answer(
        &write(
            &app,
            "/api/v2/write",
            &[("precision", "days")],
            "m,device=a current_w=1",
            &auth,
        )
        .await,
    );
    assert_eq!((status, err["code"].as_str()), (400, Some("invalid")));
    // Tokens: missing, wrong, and a v1 password that is wrong.
    for headers in [vec![], vec![("authorization", "Token nope")]] {
        let resp = write(
            &app,
            "/api/v2/write",
            &[],
            "m,device=a current_w=1",
            &headers,
        )
        .await;
        let (status, err) = answer(&resp);
        assert_eq!((status, err["code"].as_str()), (401, Some("unauthorized")));
    }
    let (status, _) = answer(
        &write(
            &app,
            "/write",
            &[("u", "x"), ("p", "nope")],
            "m,device=a current_w=1",
            &[],
        )
        .await,
    );
    assert_eq!(status, 401);
    // Over the body limit, after inflating: 413, which Telegraf answers by splitting.
    let huge = format!(
        "{}\n",
        "m,device=a current_w=1 1795222923000000000\n".repeat(30_000)
    );
    let resp = write_gzip(&app, "/api/v2/write", &[], &huge, &auth).await;
    let (status, err) = answer(&resp);
    assert_eq!(
        (status, err["code"].as_str()),
        (413, Some("request too large"))
    );
    assert_eq!(readings(&app, "a").await, json!([]), "nothing was written");
}

/// The embedded store keeps its registry in the write: a device that moves
/// rooms (a `room` tag) is in its new room for the very next line without
/// one, and the device shows the last batch's values.
#[tokio::test]
async fn a_device_that_moves_rooms_is_in_its_new_room_for_the_next_batch() {
    let app = app(
        shared::store::SqliteStore::in_memory().unwrap(),
        Some(TOKEN),
        RouteSet::All,
    )
    .await;
    let auth = format!("Token {TOKEN}");
    let at = |minute: i64| (1_795_222_923_000 + minute * 60_000).to_string();
    let batches = [
        format!("climate,device=s-mv,room=attic temperature=20 {}", at(0)),
        format!("climate,device=s-mv temperature=21 {}", at(1)),
        format!("climate,device=s-mv,room=cellar temperature=12 {}", at(2)),
        format!("climate,device=s-mv temperature=13 {}", at(3)),
        format!("climate,device=s-mv temperature=14 {}", at(4)),
    ];
    for (i, body) in batches.iter().enumerate() {
        let r = write(
            &app,
            "/write",
            &[("db", "home"), ("precision", "ms")],
            body,
            &[("authorization", &auth)],
        )
        .await;
        assert_eq!(r.status_code, 204, "batch {i}: {:?}", r.body);
    }
    // Nothing was read between the writes (a read reloads the cache).
    let (status, device) = get(&app, "/devices/s-mv", &[]).await;
    assert_eq!(status, 200, "{device}");
    assert_eq!(
        (
            device["device"]["latest"]["temperature"].clone(),
            device["device"]["room"].clone()
        ),
        (json!(14.0), json!("cellar")),
        "the device shows the last batch"
    );
    let rooms: Vec<Value> = readings(&app, "s-mv")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["room"].clone())
        .collect();
    assert_eq!(
        rooms,
        [
            json!("attic"),
            json!("attic"),
            json!("cellar"),
            json!("cellar"),
            json!("cellar")
        ]
    );
}

/// Line protocol may carry a climate quantity without a room (most tools
/// cannot send one): each such reading is stored, the second as the first
/// (the embedded registry once failed to read back its own latest reading,
/// and every later write of the device answered 503).
async fn climate_lines_without_a_room_are_stored_every_time<S: TestStore>() {
    let app = app(S::fresh("roomless-lp").await, Some(TOKEN), RouteSet::All).await;
    let auth = format!("Token {TOKEN}");
    for minute in 0..3i64 {
        let body = format!(
            "climate,device=s-roomless temperature={} {}",
            20 + minute,
            1_795_222_923_000 + minute * 60_000
        );
        let r = write(
            &app,
            "/write",
            &[("db", "home"), ("precision", "ms")],
            &body,
            &[("authorization", &auth)],
        )
        .await;
        assert_eq!(r.status_code, 204, "minute {minute}: {:?}", r.body);
    }
    let stored: Vec<(Value, Value)> = readings(&app, "s-roomless")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["temperature"].clone(), r["room"].clone()))
        .collect();
    assert_eq!(
        stored,
        [
            (json!(20.0), Value::Null),
            (json!(21.0), Value::Null),
            (json!(22.0), Value::Null)
        ]
    );
}

on_every_store_and_batches!(
    climate_lines_without_a_room_are_stored_every_time,
    home_assistant_writes_with_its_default_layout,
    tasmota_probes_health_and_writes_one_line_per_quantity,
    telegraf_creates_its_database_and_writes_gzip_nanoseconds,
    bad_lines_wrong_tokens_and_big_bodies_get_influxdbs_answers,
    ; items_only: home_assistant_energy_counters_give_energy_each_way,
    home_assistant_tariff_entities_are_one_meter,
);
