//! A database written by an earlier version keeps answering as it did.
//!
//! Each fixture was written by `regenerate_the_fixture` below, with the code
//! of its version, and beside it `embedded-vN-answers.json` holds that
//! version's answer to every read route:
//!
//! - `embedded-v1.db` (2026-11-22): every item as DynamoDB JSON in one
//!   `items` table (the store issue 13 replaced);
//! - `embedded-v2.db` (2026-11-23, written by the code of `263516c^`): the
//!   family tables, no rollups;
//! - `embedded-v3.db` (2026-11-23, by `718cc82`): hour and day rollups, every
//!   reading a row.
//!
//! A copy of the file, opened by today's code (which migrates it when the
//! schema has changed), must give the same answers, again once its closed
//! days are sealed into blocks, and keep taking writes.

use integration_tests::{answer, api_event, app, climate, handle, power};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::store::{SqliteStore, Store};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn at(hour: i64) -> String {
    let t = 1_793_491_200_000i64 + hour * 3_600_000; // 2026-11-01T00:00:00Z
    shared::model::Timestamp::from_millis(t)
        .unwrap()
        .to_string()
}

/// Three days of a meter, two room sensors (one moves rooms), a multi-sensor
/// with other quantities, and the names users gave.
fn readings() -> Vec<Value> {
    let mut out = Vec::new();
    for h in 0..72 {
        out.push(power(
            "meter-1",
            &at(h),
            5210.125 + h as f64 * 0.5,
            812.5,
            300.0 + h as f64,
        ));
        out.push(climate(
            "sensor-a",
            "bedroom",
            &at(h),
            18.0 + (h % 24) as f64 / 4.0,
            45.5,
        ));
        let room = if h < 36 { "kitchen" } else { "hall" };
        out.push(climate(
            "sensor-b",
            room,
            &at(h),
            20.25,
            50.0 + (h % 10) as f64,
        ));
    }
    for h in [1, 25, 49] {
        out.push(
            json!({"device_id": "aranet-1", "timestamp": at(h), "room": "office",
            "temperature": 21.0, "humidity": 40, "co2_ppm": 612 + h, "pressure_hpa": 1013.2,
            "battery_pct": 80}),
        );
    }
    out
}

/// Every read route, with its query.
fn requests() -> Vec<(String, Vec<(&'static str, String)>)> {
    let range = || vec![("from", at(0)), ("to", at(72))];
    let with = |mut q: Vec<(&'static str, String)>, extra: &[(&'static str, &str)]| {
        q.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        q
    };
    let mut out = vec![
        ("/devices".to_owned(), vec![]),
        ("/rooms".to_owned(), vec![]),
        ("/readings".to_owned(), with(range(), &[("limit", "1000")])),
    ];
    for d in ["meter-1", "sensor-a", "sensor-b", "aranet-1"] {
        out.push((format!("/devices/{d}"), vec![]));
        out.push((format!("/devices/{d}/latest"), vec![]));
        out.push((
            format!("/devices/{d}/readings"),
            with(range(), &[("limit", "1000")]),
        ));
        out.push((
            format!("/devices/{d}/stats"),
            with(range(), &[("bucket", "1d")]),
        ));
    }
    out.push((
        "/devices/meter-1/energy".to_owned(),
        with(range(), &[("bucket", "1d")]),
    ));
    out.push((
        "/devices/sensor-a/search".to_owned(),
        with(range(), &[("tmin", "20"), ("hmin", "40")]),
    ));
    for r in ["bedroom", "kitchen", "hall", "office"] {
        out.push((format!("/rooms/{r}"), vec![]));
        out.push((
            format!("/rooms/{r}/readings"),
            with(range(), &[("limit", "1000")]),
        ));
        out.push((
            format!("/rooms/{r}/stats"),
            with(range(), &[("bucket", "1d")]),
        ));
    }
    out.push((
        "/rooms/bedroom/search".to_owned(),
        with(range(), &[("tmin", "20"), ("hmin", "40")]),
    ));
    out
}

/// `{"GET path?query": {"status", "body"}}` for every read route.
async fn answers<S: Store>(app: &App<S>) -> Value {
    let mut out = serde_json::Map::new();
    for (path, query) in requests() {
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = answer(&handle(app, api_event("GET", &path, &query, None, &[])).await);
        let key = format!(
            "GET {path}?{}",
            query
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&")
        );
        out.insert(key, json!({"status": status, "body": body}));
    }
    Value::Object(out)
}

