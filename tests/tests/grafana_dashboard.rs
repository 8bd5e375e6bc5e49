//! Grafana ready-made (issue 79; docs/grafana.md): the dashboard and the
//! provisioning files under `docs/grafana/` are what Grafana reads, and
//! every panel's query, its macros filled in as Grafana fills them
//! (`$timeFilter`, `$__interval`, a multi-value `$room`, the panel's own
//! relative time), finds rows on `/query` on every engine, over a
//! household's weeks with a gas meter and a two-tariff P1 meter.

use integration_tests::household::household;
use integration_tests::{
    answer, api_event, app, handle, through_stream_functions, TestStore, AS_BATCHES,
};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::model::{Reading, Span, Timestamp, DAY_MS, HOUR_MS};
use shared::store::{DynamoStore, SqliteStore, Store};

fn file(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../docs/grafana/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("docs/grafana/{path}: {e}"))
}

fn dashboard() -> Value {
    serde_json::from_str(&file("ingester-dashboard.json")).unwrap()
}

/// The test's now: the 15th of this month at noon (UTC), or, while that is
/// ahead, noon of last month's last day: "this month" holds two weeks of
/// readings or more, and "now" is at most about two weeks back (the raw
/// window a table reads items from is 35 days), whatever day the test runs.
fn now() -> i64 {
    let today = Timestamp::now().to_string();
    let month = Timestamp::parse(&format!("{}-01T00:00:00Z", &today[0..7]))
        .unwrap()
        .millis();
    let fifteenth = month + 14 * DAY_MS + 12 * HOUR_MS;
    if fifteenth < Timestamp::now().millis() - HOUR_MS {
        fifteenth
    } else {
        month - 12 * HOUR_MS
    }
}

/// Where a panel's relative time (`timeFrom`) puts its range, as Grafana does.
fn range(panel: &Value, now: i64) -> (i64, i64) {
    match panel["timeFrom"].as_str() {
        None => (now - DAY_MS, now),
        Some("now-30d") => (now - 30 * DAY_MS, now),
        Some("now/M") => {
            let t = Timestamp::from_millis(now).unwrap().to_string();
            let start = Timestamp::parse(&format!("{}-01T00:00:00Z", &t[0..7])).unwrap();
            (start.millis(), now)
        }
        Some(other) => panic!("a relative time the test does not know: {other}"),
    }
}

/// `$__interval` as Grafana computes it: the range over the panel's width
/// in points (about 1,000), at least the data source's `timeInterval`
/// (1m), rounded up to one of its steps.
fn interval(from: i64, to: i64) -> &'static str {
    let steps = [
        (60_000, "1m"),
        (120_000, "2m"),
        (300_000, "5m"),
        (600_000, "10m"),
        (900_000, "15m"),
        (1_800_000, "30m"),
        (HOUR_MS, "1h"),
        (3 * HOUR_MS, "3h"),
        (6 * HOUR_MS, "6h"),
        (12 * HOUR_MS, "12h"),
        (DAY_MS, "1d"),
    ];
    let raw = (to - from) / 1000;
    steps
        .iter()
        .find(|(ms, _)| *ms >= raw)
        .map_or("1d", |(_, s)| s)
}

/// A panel's query as Grafana sends it.
fn filled(query: &str, (from, to): (i64, i64), rooms: &[&str], tz: &str) -> String {
    // A multi-value variable in a regex: its values escaped, in a group.
    let room = format!("({})", rooms.join("|"));
    query
        .replace(
            "$timeFilter",
            &format!("time >= {from}ms and time <= {to}ms"),
        )
        .replace("$__interval", interval(from, to))
        .replace("$room", &room)
        .replace("$tz", tz)
}

/// The household's weeks up to the test's now, and a gas meter's hours.
fn readings(now: i64) -> Vec<Value> {
    let days = 35;
    let shift = now - (Span::Hour.start_of(Timestamp::now()).millis() - HOUR_MS);
    let mut out: Vec<Value> = household(79, days * 24)
        .into_iter()
        .map(|mut r| {
            r.timestamp = Timestamp::from_millis(r.timestamp.millis() + shift).unwrap();
            serde_json::to_value(&r).unwrap()
        })
        .collect();
    let mut gas = 4_321.5f64;
    // A two-tariff P1 meter: tariff 1 by day, tariff 2 by night.
    let (mut t1, mut t2) = (4_021.117f64, 3_817.25f64);
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    for hour in 0..days * 24 {
        gas += 0.05 + (hour % 24) as f64 * 0.01;
        match hour % 24 {
            7..=22 => t1 += 0.4,
            _ => t2 += 0.3,
        }
        let at = Timestamp::from_millis(now - (days * 24 - hour) * HOUR_MS).unwrap();
        out.push(
            json!({"device_id": "gas-meter", "timestamp": at.to_string(), "type": "meter",
                        "gas_m3": round(gas)}),
        );
        // Its last ten days (the tariff panel's range holds them).
        if hour >= (days - 10) * 24 {
            out.push(
                json!({"device_id": "p1", "timestamp": at.to_string(), "type": "power",
                "cumulative_kwh_p": round(t1 + t2), "cumulative_kwh_p_t1": round(t1),
                "cumulative_kwh_p_t2": round(t2)}),
            );
        }
    }
    out
}

async fn query<S: Store>(app: &App<S>, q: &str) -> Value {
    let (status, body) = answer(
        &handle(
            app,
            api_event("GET", "/query", &[("db", "home"), ("q", q)], None, &[]),
        )
        .await,
    );
    assert_eq!(status, 200, "{q}: {body}");
    body
}

