//! Every input limit, checked at the limit and one past it: the limit is
//! accepted, one past is a clear 4xx naming what is wrong.

use integration_tests::handle;
use integration_tests::{answer, api_event, app, power};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::store::SqliteStore;

async fn call(
    app: &App<SqliteStore>,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    answer(&handle(app, api_event(method, path, query, body, &[])).await)
}

fn batch(n: usize) -> String {
    let readings: Vec<Value> = (0..n)
        .map(|i| {
            power(
                "m",
                &shared::model::Timestamp::from_millis(1_795_219_200_000 + i as i64 * 1000)
                    .unwrap()
                    .to_string(),
                1.0,
                0.0,
                0.0,
            )
        })
        .collect();
    serde_json::to_string(&readings).unwrap()
}

#[tokio::test]
async fn every_limit_holds_exactly_at_its_boundary() {
    let app = app(SqliteStore::in_memory().unwrap(), None, RouteSet::All).await;

    // Readings per request: 1000 / 1001.
    assert_eq!(
        call(&app, "POST", "/readings", &[], Some(&batch(1000)))
            .await
            .0,
        200
    );
    let (s, b) = call(&app, "POST", "/readings", &[], Some(&batch(1001))).await;
    assert_eq!(
        (s, b["error"]["code"].as_str().unwrap()),
        (413, "payload_too_large")
    );

    // Body bytes: exactly 1 MiB is parsed (and here valid), one byte more is 413.
    let one = power("m", "2026-11-21T00:00:00Z", 1.0, 0.0, 0.0).to_string();
    let pad = shared::ingest::MAX_BODY_BYTES - one.len();
    let exact = format!("{}{one}", " ".repeat(pad));
    assert_eq!(exact.len(), shared::ingest::MAX_BODY_BYTES);
    assert_eq!(
        call(&app, "POST", "/readings", &[], Some(&exact)).await.0,
        200
    );
    assert_eq!(
        call(&app, "POST", "/readings", &[], Some(&format!(" {exact}")))
            .await
            .0,
        413
    );

    // Id lengths, in a body and in a path: 128/129 for devices, 64/65 for rooms.
    for (len, status) in [(128, 200), (129, 400)] {
        let body = power(&"d".repeat(len), "2026-11-21T00:00:00Z", 1.0, 0.0, 0.0).to_string();
        let (s, b) = call(&app, "POST", "/readings", &[], Some(&body)).await;
        assert_eq!(s, status, "device id of {len}: {b}");
        let (s, _) = call(
            &app,
            "GET",
            &format!("/devices/{}/readings", "d".repeat(len)),
            &[],
            None,
        )
        .await;
        assert_eq!(s, status, "device id of {len} in a path");
    }
    for (len, status) in [(64, 200), (65, 400)] {
        let (s, _) = call(
            &app,
            "GET",
            &format!("/rooms/{}/readings", "r".repeat(len)),
            &[],
            None,
        )
        .await;
        assert_eq!(s, status, "room id of {len}");
    }

    // JSON nesting: serde_json's limit of 128 levels; deeper is invalid_json, never a crash.
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(
        call(&app, "POST", "/readings", &[], Some(&nested(127)))
            .await
            .1["error"]["code"],
        "invalid_readings"
    );
    assert_eq!(
        call(&app, "POST", "/readings", &[], Some(&nested(129)))
            .await
            .1["error"]["code"],
        "invalid_json"
    );

    // Query parameter values: 64 characters, cursors 512.
    let (s, b) = call(
        &app,
        "GET",
        "/devices/m/readings",
        &[("order", &"a".repeat(65))],
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"]["details"][0]["message"].as_str().unwrap()),
        (400, "is longer than 64 characters")
    );
    let (s, b) = call(
        &app,
        "GET",
        "/devices/m/readings",
        &[("cursor", &"A".repeat(512))],
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"]["details"][0]["message"].as_str().unwrap()),
        (400, "is not a cursor returned by this API")
    );
    let (s, b) = call(
        &app,
        "GET",
        "/devices/m/readings",
        &[("cursor", &"A".repeat(513))],
        None,
    )
    .await;
    assert_eq!(s, 400);
    assert!(
        b["error"]["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 512"),
        "{b}"
    );

    // limit 1000 / 1001; buckets 5000 / more.
    assert_eq!(
        call(
            &app,
            "GET",
            "/devices/m/readings",
            &[("limit", "1000")],
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(
        call(
            &app,
            "GET",
            "/devices/m/readings",
            &[("limit", "1001")],
            None
        )
        .await
        .0,
        400
    );
    let week = [
        ("from", "2026-11-01T00:00:00Z"),
        ("to", "2026-11-04T11:00:00Z"),
        ("bucket", "1m"),
    ]; // 4980 minutes
    assert_eq!(
        call(&app, "GET", "/devices/m/stats", &week, None).await.0,
        200
    );
    let longer = [
        ("from", "2026-11-01T00:00:00Z"),
        ("to", "2026-11-04T12:00:00Z"),
        ("bucket", "1m"),
    ]; // 5040
    assert_eq!(
        call(&app, "GET", "/devices/m/stats", &longer, None).await.0,
        400
    );

    // A PUT body: 4 KiB.
    let name_body = |len: usize| json!({"name": "n".repeat(len)}).to_string();
    assert_eq!(
        call(&app, "PUT", "/devices/m", &[], Some(&name_body(100)))
            .await
            .0,
        200
    );
    assert_eq!(
        call(&app, "PUT", "/devices/m", &[], Some(&name_body(101)))
            .await
            .0,
        400
    );
    assert_eq!(
        call(
            &app,
            "PUT",
            "/devices/m",
            &[],
            Some(&format!("{:4097}", "{}"))
        )
        .await
        .0,
        413
    );
}
