//! InfluxQL on `/query` on every engine (`on_every_store!`), through the Router
//! as the Lambda runs it: the meta queries Grafana's editor lists from, raw and
//! aggregated SELECTs (windows, tags, fill, order, limits, zones) with answers
//! computed here from the readings written, InfluxDB's answer and error
//! shapes, and a property test holding `GROUP BY time(1h|1d)` to the stats
//! route, and the rollups path to the readings path.

use integration_tests::{
    answer, api_event, app, handle, on_every_store_and_batches, stream_event_for, TestStore,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::model::{Reading, Timestamp};
use shared::store::Store;

/// 2026-11-21T00:00:00Z
const T0: i64 = 1_795_219_200_000;
const MIN: i64 = 60_000;

fn iso(ms: i64) -> String {
    Timestamp::from_millis(ms).unwrap().to_string()
}

/// Writes readings through `POST /readings`, then lets the stream functions
/// (registry and rollups) see them, as DynamoDB Streams would.
async fn write<S: shared::rollups::Upkeep>(app: &App<S>, readings: &[Value]) {
    for chunk in readings.chunks(1000) {
        let body = serde_json::to_string(chunk).unwrap();
        let (status, answer) =
            answer(&handle(app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
        assert_eq!(status, 200, "{answer}");
    }
    let parsed: Vec<Reading> = readings
        .iter()
        .map(|r| Reading::from_json(r, Timestamp::now(), |_| None).unwrap())
        .collect();
    let event = stream_event_for(&parsed);
    let registry = shared::stream::handle(&app.store, event.clone()).await;
    assert!(registry.batch_item_failures.is_empty());
    let rollups = shared::stream::rollups::handle(&app.store, event).await;
    assert!(rollups.batch_item_failures.is_empty());
    app.registry.invalidate();
}

async fn query<S: Store>(app: &App<S>, params: &[(&str, &str)]) -> (u16, Value) {
    let response = handle(app, api_event("GET", "/query", params, None, &[])).await;
    assert_eq!(
        response
            .headers
            .get("x-influxdb-version")
            .map(|v| v.to_str().unwrap()),
        Some("1.8.10"),
        "every /query answer carries the version"
    );
    answer(&response)
}

/// The first result of a one-statement query, which must have succeeded.
async fn series<S: Store>(app: &App<S>, q: &str) -> Vec<Value> {
    let (status, body) = query(app, &[("q", q), ("epoch", "ms")]).await;
    assert_eq!(status, 200, "{q}: {body}");
    let result = &body["results"][0];
    assert!(result.get("error").is_none(), "{q}: {body}");
    result["series"].as_array().cloned().unwrap_or_default()
}

/// Two room sensors and a meter: a reading every 10 minutes for six hours.
fn household() -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..36i64 {
        let t = T0 + i * 10 * MIN;
        out.push(
            json!({"device_id": "s-1", "timestamp": iso(t), "room": "kitchen",
            "temperature": 20.0 + (i % 7) as f64 * 0.5, "humidity": 40.0 + i as f64 * 0.25}),
        );
        if i % 2 == 0 {
            out.push(
                json!({"device_id": "s-2", "timestamp": iso(t), "room": "bedroom",
                "temperature": 17.0 + (i % 5) as f64, "humidity": 55.0}),
            );
        }
        out.push(json!({"device_id": "m-1", "timestamp": iso(t), "type": "power",
            "cumulative_kwh_p": 100.0 + i as f64 * 0.1, "cumulative_kwh_n": 1.0, "current_w": 300.0 + i as f64}));
    }
    out
}

/// `(time, value)` of a device's quantity, from the readings written.
fn points(readings: &[Value], device: &str, field: &str) -> Vec<(i64, f64)> {
    readings
        .iter()
        .filter(|r| r["device_id"] == device && r.get(field).is_some())
        .map(|r| {
            let t = Timestamp::parse(r["timestamp"].as_str().unwrap())
                .unwrap()
                .millis();
            (t, r[field].as_f64().unwrap())
        })
        .collect()
}

async fn meta_queries_list_what_grafana_picks_from<S: TestStore>() {
    let app = app(S::fresh("iql-meta").await, None, RouteSet::All).await;
    write(&app, &household()).await;
    let names = |s: &Value| -> Vec<Value> {
        s["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v[0].clone())
            .collect()
    };
    let s = series(&app, "SHOW DATABASES").await;
    assert_eq!(names(&s[0]), [json!("ingester")]);
    let s = series(&app, "SHOW MEASUREMENTS").await;
    assert_eq!(
        (s[0]["name"].clone(), names(&s[0])),
        (
            json!("measurements"),
            vec![json!("climate"), json!("power")]
        )
    );
    let s = series(
        &app,
        "SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)^CL/ LIMIT 100",
    )
    .await;
    assert_eq!(names(&s[0]), [json!("climate")]);
    let s = series(&app, r#"SHOW TAG KEYS FROM "climate""#).await;
    assert_eq!(
        (s.len(), names(&s[0])),
        (1, vec![json!("device_id"), json!("room")])
    );
    let s = series(&app, r#"SHOW TAG VALUES FROM "climate" WITH KEY = "room""#).await;
    assert_eq!(s[0]["columns"], json!(["key", "value"]));
    assert_eq!(
        s[0]["values"],
        json!([["room", "bedroom"], ["room", "kitchen"]])
    );
    let s = series(
        &app,
        r#"SHOW TAG VALUES WITH KEY IN ("device_id") WHERE "room" = 'kitchen'"#,
    )
    .await;
    assert_eq!(
        s.len(),
        1,
        "only climate has a device in the kitchen: {s:?}"
    );
    assert_eq!(s[0]["values"], json!([["device_id", "s-1"]]));
    let s = series(
        &app,
        r#"SHOW TAG VALUES FROM "power" WITH KEY = "device_id""#,
    )
    .await;
    assert_eq!(s[0]["values"], json!([["device_id", "m-1"]]));
    let s = series(&app, r#"SHOW FIELD KEYS FROM "power""#).await;
    assert_eq!(
        s[0]["values"],
        json!([
            ["cumulative_kwh_n", "float"],
            ["cumulative_kwh_p", "float"],
            ["current_w", "float"]
        ])
    );
    let s = series(&app, "SHOW RETENTION POLICIES ON ingester").await;
    assert_eq!(s[0]["values"][0][0], "autogen");
    assert_eq!(s[0]["values"][0][4], true);
    // Several statements, several results, in order.
    let (status, body) = query(
        &app,
        &[("q", "SHOW DATABASES; SHOW MEASUREMENTS; CREATE DATABASE x")],
    )
    .await;
    assert_eq!(status, 200);
    let ids: Vec<Value> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["statement_id"].clone())
        .collect();
    assert_eq!(ids, [json!(0), json!(1), json!(2)]);
    assert_eq!(body["results"][2], json!({"statement_id": 2}));
}

async fn windows_tags_and_fill_answer_as_the_readings_say<S: TestStore>() {
    let app = app(S::fresh("iql-agg").await, None, RouteSet::All).await;
    let readings = household();
    write(&app, &readings).await;
    let (from, to) = (T0, T0 + 6 * 60 * MIN);
    let range = format!("time >= {from}ms AND time < {to}ms");
    // Hourly, per device: from rollups where the engine has them.
    let q = format!("SELECT mean(temperature), max(temperature), count(temperature) FROM climate WHERE {range} GROUP BY time(1h), device_id fill(null)");
    let s = series(&app, &q).await;
    assert_eq!(s.len(), 2, "{s:?}");
    for one in &s {
        let device = one["tags"]["device_id"].as_str().unwrap();
        assert_eq!(one["columns"], json!(["time", "mean", "max", "count"]));
        let pts = points(&readings, device, "temperature");
        let rows = one["values"].as_array().unwrap();
        assert_eq!(rows.len(), 6);
        for (h, row) in rows.iter().enumerate() {
            let start = from + h as i64 * 60 * MIN;
            let inside: Vec<f64> = pts
                .iter()
                .filter(|(t, _)| *t >= start && *t < start + 60 * MIN)
                .map(|p| p.1)
                .collect();
            let mean = inside.iter().sum::<f64>() / inside.len() as f64;
            let max = inside.iter().cloned().fold(f64::MIN, f64::max);
            assert_eq!(row[0], json!(start));
            assert!(
                (row[1].as_f64().unwrap() - mean).abs() < 1e-9,
                "{device} {row}"
            );
            assert_eq!(row[2].as_f64().unwrap(), max);
            assert_eq!(row[3], json!(inside.len()));
        }
    }
    // 25-minute windows (no rollup has them), one series for the room filter.
    let q = format!("SELECT first(temperature), last(temperature), spread(temperature), median(temperature), sum(humidity) FROM climate WHERE room = 'kitchen' AND {range} GROUP BY time(25m) fill(none)");
    let s = series(&app, &q).await;
    assert_eq!(s.len(), 1);
    assert!(s[0].get("tags").is_none(), "no GROUP BY tag, no tags");
    let pts = points(&readings, "s-1", "temperature");
    let hum = points(&readings, "s-1", "humidity");
    let rows = s[0]["values"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        15,
        "360 minutes of 25-minute windows from 23:45: {rows:?}"
    );
    for row in rows {
        let start = row[0].as_i64().unwrap();
        assert_eq!(start.rem_euclid(25 * MIN), 0);
        let mut inside: Vec<f64> = pts
            .iter()
            .filter(|(t, _)| *t >= start && *t < start + 25 * MIN)
            .map(|p| p.1)
            .collect();
        assert_eq!(row[1].as_f64().unwrap(), inside[0]);
        assert_eq!(row[2].as_f64().unwrap(), *inside.last().unwrap());
        let spread = inside.iter().cloned().fold(f64::MIN, f64::max)
            - inside.iter().cloned().fold(f64::MAX, f64::min);
        assert_eq!(row[3].as_f64().unwrap(), spread);
        inside.sort_by(f64::total_cmp);
        let n = inside.len();
        let median = if n % 2 == 1 {
            inside[n / 2]
        } else {
            (inside[n / 2 - 1] + inside[n / 2]) / 2.0
        };
        assert_eq!(row[4].as_f64().unwrap(), median);
        let sum: f64 = hum
            .iter()
            .filter(|(t, _)| *t >= start && *t < start + 25 * MIN)
            .map(|p| p.1)
            .sum();
        assert!((row[5].as_f64().unwrap() - sum).abs() < 1e-9);
    }
    // Fill: s-2 reports every 20 minutes, so 10-minute windows alternate.
    let q2 = |fill: &str| {
        format!("SELECT mean(temperature) FROM climate WHERE device_id = 's-2' AND time >= {from}ms AND time < {}ms GROUP BY time(10m) fill({fill})", from + 60 * MIN)
    };
    let values = |s: &[Value]| -> Vec<Value> {
        s[0]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[1].clone())
            .collect()
    };
    let t = |i: i64| 17.0 + (i % 5) as f64;
    assert_eq!(
        values(&series(&app, &q2("null")).await),
        [
            json!(t(0)),
            Value::Null,
            json!(t(2)),
            Value::Null,
            json!(t(4)),
            Value::Null
        ]
    );
    assert_eq!(
        values(&series(&app, &q2("none")).await),
        [json!(t(0)), json!(t(2)), json!(t(4))]
    );
    assert_eq!(
        values(&series(&app, &q2("previous")).await),
        [
            json!(t(0)),
            json!(t(0)),
            json!(t(2)),
            json!(t(2)),
            json!(t(4)),
            json!(t(4))
        ]
    );
    assert_eq!(
        values(&series(&app, &q2("-1.5")).await),
        [
            json!(t(0)),
            json!(-1.5),
            json!(t(2)),
            json!(-1.5),
            json!(t(4)),
            json!(-1.5)
        ]
    );
    assert_eq!(
        values(&series(&app, &q2("linear")).await),
        [
            json!(t(0)),
            json!((t(0) + t(2)) / 2.0),
            json!(t(2)),
            json!((t(2) + t(4)) / 2.0),
            json!(t(4)),
            Value::Null
        ]
    );
    // count() is 0 in a window without its field, as InfluxDB reports it.
    let q = format!("SELECT count(temperature) FROM climate WHERE device_id = 's-2' AND time >= {from}ms AND time < {}ms GROUP BY time(10m)", from + 30 * MIN);
    assert_eq!(
        values(&series(&app, &q).await),
        [json!(1), json!(0), json!(1)]
    );
    // ORDER BY time DESC with LIMIT and OFFSET, per series; SLIMIT over series.
    let q = format!("SELECT max(current_w) FROM power WHERE {range} GROUP BY time(1h), * ORDER BY time DESC LIMIT 2 OFFSET 1 SLIMIT 1");
    let s = series(&app, &q).await;
    assert_eq!(s.len(), 1);
    assert_eq!(
        s[0]["tags"],
        json!({"device_id": "m-1"}),
        "power readings have no room: no room tag"
    );
    assert_eq!(
        s[0]["values"],
        json!([[from + 4 * 60 * MIN, 329.0], [from + 3 * 60 * MIN, 323.0]])
    );
}

/// A meter with one counter (issue 38): `spread`, `non_negative_difference`
/// and `difference` of the counter it reports answer from its readings, and
/// the counter it does not report has no series. Bought only (Tasmota's
/// `ENERGY.Total`), sold only, and a meter whose sold counter starts at 02:00.
async fn one_counter_answers_spread_and_differences<S: TestStore>() {
    let app = app(S::fresh("iql-counters").await, None, RouteSet::All).await;
    let mut readings = Vec::new();
    for i in 0..36i64 {
        let t = T0 + i * 10 * MIN;
        let kwh = 100.0 + (i * (i % 4 + 1)) as f64 * 0.05;
        readings.push(
            json!({"device_id": "m-bought", "timestamp": iso(t), "type": "power",
            "cumulative_kwh_p": kwh, "current_w": 300.0}),
        );
        readings.push(
            json!({"device_id": "m-sold", "timestamp": iso(t), "type": "power",
            "cumulative_kwh_n": kwh / 10.0, "current_w": -200.0}),
        );
        let mut gains = json!({"device_id": "m-gains", "timestamp": iso(t), "type": "power",
            "cumulative_kwh_p": kwh, "current_w": 300.0});
        if i >= 12 {
            gains["cumulative_kwh_n"] = json!(5.0 + i as f64 * 0.125);
        }
        readings.push(gains);
    }
    write(&app, &readings).await;
    let (from, to) = (T0, T0 + 6 * 60 * MIN);
    let range = format!("time >= {from}ms AND time < {to}ms");
    let hours = |pts: &[(i64, f64)]| -> Vec<Vec<f64>> {
        (0..6)
            .map(|h| {
                let start = from + h * 60 * MIN;
                pts.iter()
                    .filter(|(t, _)| *t >= start && *t < start + 60 * MIN)
                    .map(|p| p.1)
                    .collect()
            })
            .collect()
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    for (device, field) in [
        ("m-bought", "cumulative_kwh_p"),
        ("m-sold", "cumulative_kwh_n"),
        ("m-gains", "cumulative_kwh_p"),
        ("m-gains", "cumulative_kwh_n"),
    ] {
        let pts = points(&readings, device, field);
        let by_hour = hours(&pts);
        // Hourly spread: from rollups where the engine has them.
        let q = format!("SELECT spread({field}) FROM power WHERE device_id = '{device}' AND {range} GROUP BY time(1h) fill(none)");
        let s = series(&app, &q).await;
        let rows = s[0]["values"].as_array().unwrap();
        let expected: Vec<(i64, f64)> = by_hour
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(h, v)| {
                let max = v.iter().cloned().fold(f64::MIN, f64::max);
                let min = v.iter().cloned().fold(f64::MAX, f64::min);
                (from + h as i64 * 60 * MIN, max - min)
            })
            .collect();
        assert_eq!(rows.len(), expected.len(), "{device} {field}: {rows:?}");
        for (row, (t, spread)) in rows.iter().zip(&expected) {
            assert_eq!(row[0], json!(t));
            assert!(
                close(row[1].as_f64().unwrap(), *spread),
                "{device} {field}: {row} {spread}"
            );
        }
        // The hourly maxima's growth.
        let q = format!("SELECT non_negative_difference(max({field})) FROM power WHERE device_id = '{device}' AND {range} GROUP BY time(1h) fill(none)");
        let s = series(&app, &q).await;
        let rows = s[0]["values"].as_array().unwrap();
        let maxima: Vec<f64> = by_hour
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().cloned().fold(f64::MIN, f64::max))
            .collect();
        assert_eq!(rows.len(), maxima.len() - 1, "{device} {field}: {rows:?}");
        for (row, pair) in rows.iter().zip(maxima.windows(2)) {
            assert!(
                close(row[1].as_f64().unwrap(), pair[1] - pair[0]),
                "{device} {field}: {row}"
            );
        }
        // Raw differences between the counter's own readings.
        let q = format!(
            "SELECT difference({field}) FROM power WHERE device_id = '{device}' AND {range}"
        );
        let s = series(&app, &q).await;
        let rows = s[0]["values"].as_array().unwrap();
        assert_eq!(rows.len(), pts.len() - 1, "{device} {field}");
        for (row, pair) in rows.iter().zip(pts.windows(2)) {
            assert_eq!(row[0], json!(pair[1].0));
            assert!(
                close(row[1].as_f64().unwrap(), pair[1].1 - pair[0].1),
                "{device} {field}: {row}"
            );
        }
    }
    for (device, field) in [
        ("m-bought", "cumulative_kwh_n"),
        ("m-sold", "cumulative_kwh_p"),
    ] {
        let q = format!("SELECT spread({field}) FROM power WHERE device_id = '{device}' AND {range} GROUP BY time(1h) fill(none)");
        assert_eq!(
            series(&app, &q).await,
            Vec::<Value>::new(),
            "{device} {field}"
        );
    }
}

async fn raw_rows_selectors_and_zones<S: TestStore>() {
    let app = app(S::fresh("iql-raw").await, None, RouteSet::All).await;
    let readings = household();
    write(&app, &readings).await;
    // Raw rows of two devices merge into time order; tags as columns.
    let q = format!(
        "SELECT temperature, \"room\"::tag FROM climate WHERE time >= {T0}ms AND time <= {}ms",
        T0 + 20 * MIN
    );
    let s = series(&app, &q).await;
    assert_eq!(s[0]["columns"], json!(["time", "temperature", "room"]));
    let times: Vec<i64> = s[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_i64().unwrap())
        .collect();
    assert_eq!(
        times,
        [T0, T0, T0 + 10 * MIN, T0 + 20 * MIN, T0 + 20 * MIN],
        "`<=` includes its bound"
    );
    // `*` is every field and tag; LIMIT after ORDER BY time DESC is the newest.
    let s = series(
        &app,
        "SELECT * FROM climate WHERE device_id = 's-1' ORDER BY time DESC LIMIT 1",
    )
    .await;
    assert_eq!(
        s[0]["columns"],
        json!(["time", "device_id", "humidity", "room", "temperature"])
    );
    let last = readings
        .iter()
        .rev()
        .find(|r| r["device_id"] == "s-1")
        .unwrap();
    assert_eq!(
        s[0]["values"],
        json!([[
            Timestamp::parse(last["timestamp"].as_str().unwrap())
                .unwrap()
                .millis(),
            "s-1",
            last["humidity"],
            "kitchen",
            last["temperature"]
        ]])
    );
    // A lone selector without GROUP BY time has its point's time.
    let s = series(&app, "SELECT max(current_w) FROM power").await;
    assert_eq!(s[0]["values"], json!([[T0 + 35 * 10 * MIN, 335.0]]));
    let s = series(
        &app,
        "SELECT min(temperature) FROM climate WHERE device_id = 's-2'",
    )
    .await;
    assert_eq!(
        s[0]["values"],
        json!([[T0, 17.0]]),
        "the earliest of equal minima"
    );
    // A field condition, and a regex on a tag.
    let s = series(
        &app,
        "SELECT count(temperature) FROM climate WHERE temperature >= 21 AND device_id =~ /^s-/",
    )
    .await;
    let expected = readings
        .iter()
        .filter(|r| r["temperature"].as_f64().is_some_and(|t| t >= 21.0))
        .count();
    assert_eq!(s[0]["values"][0][1], json!(expected));
    // Days in a zone start at its midnight; times as RFC 3339 without `epoch`.
    let q = "SELECT count(humidity) FROM climate WHERE time >= '2026-11-20T00:00:00Z' AND time < '2026-11-22T00:00:00Z' GROUP BY time(1d) fill(none) tz('Asia/Tokyo')";
    let (status, body) = query(&app, &[("q", q)]).await;
    assert_eq!(status, 200, "{body}");
    // 09:00 Tokyo is midnight UTC: all six hours fall in the local day of the 21st.
    assert_eq!(
        body["results"][0]["series"][0]["values"],
        json!([["2026-11-20T15:00:00Z", 54]])
    );
    // Other epochs.
    let (_, body) = query(
        &app,
        &[("q", "SELECT first(current_w) FROM power"), ("epoch", "s")],
    )
    .await;
    assert_eq!(
        body["results"][0]["series"][0]["values"][0][0],
        json!(T0 / 1000)
    );
}

async fn errors_are_influxdb_s_and_say_what_is_not_supported<S: TestStore>() {
    let app = app(S::fresh("iql-err").await, Some("tok-1"), RouteSet::All).await;
    let auth = [("authorization", "Token tok-1")];
    let ask = |params: Vec<(&'static str, String)>| {
        let app = app.clone();
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = handle(&app, api_event("GET", "/query", &params, None, &auth)).await;
            answer(&r)
        }
    };
    let (status, body) = ask(vec![(
        "q",
        "SELECT derivative(temperature) FROM climate".into(),
    )])
    .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("error parsing query: function derivative is not supported"),
        "{body}"
    );
    let (status, body) = ask(vec![]).await;
    assert_eq!(
        (status, body),
        (400, json!({"error": "missing required parameter \"q\""}))
    );
    let (status, body) = ask(vec![
        ("q", "SHOW DATABASES".into()),
        ("epoch", "days".into()),
    ])
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("epoch"));
    // Statement errors are inside the result, beside the statements that answer.
    let (status, body) = ask(vec![("q", "SELECT mean(temperature) FROM climate GROUP BY time(1h); SELECT mean(temperature), temperature FROM climate; SHOW DATABASES".into())]).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("lower limit"),
        "{body}"
    );
    assert!(
        body["results"][1]["error"]
            .as_str()
            .unwrap()
            .contains("mixing aggregate"),
        "{body}"
    );
    assert_eq!(body["results"][2]["series"][0]["name"], "databases");
    let (status, body) = ask(vec![("q", "SELECT difference(mean(temperature)) FROM climate WHERE time > now() - 1h; SELECT non_negative_difference(temperature), humidity FROM climate".into())]).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["results"][0]["error"]
            .as_str()
            .unwrap()
            .contains("requires a GROUP BY interval"),
        "{body}"
    );
    assert!(
        body["results"][1]["error"]
            .as_str()
            .unwrap()
            .contains("beside other fields"),
        "{body}"
    );
    // The token as InfluxDB 1.x clients send it.
    let (status, _) = answer(
        &handle(
            &app,
            api_event("GET", "/query", &[("q", "SHOW DATABASES")], None, &[]),
        )
        .await,
    );
    assert_eq!(status, 401);
    let (status, _) = answer(
        &handle(
            &app,
            api_event(
                "GET",
                "/query",
                &[("q", "SHOW DATABASES"), ("u", "grafana"), ("p", "tok-1")],
                None,
                &[],
            ),
        )
        .await,
    );
    assert_eq!(status, 200);
    // POST with the statement in a form body (Grafana's POST method, Telegraf).
    let r = handle(
        &app,
        api_event(
            "POST",
            "/query",
            &[("db", "home")],
            Some("q=SHOW+DATABASES&epoch=ms"),
            &[
                ("authorization", "Token tok-1"),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
        ),
    )
    .await;
    let (status, body) = answer(&r);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["results"][0]["series"][0]["values"],
        json!([["home"], ["ingester"]])
    );
}