async fn post_all<S: Store>(app: &App<S>, readings: &[Value]) {
    let body = serde_json::to_string(readings).unwrap();
    let (status, resp) =
        answer(&handle(app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
    assert_eq!(status, 200, "{resp}");
}

/// Today's answers without what earlier versions did not say, and with
/// what they may say differently: `read_units` (since issue 16) and
/// `source`/`items_read` (since issue 14) where the expected answer has none;
/// `items_read`, `read_units` and `requests` of box search, which count what a sealed
/// block costs to read (the whole day) since version 4.
fn comparable(mut got: Value, expected: &Value) -> Value {
    for (key, answer) in got.as_object_mut().unwrap() {
        let want = &expected[key]["body"];
        let Some(body) = answer["body"].as_object_mut() else {
            continue;
        };
        if want.get("read_units").is_none() {
            if let Some(units) = body.remove("read_units") {
                assert!(units.as_f64().unwrap() > 0.0, "{key}");
            }
        }
        if want.get("source").is_none() && body.remove("source").is_some() {
            assert!(body.remove("items_read").is_some(), "{key}");
        }
        if key.contains("/search") {
            let returned = body.get("items_returned").and_then(Value::as_u64);
            if let Some(read) = body.get_mut("items_read") {
                assert!(read.as_u64() >= returned, "{key}");
                *read = want["items_read"].clone();
            }
            if let Some(units) = body.get_mut("read_units") {
                assert!(units.as_f64() > Some(0.0), "{key}");
                *units = want["read_units"].clone();
            }
            if let Some(requests) = body.get_mut("requests") {
                assert!(requests.as_u64() >= Some(1), "{key}");
                *requests = want["requests"].clone();
            }
        }
    }
    got
}

fn assert_same(got: &Value, expected: &Value, when: &str) {
    for (key, want) in expected.as_object().unwrap() {
        assert_eq!(&got[key], want, "{when}: {key}");
    }
    assert_eq!(
        got.as_object().unwrap().len(),
        expected.as_object().unwrap().len()
    );
}

/// Opens a copy of a fixture: every answer as its version gave it, before
/// and after its days are sealed; then it takes a reading.
async fn answers_as_it_did(version: u32) {
    let dir = std::env::temp_dir().join(format!("upgrade-v{version}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("ingester.db");
    std::fs::copy(fixture(&format!("embedded-v{version}.db")), &copy).unwrap();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(&format!("embedded-v{version}-answers.json"))).unwrap(),
    )
    .unwrap();
    let store = SqliteStore::open(&copy).unwrap();
    let app = app(store.clone(), None, RouteSet::All).await;
    let got = answers(&app).await;
    // Aggregates come from the rollups kept (or built on open).
    let from_rollups = got
        .as_object()
        .unwrap()
        .values()
        .filter(|a| a["body"]["source"].as_str().is_some_and(|s| s != "raw"))
        .count();
    assert!(from_rollups > 0);
    assert_same(&comparable(got, &expected), &expected, "as opened");

    let unsealed = store.stored_readings().await.unwrap();
    let sealed = store
        .seal_closed_days(shared::model::Timestamp::now().millis(), |_, _| {
            std::ops::ControlFlow::Continue(())
        })
        .await
        .unwrap();
    assert_eq!(sealed, 12, "three days of four devices");
    assert_eq!(store.stored_readings().await.unwrap(), unsealed);
    assert_same(
        &comparable(answers(&app).await, &expected),
        &expected,
        "sealed",
    );

    // And it keeps taking readings, which join the old ones.
    post_all(&app, &[power("meter-1", &at(72), 5300.0, 812.5, 10.0)]).await;
    let (status, latest) = answer(
        &handle(
            &app,
            api_event("GET", "/devices/meter-1/latest", &[], None, &[]),
        )
        .await,
    );
    assert_eq!(
        (status, latest["reading"]["timestamp"].clone()),
        (200, json!(at(72)))
    );
    drop(app);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_database_from_the_items_version_answers_every_read_as_it_did() {
    answers_as_it_did(1).await;
}

#[tokio::test]
async fn a_database_from_version_2_answers_every_read_as_it_did() {
    answers_as_it_did(2).await;
}

#[tokio::test]
async fn a_database_from_version_3_answers_every_read_as_it_did() {
    answers_as_it_did(3).await;
}

/// Writes the fixture and its answers with the code of the day. Run by hand,
/// only to make a fixture for a new schema generation; never to refresh this
/// one, which stands for files users already have.
#[tokio::test]
#[ignore = "writes tests/fixtures: run by hand with the version the fixture stands for"]
async fn regenerate_the_fixture() {
    let dir = std::env::temp_dir().join(format!("fixture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ingester.db");
    let app = app(SqliteStore::open(&path).unwrap(), None, RouteSet::All).await;
    post_all(&app, &readings()).await;
    for (method, path, body) in [
        ("PUT", "/devices/meter-1", r#"{"name":"Smart meter"}"#),
        ("PUT", "/rooms/kitchen", r#"{"name":"Kitchen"}"#),
    ] {
        let (status, resp) =
            answer(&handle(&app, api_event(method, path, &[], Some(body), &[])).await);
        assert_eq!(status, 200, "{resp}");
    }
    let answers = answers(&app).await;
    // The file alone must hold everything: empty the WAL into it, then copy it.
    app.store.checkpoint().await.unwrap();
    std::fs::copy(&path, fixture("embedded-v1.db")).unwrap();
    std::fs::write(
        fixture("embedded-v1-answers.json"),
        serde_json::to_string_pretty(&answers).unwrap() + "\n",
    )
    .unwrap();
}