/// Every panel, every target: a query of ours (raw InfluxQL on our data
/// source), and rows where the household has them.
/// Posts the household's weeks, a thousand readings a request; what they
/// were, parsed.
async fn post<S: Store>(app: &App<S>, now: i64) -> Vec<Reading> {
    let readings = readings(now);
    for chunk in readings.chunks(1000) {
        let body = serde_json::to_string(chunk).unwrap();
        let (status, answer) =
            answer(&handle(app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
        assert_eq!(status, 200, "{answer}");
    }
    readings
        .iter()
        .map(|r| Reading::from_json(r, Timestamp::now(), |_| None).unwrap())
        .collect()
}

async fn every_panel_finds_rows<S: Store>(app: App<S>, now: i64) {
    // As a sandbox's cache would be past its 30 seconds.
    app.registry.invalidate();
    let rooms_answer = query(&app, "SHOW TAG VALUES FROM \"climate\" WITH KEY = \"room\"").await;
    let rooms: Vec<String> = rooms_answer["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("the room variable's query: {rooms_answer}"))
        .iter()
        .map(|v| v[1].as_str().unwrap().to_owned())
        .collect();
    // The climate sensor's rooms (the water meter's cellar is no climate's).
    assert_eq!(rooms, ["living", "study"]);
    let rooms: Vec<&str> = rooms.iter().map(String::as_str).collect();
    let d = dashboard();
    let panels = d["panels"].as_array().unwrap();
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    for wanted in [
        "Energy bought per day",
        "Energy this month",
        "Gas per day",
        "Gas this month",
        "Water per day",
        "Energy bought per day, by tariff",
    ] {
        assert!(titles.contains(&wanted), "{wanted}: {titles:?}");
    }
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        assert_eq!(panel["datasource"]["uid"], "${ds}", "{title}");
        for target in panel["targets"].as_array().unwrap() {
            assert_eq!(target["rawQuery"], true, "{title}");
            let q = filled(
                target["query"].as_str().unwrap(),
                range(panel, now),
                &rooms,
                "Europe/Berlin",
            );
            let body = query(&app, &q).await;
            let result = &body["results"][0];
            assert!(result["error"].is_null(), "{title}: {q}: {body}");
            let series = result["series"]
                .as_array()
                .unwrap_or_else(|| panic!("{title}: no series: {q}"));
            let values: usize = series
                .iter()
                .map(|s| {
                    s["values"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|row| row.as_array().unwrap()[1..].iter().any(|v| !v.is_null()))
                        .count()
                })
                .sum();
            assert!(values > 0, "{title}: no value: {q}: {body}");
        }
    }
}

/// The embedded store keeps its rollups as it writes.
#[tokio::test]
async fn every_panel_finds_rows_on_the_embedded_store() {
    let app = app(SqliteStore::fresh("grafana").await, None, RouteSet::All).await;
    let now = now();
    post(&app, now).await;
    every_panel_finds_rows(app, now).await
}

/// A table taking batches as blocks writes a device's hours and rollups
/// from each request; the hourly gas, water and P1 meters' lone readings are
/// items, which the stream functions fold, as on AWS.
#[tokio::test]
async fn every_panel_finds_rows_on_dynamodb() {
    let store = AS_BATCHES.scope(true, DynamoStore::fresh("grafana")).await;
    let app = app(store, None, RouteSet::All).await;
    let now = now();
    let written = post(&app, now).await;
    let items: Vec<Reading> = written
        .into_iter()
        .filter(|r| ["gas-meter", "water-meter", "p1"].contains(&r.device_id.as_str()))
        .collect();
    through_stream_functions(&app.store, &items).await;
    every_panel_finds_rows(app, now).await
}

/// The files Grafana reads: a dashboard whose panels take the data source
/// from its variable (an import picks it, provisioning names it), and the
/// provisioning of the data source (InfluxQL on our URL, the token from
/// Grafana's environment, never written in the file) and of the dashboard.
#[test]
fn the_provisioning_files_are_what_grafana_reads() {
    let d = dashboard();
    let variables = d["templating"]["list"].as_array().unwrap();
    let ds = variables.iter().find(|v| v["name"] == "ds").unwrap();
    assert_eq!(
        (ds["type"].as_str(), ds["query"].as_str()),
        (Some("datasource"), Some("influxdb"))
    );
    let room = variables.iter().find(|v| v["name"] == "room").unwrap();
    assert_eq!(room["multi"], true);
    assert_eq!(room["includeAll"], true);
    assert!(d["uid"].is_string() && d["schemaVersion"].as_u64() >= Some(36));

    let source: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&file("provisioning/datasources/ingester.yaml")).unwrap();
    assert_eq!(source["apiVersion"].as_u64(), Some(1));
    let s = &source["datasources"][0];
    assert_eq!(s["type"].as_str(), Some("influxdb"));
    assert_eq!(s["jsonData"]["version"].as_str(), Some("InfluxQL"));
    assert_eq!(s["url"].as_str(), Some("http://127.0.0.1:3000"));
    assert_eq!(
        s["secureJsonData"]["password"].as_str(),
        Some("$INGEST_TOKEN"),
        "the token from the environment, not the file"
    );
    let boards: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&file("provisioning/dashboards/ingester.yaml")).unwrap();
    let p = &boards["providers"][0];
    assert_eq!(p["type"].as_str(), Some("file"));
    assert!(p["options"]["path"].as_str().unwrap().starts_with('/'));
    // docs/grafana.md points at the files, not at a sample in the page.
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/grafana.md"))
        .unwrap();
    assert!(page.contains("grafana/ingester-dashboard.json"));
    assert!(
        !page.contains("\"panels\": ["),
        "the dashboard lives in its file"
    );
}