async fn chunked_answers_are_one_document_per_chunk<S: TestStore>() {
    let app = app(S::fresh("iql-chunk").await, None, RouteSet::All).await;
    let readings = household();
    write(&app, &readings).await;
    let r = handle(
        &app,
        api_event(
            "GET",
            "/query",
            &[
                ("q", "SELECT current_w FROM power; SHOW DATABASES"),
                ("chunked", "true"),
                ("chunk_size", "10"),
                ("epoch", "ms"),
            ],
            None,
            &[],
        ),
    )
    .await;
    assert_eq!(r.status_code, 200);
    let text = match r.body.unwrap() {
        shared::aws_lambda_events::encodings::Body::Text(t) => t,
        other => panic!("{other:?}"),
    };
    let docs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        docs.len(),
        5,
        "36 rows in chunks of 10, then the second statement: {text}"
    );
    let rows: usize = docs[..4]
        .iter()
        .map(|d| {
            d["results"][0]["series"][0]["values"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(rows, 36);
    assert_eq!(docs[0]["results"][0]["partial"], true);
    assert_eq!(docs[0]["results"][0]["series"][0]["partial"], true);
    assert!(docs[3]["results"][0].get("partial").is_none());
    assert_eq!(docs[4]["results"][0]["statement_id"], 1);
}

on_every_store_and_batches!(
    one_counter_answers_spread_and_differences,
    meta_queries_list_what_grafana_picks_from,
    windows_tags_and_fill_answer_as_the_readings_say,
    raw_rows_selectors_and_zones,
    errors_are_influxdb_s_and_say_what_is_not_supported,
    chunked_answers_are_one_document_per_chunk,
);

const ZONES: [&str; 5] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Adelaide",
];

/// `GROUP BY time(1h|1d)` equals the stats route, bucket for bucket, and the
/// readings path (a condition on `room` forces it) equals the rollups path.
async fn grouped_means_match_the_stats_route<S: TestStore>(
    temps: Vec<(i64, f64)>,
    zone: usize,
    daily: bool,
    case: usize,
) -> Result<(), TestCaseError> {
    let app = app(
        S::fresh(&format!("iql-prop-{case}")).await,
        None,
        RouteSet::All,
    )
    .await;
    let readings: Vec<Value> = temps
        .iter()
        .map(|(minute, t)| json!({"device_id": "p-1", "timestamp": iso(T0 + minute * MIN), "room": "lab", "temperature": t, "humidity": 50.0}))
        .collect();
    write(&app, &readings).await;
    // InfluxDB moves hourly windows by a zone's half hour; the stats route's
    // hours are UTC's, so hours are compared in whole-hour zones only.
    let tz = if daily { ZONES[zone] } else { ZONES[zone % 3] };
    let (from, to) = (iso(T0), iso(T0 + 3 * 1440 * MIN));
    let bucket = if daily { "1d" } else { "1h" };
    let (status, stats) = answer(
        &handle(
            &app,
            api_event(
                "GET",
                "/devices/p-1/stats",
                &[("from", &from), ("to", &to), ("bucket", bucket), ("tz", tz)],
                None,
                &[],
            ),
        )
        .await,
    );
    prop_assert_eq!(status, 200, "{}", stats);
    let expected: Vec<(String, Value)> = stats["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["start"].as_str().unwrap().to_string(),
                b["fields"]["temperature"].clone(),
            )
        })
        .collect();
    // Through the device's rollups, through its readings (a condition on
    // `room` beside `device_id` needs each reading), through the room's rollups.
    for extra in [
        "device_id = 'p-1'",
        "device_id = 'p-1' AND room =~ /.*/",
        "room = 'lab'",
    ] {
        let q = format!("SELECT mean(temperature), min(temperature), max(temperature), count(temperature) FROM climate WHERE {extra} AND time >= '{from}' AND time < '{to}' GROUP BY time({bucket}) fill(none) tz('{tz}')");
        let (status, body) = query(&app, &[("q", &q)]).await;
        prop_assert_eq!(status, 200, "{}", body);
        let rows = body["results"][0]["series"][0]["values"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        prop_assert_eq!(
            rows.len(),
            expected.len(),
            "{} {}: {} against {}",
            tz,
            extra,
            body,
            stats
        );
        for (row, (start, f)) in rows.iter().zip(&expected) {
            let start = Timestamp::parse(start).unwrap().millis();
            let at = chrono::DateTime::parse_from_rfc3339(row[0].as_str().unwrap())
                .unwrap()
                .timestamp_millis();
            prop_assert_eq!(at, start, "{} {}", tz, extra);
            // The stats route rounds means to 6 decimals.
            prop_assert!((row[1].as_f64().unwrap() - f["mean"].as_f64().unwrap()).abs() <= 5e-7);
            prop_assert_eq!(&row[2], &f["min"]);
            prop_assert_eq!(&row[3], &f["max"]);
            prop_assert_eq!(&row[4], &f["count"]);
        }
    }
    Ok(())
}

fn temperatures() -> impl Strategy<Value = Vec<(i64, f64)>> {
    proptest::collection::btree_map(0i64..3 * 1440, -100i32..400, 1..60).prop_map(|m| {
        m.into_iter()
            .map(|(minute, t)| (minute, t as f64 / 10.0))
            .collect()
    })
}

macro_rules! property_on {
    ($name:ident, $store:ty) => {
        #[test]
        fn $name() {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let case = std::sync::atomic::AtomicUsize::new(0);
            proptest!(ProptestConfig::with_cases(12), |(temps in temperatures(), zone in 0..ZONES.len(), daily in any::<bool>())| {
                let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                rt.block_on(grouped_means_match_the_stats_route::<$store>(temps, zone, daily, n))?;
            });
        }
    };
}

property_on!(
    grouped_means_match_the_stats_route_on_sqlite,
    shared::store::SqliteStore
);
property_on!(
    grouped_means_match_the_stats_route_on_dynalite,
    shared::store::DynamoStore
);
