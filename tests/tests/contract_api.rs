//! The HTTP API contract through API Gateway v2 events, run on every engine
//! (`on_every_store!`): every route, and every error status with a JSON body
//! that says what is wrong.

use integration_tests::handle;
use integration_tests::{
    answer, api_event, app, climate, on_every_store_and_batches, power, timestamps, TestStore,
};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::model::{Reading, Timestamp};
use shared::store::Store;

async fn post<S: Store>(app: &App<S>, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    answer(
        &handle(
            app,
            api_event("POST", "/readings", &[], Some(body), headers),
        )
        .await,
    )
}

async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    answer(&handle(app, api_event("GET", path, query, None, &[])).await)
}

const DAY: [(&str, &str); 2] = [
    ("from", "2026-11-21T00:00:00Z"),
    ("to", "2026-11-22T00:00:00Z"),
];

/// Registry items as the stream handler would leave them after these readings.
async fn register<S: Store>(store: &S, readings: &[Value]) {
    let parsed: Vec<Reading> = readings
        .iter()
        .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
        .collect();
    let plan = shared::domain::registry::plan(parsed.iter().enumerate());
    assert!(shared::registry::apply(store, &plan).await.is_empty());
}

fn sample() -> Vec<Value> {
    let mut v = vec![];
    for m in 0..5 {
        v.push(power(
            "meter-1",
            &format!("2026-11-21T01:{:02}:00Z", m * 10),
            100.0 + m as f64,
            1.0,
            300.0,
        ));
        v.push(climate(
            "s-bed",
            "bedroom",
            &format!("2026-11-21T01:{:02}:00Z", m * 10),
            20.0 + m as f64,
            40.0,
        ));
        v.push(climate(
            "s-kit",
            "kitchen",
            &format!("2026-11-21T01:{:02}:00Z", m * 10),
            24.0,
            55.0,
        ));
    }
    v
}

async fn seeded<S: TestStore>(hint: &str, token: Option<&str>) -> App<S> {
    let store = S::fresh(hint).await;
    let body = serde_json::to_string(&sample()).unwrap();
    let readings: Vec<Reading> = sample()
        .iter()
        .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
        .collect();
    assert!(
        store.write_readings(&readings).await.unwrap_written(),
        "{body}"
    );
    register(&store, &sample()).await;
    app(store, token, RouteSet::All).await
}

trait Written {
    fn unwrap_written(self) -> bool;
}
impl Written for shared::store::WriteReport {
    fn unwrap_written(self) -> bool {
        self.unwritten.is_empty()
    }
}

async fn post_one_reading_or_a_batch_and_read_them_back<S: TestStore>() {
    let app = app(S::fresh("post").await, None, RouteSet::All).await;
    let one = power("meter-1", "2026-11-21T10:00:00+09:00", 1234.5, 10.25, 350.0);
    assert_eq!(
        post(&app, &one.to_string(), &[]).await,
        (200, json!({"written": 1}))
    );
    let batch = json!([
        power("meter-1", "2026-11-21T01:05:00Z", 1234.6, 10.25, 360.0),
        climate("s-bed", "bedroom", "2026-11-21T01:00:00Z", 21.5, 45.0),
        power("meter-1", "2026-11-21T01:05:00Z", 1234.7, 10.25, 370.0),
    ]);
    assert_eq!(
        post(&app, &batch.to_string(), &[]).await,
        (200, json!({"written": 2, "duplicates": 1}))
    );

    let (status, body) = get(&app, "/devices/meter-1/readings", &DAY).await;
    assert_eq!(status, 200);
    // Two readings under 4 KB: half a read unit, on either engine
    // (docs/cost.md); with batches written as blocks, the raw window reads
    // the hour items too, another half (docs/batches.md).
    let as_batches = integration_tests::AS_BATCHES
        .try_with(|b| *b)
        .unwrap_or(false);
    let units = if as_batches { 1.0 } else { 0.5 };
    assert_eq!(
        body,
        json!({"readings": [
            {"device_id":"meter-1","timestamp":"2026-11-21T01:00:00.000Z","type":"power","cumulative_kwh_p":1234.5,"cumulative_kwh_n":10.25,"current_w":350.0},
            {"device_id":"meter-1","timestamp":"2026-11-21T01:05:00.000Z","type":"power","cumulative_kwh_p":1234.7,"cumulative_kwh_n":10.25,"current_w":370.0}
        ], "next_cursor": null, "read_units": units})
    );
    let (status, body) = get(&app, "/devices/meter-1/latest", &[]).await;
    assert_eq!(
        (status, body["reading"]["current_w"].clone()),
        (200, json!(370.0))
    );
}

async fn lists_and_lookups_come_from_the_registry<S: TestStore>() {
    let app = seeded::<S>("lists", None).await;
    let (status, body) = get(&app, "/devices", &[]).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = body["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["meter-1", "s-bed", "s-kit"], "sorted by id");
    assert_eq!(body["devices"][1]["room"], "bedroom");
    assert_eq!(body["devices"][1]["latest"]["temperature"], 24.0);
    assert_eq!(body["devices"][0]["types"], json!(["power"]));
    assert_eq!(body["devices"][0]["first_seen"], "2026-11-21T01:00:00.000Z");
    assert_eq!(body["devices"][0]["last_seen"], "2026-11-21T01:40:00.000Z");

    let (status, body) = get(&app, "/devices/s-kit", &[]).await;
    assert_eq!(
        (status, body["device"]["room"].clone()),
        (200, json!("kitchen"))
    );
    let (status, body) = get(&app, "/rooms", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["rooms"].as_array().unwrap().len(), 2);
    assert_eq!(body["rooms"][0]["room_id"], "bedroom");
    assert_eq!(body["rooms"][0]["devices"], json!(["s-bed"]));
    let (status, body) = get(&app, "/rooms/kitchen", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["room"]["latest"]["device_id"], "s-kit");
    assert_eq!(body["devices"][0]["device_id"], "s-kit");
}

async fn ranges_page_with_opaque_cursors_in_both_orders<S: TestStore>() {
    let app = seeded::<S>("paging", None).await;
    for order in ["asc", "desc"] {
        let mut cursor: Option<String> = None;
        let mut got = vec![];
        loop {
            let mut q = vec![DAY[0], DAY[1], ("limit", "2"), ("order", order)];
            if let Some(c) = &cursor {
                q.push(("cursor", c.as_str()));
            }
            let (status, body) = get(&app, "/devices/meter-1/readings", &q).await;
            assert_eq!(status, 200, "{body}");
            got.extend(
                body["readings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["timestamp"].as_str().unwrap().to_owned()),
            );
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        let mut expected: Vec<String> = (0..5)
            .map(|m| format!("2026-11-21T01:{:02}:00.000Z", m * 10))
            .collect();
        if order == "desc" {
            expected.reverse();
        }
        assert_eq!(got, expected, "{order}");
    }
    // Room ranges go through the index; the kitchen sensor never appears in the bedroom.
    let (status, body) = get(
        &app,
        "/rooms/bedroom/readings",
        &[DAY[0], DAY[1], ("order", "desc"), ("limit", "3")],
    )
    .await;
    assert_eq!(status, 200);
    let temps: Vec<f64> = body["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(temps, vec![24.0, 23.0, 22.0]);
    assert!(body["readings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["device_id"] == "s-bed" && r["type"] == "climate"));
    let cursor = body["next_cursor"].as_str().unwrap().to_owned();
    let (status, body) = get(
        &app,
        "/rooms/bedroom/readings",
        &[DAY[0], DAY[1], ("order", "desc"), ("cursor", &cursor)],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["readings"].as_array().unwrap().len(), 2);
    assert!(body["next_cursor"].is_null());
}

/// `format=columns` answers the same readings as the default objects, pages
/// with the same cursors, and says which column is which.
async fn pages_of_readings_come_as_columns_when_asked<S: TestStore>() {
    let app = seeded::<S>("columns", None).await;
    let (status, body) = get(
        &app,
        "/devices/meter-1/readings",
        &[DAY[0], DAY[1], ("limit", "2"), ("format", "columns")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let t0 = Timestamp::parse("2026-11-21T01:00:00Z").unwrap().millis();
    assert_eq!(
        body["columns"],
        json!([
            "timestamp",
            "type",
            "cumulative_kwh_p",
            "cumulative_kwh_n",
            "current_w"
        ])
    );
    assert_eq!(body["values"][0], json!([t0, "power", 100.0, 1.0, 300.0]));
    assert_eq!(body["values"].as_array().unwrap().len(), 2);
    // The cursor is the objects page's cursor: either format continues it.
    let (_, objects) = get(
        &app,
        "/devices/meter-1/readings",
        &[DAY[0], DAY[1], ("limit", "2")],
    )
    .await;
    assert_eq!(body["next_cursor"], objects["next_cursor"]);
    for (i, row) in body["values"].as_array().unwrap().iter().enumerate() {
        let r = &objects["readings"][i];
        let at = Timestamp::parse(r["timestamp"].as_str().unwrap()).unwrap();
        assert_eq!(row[0], json!(at.millis()));
        assert_eq!(row[4], r["current_w"]);
    }

    // A room's page names the device and the room of every reading; a
    // quantity a reading lacks is null.
    let (status, body) = get(
        &app,
        "/rooms/bedroom/readings",
        &[DAY[0], DAY[1], ("limit", "1"), ("format", "columns")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["columns"],
        json!([
            "timestamp",
            "device_id",
            "type",
            "room",
            "temperature",
            "humidity"
        ])
    );
    assert_eq!(
        body["values"][0],
        json!([t0, "s-bed", "climate", "bedroom", 20.0, 40.0])
    );
    let (status, body) = get(
        &app,
        "/readings",
        &[DAY[0], DAY[1], ("limit", "3"), ("format", "columns")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["columns"],
        json!([
            "timestamp",
            "device_id",
            "type",
            "room",
            "cumulative_kwh_p",
            "cumulative_kwh_n",
            "current_w",
            "temperature",
            "humidity"
        ])
    );
    assert_eq!(
        body["values"][0],
        json!([t0, "meter-1", "power", null, 100.0, 1.0, 300.0, null, null])
    );
    assert_eq!(body["values"][1][1], "s-bed");
    assert_eq!(body["values"][1][4], Value::Null);

    let (status, body) = get(&app, "/devices/meter-1/readings", &[("format", "csv")]).await;
    assert_eq!(status, 400);
    assert!(body.to_string().contains("format"), "{body}");

    // `labels=once`: what every reading of the page shares is given once,
    // and the rest are columns as before.
    let once = |path: &'static str, limit: &'static str| {
        let app = &app;
        async move {
            let labels = [
                DAY[0],
                DAY[1],
                ("limit", limit),
                ("format", "columns"),
                ("labels", "once"),
            ];
            let (status, body) = get(app, path, &labels).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let body = once("/devices/meter-1/readings", "2").await;
    assert_eq!(
        body["columns"],
        json!([
            "timestamp",
            "cumulative_kwh_p",
            "cumulative_kwh_n",
            "current_w"
        ])
    );
    assert_eq!(body["labels"], json!({"type": "power"}));
    assert_eq!(body["values"][0], json!([t0, 100.0, 1.0, 300.0]));
    assert_eq!(body["next_cursor"], objects["next_cursor"]);
    let body = once("/rooms/bedroom/readings", "1").await;
    assert_eq!(
        body["columns"],
        json!(["timestamp", "temperature", "humidity"])
    );
    assert_eq!(
        body["labels"],
        json!({"device_id": "s-bed", "type": "climate", "room": "bedroom"})
    );
    assert_eq!(body["values"][0], json!([t0, 20.0, 40.0]));
    // The feed's readings differ in device, type and room: columns all.
    let body = once("/readings", "3").await;
    assert_eq!(body["labels"], json!({}));
    let labels = json!([body["columns"][1], body["columns"][2], body["columns"][3]]);
    assert_eq!(labels, json!(["device_id", "type", "room"]));
    assert_eq!(
        body["values"][0],
        json!([t0, "meter-1", "power", null, 100.0, 1.0, 300.0, null, null])
    );
    let (status, body) = get(&app, "/devices/meter-1/readings", &[("labels", "once")]).await;
    assert_eq!(status, 400);
    assert!(body.to_string().contains("labels"), "{body}");

    // `format=arrays`: the columns page on its side, an array a column,
    // with the same columns, labels and cursor; its cursor continues in
    // columns.
    for (path, limit) in [
        ("/devices/meter-1/readings", "2"),
        ("/rooms/bedroom/readings", "1"),
        ("/readings", "3"),
    ] {
        for labels in ["each", "once"] {
            let page = |format: &'static str| {
                let app = &app;
                async move {
                    let query = [
                        DAY[0],
                        DAY[1],
                        ("limit", limit),
                        ("format", format),
                        ("labels", labels),
                    ];
                    let (status, body) = get(app, path, &query).await;
                    assert_eq!(status, 200, "{path} {format}: {body}");
                    body
                }
            };
            let (columns, arrays) = (page("columns").await, page("arrays").await);
            for key in ["columns", "labels", "next_cursor"] {
                assert_eq!(arrays.get(key), columns.get(key), "{path} {labels}: {key}");
            }
            assert!(arrays.get("values").is_none(), "{arrays}");
            let rows = columns["values"].as_array().unwrap();
            let width = columns["columns"].as_array().unwrap().len();
            let turned: Vec<Value> = (0..width)
                .map(|c| rows.iter().map(|row| row[c].clone()).collect())
                .collect();
            assert_eq!(arrays["arrays"], Value::Array(turned), "{path} {labels}");
            assert!(!rows.is_empty(), "{path}");
        }
    }
    let (status, first) = get(
        &app,
        "/devices/meter-1/readings",
        &[DAY[0], DAY[1], ("limit", "1"), ("format", "arrays")],
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("more than one reading");
    let (status, next) = get(
        &app,
        "/devices/meter-1/readings",
        &[
            DAY[0],
            DAY[1],
            ("limit", "1"),
            ("format", "columns"),
            ("cursor", cursor),
        ],
    )
    .await;
    assert_eq!(status, 200, "{next}");
    let second = objects["readings"][1]["timestamp"].as_str().unwrap();
    assert_eq!(
        next["values"][0][0],
        json!(Timestamp::parse(second).unwrap().millis())
    );
    let (status, body) = get(
        &app,
        "/devices/meter-1/stats",
        &[DAY[0], DAY[1], ("bucket", "1h"), ("format", "arrays")],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("format"), "{body}");
}

async fn bad_query_parameters_and_cursors_get_400_naming_the_parameter<S: TestStore>() {
    let app = seeded::<S>("badparams", None).await;
    let (_, first) = get(
        &app,
        "/devices/meter-1/readings",
        &[DAY[0], DAY[1], ("limit", "1")],
    )
    .await;
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let mut tampered = cursor.clone();
    tampered.replace_range(10..11, if &cursor[10..11] == "A" { "B" } else { "A" });
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "/devices/meter-1/readings",
            vec![("from", "yesterday")],
            "from",
        ),
        (
            "/devices/meter-1/readings",
            vec![
                ("from", "2026-11-22T00:00:00Z"),
                ("to", "2026-11-21T00:00:00Z"),
            ],
            "from",
        ),
        ("/devices/meter-1/readings", vec![("limit", "0")], "limit"),
        ("/devices/meter-1/readings", vec![("limit", "abc")], "limit"),
        (
            "/devices/meter-1/readings",
            vec![("order", "sideways")],
            "order",
        ),
        (
            "/devices/meter-1/readings",
            vec![("colour", "red")],
            "colour",
        ),
        (
            "/devices/meter-1/readings",
            vec![DAY[0], DAY[1], ("cursor", "not-a-cursor")],
            "cursor",
        ),
        (
            "/devices/meter-1/readings",
            vec![DAY[0], DAY[1], ("cursor", &tampered)],
            "cursor",
        ),
        // A cursor is bound to its device, range and order.
        (
            "/devices/s-bed/readings",
            vec![DAY[0], DAY[1], ("cursor", &cursor)],
            "cursor",
        ),
        (
            "/devices/meter-1/readings",
            vec![DAY[0], ("to", "2026-11-23T00:00:00Z"), ("cursor", &cursor)],
            "cursor",
        ),
        (
            "/devices/meter-1/readings",
            vec![DAY[0], DAY[1], ("order", "desc"), ("cursor", &cursor)],
            "cursor",
        ),
        (
            "/rooms/bedroom/readings",
            vec![DAY[0], DAY[1], ("cursor", &cursor)],
            "cursor",
        ),
        ("/devices", vec![("limit", "0")], "limit"),
        ("/devices", vec![("limit", "1001")], "limit"),
        ("/devices", vec![("type", "fridge")], "type"),
        ("/devices", vec![("prefix", "a b")], "prefix"),
        ("/devices", vec![("room", "no/room")], "room"),
        (
            "/devices",
            vec![("silent_since", "yesterday")],
            "silent_since",
        ),
        ("/devices", vec![("cursor", &cursor)], "cursor"),
        ("/rooms", vec![("limit", "x")], "limit"),
        ("/rooms", vec![("cursor", "bm90IGEgY3Vyc29y")], "cursor"),
        ("/rooms/bedroom", vec![("limit", "0")], "limit"),
        ("/rooms", vec![("form", "x")], "form"),
    ];
    for (path, q, param) in cases {
        let (status, body) = get(&app, path, &q).await;
        assert_eq!(status, 400, "{path} {q:?}: {body}");
        assert_eq!(body["error"]["code"], "invalid_parameter");
        assert_eq!(
            body["error"]["details"][0]["parameter"], param,
            "{path} {q:?}: {body}"
        );
        assert!(
            body["error"]["details"][0]["message"]
                .as_str()
                .unwrap()
                .len()
                > 5
        );
    }
}

async fn bad_paths_unknown_routes_and_missing_things_get_4xx<S: TestStore>() {
    let app = seeded::<S>("paths", None).await;
    for (method, path, status, code) in [
        ("GET", "/devices/DEVICE", 400, "invalid_path"),
        ("GET", "/devices/a%23b/readings", 400, "invalid_path"),
        ("GET", "/rooms/a:b", 400, "invalid_path"),
        ("GET", "/devices/nobody", 404, "not_found"),
        ("GET", "/devices/nobody/latest", 404, "not_found"),
        ("GET", "/rooms/attic", 404, "not_found"),
        ("GET", "/nothing/here", 404, "not_found"),
        ("DELETE", "/devices", 405, "method_not_allowed"),
        ("DELETE", "/readings", 405, "method_not_allowed"),
    ] {
        let resp = handle(&app, api_event(method, path, &[], None, &[])).await;
        let (got, body) = answer(&resp);
        assert_eq!(
            (got, body["error"]["code"].as_str().unwrap()),
            (status, code),
            "{method} {path}: {body}"
        );
        if status == 405 {
            assert!(resp.headers.get("allow").is_some());
        }
    }
    // Percent-encoded ids are decoded: `:` is allowed in a device id.
    let (status, _) = get(&app, "/devices/meter%3A9/readings", &[]).await;
    assert_eq!(status, 200);
}

async fn invalid_bodies_get_400_with_every_problem_and_nothing_is_written<S: TestStore>() {
    let app = app(S::fresh("invalid").await, None, RouteSet::All).await;
    let batch = json!([
        power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0),
        {"device_id": "DEVICE", "timestamp": "2026-11-21T01:00:00Z", "type": "climate", "room": "bedroom", "temperature": "warm", "humidity": 120},
        "not an object",
        power("meter-1", "1970-01-01T00:00:00Z", -5.0, 0.0, 1e8),
    ]);
    let (status, body) = post(&app, &batch.to_string(), &[]).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_readings");
    let where_: Vec<(u64, &str)> = body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["index"].as_u64().unwrap(), d["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        where_,
        vec![
            (1, "device_id"),
            (1, "temperature"),
            (1, "humidity"),
            (2, ""),
            (3, "timestamp"),
            (3, "cumulative_kwh_p"),
            (3, "current_w")
        ]
    );
    let (_, read) = get(&app, "/devices/meter-1/readings", &DAY).await;
    assert_eq!(
        read["readings"],
        json!([]),
        "all or nothing: the valid reading was not written"
    );

    for (body, code, detail) in [
        (
            "{\"device_id\": ",
            "invalid_json",
            json!([{"line": 1, "column": 14}]),
        ),
        ("[1, 2,]", "invalid_json", json!([{"line": 1, "column": 7}])),
        ("NaN", "invalid_json", json!([{"line": 1, "column": 1}])),
        (
            "{\"current_w\": 1e999}",
            "invalid_json",
            json!([{"line": 1, "column": 19}]),
        ),
        ("42", "invalid_readings", json!([])),
    ] {
        let (status, resp) = post(&app, body, &[]).await;
        assert_eq!(
            (status, resp["error"]["code"].as_str().unwrap()),
            (400, code),
            "{body}: {resp}"
        );
        assert_eq!(resp["error"]["details"], detail, "{body}: {resp}");
    }
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let (status, resp) = post(&app, &deep, &[]).await;
    assert_eq!(
        (status, resp["error"]["code"].as_str().unwrap()),
        (400, "invalid_json"),
        "nesting is bounded"
    );
}

async fn oversized_requests_get_413<S: TestStore>() {
    let app = app(S::fresh("large").await, None, RouteSet::All).await;
    let many: Vec<Value> = (0..1001)
        .map(|i| {
            power(
                "m",
                &format!("2026-11-21T00:{:02}:{:02}Z", i / 60 % 60, i % 60),
                1.0,
                0.0,
                0.0,
            )
        })
        .collect();
    let (status, body) = post(&app, &serde_json::to_string(&many).unwrap(), &[]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str().unwrap()),
        (413, "payload_too_large")
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("1001 readings"));
    let padded = format!(
        "{}{}",
        " ".repeat(1024 * 1024),
        power("m", "2026-11-21T00:00:00Z", 1.0, 0.0, 0.0)
    );
    let (status, _) = post(&app, &padded, &[]).await;
    assert_eq!(status, 413);
    // Exactly 1000 is fine.
    let (status, body) = post(&app, &serde_json::to_string(&many[..1000]).unwrap(), &[]).await;
    assert_eq!((status, body["written"].as_u64()), (200, Some(1000)));
}

async fn a_configured_token_is_required_to_post<S: TestStore>() {
    let mut app = app(S::fresh("auth").await, Some("s3cret"), RouteSet::All).await;
    app.access.reads = shared::api::ReadAccess::Open; // this test is about writes
    let body = power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    for headers in [
        vec![],
        vec![("authorization", "Bearer wrong")],
        vec![("authorization", "s3cret")],
    ] {
        let resp = handle(
            &app,
            api_event("POST", "/readings", &[], Some(&body), &headers),
        )
        .await;
        let (status, json) = answer(&resp);
        assert_eq!(
            (status, json["error"]["code"].as_str().unwrap()),
            (401, "unauthorized")
        );
        assert_eq!(resp.headers.get("www-authenticate").unwrap(), "Bearer");
        assert!(
            !json.to_string().contains("s3cret"),
            "the token never appears in an answer"
        );
    }
    let (status, _) = post(&app, &body, &[("authorization", "Bearer s3cret")]).await;
    assert_eq!(status, 200);
    let (_, read) = get(&app, "/devices/meter-1/readings", &DAY).await;
    assert_eq!(
        read["readings"].as_array().unwrap().len(),
        1,
        "only the authorised post was written"
    );
}

async fn a_climate_reading_may_omit_the_room_of_a_registered_device<S: TestStore>() {
    let app = seeded::<S>("roomless", None).await;
    let body = json!({"device_id": "s-bed", "timestamp": "2026-11-21T05:00:00Z", "type": "climate", "temperature": 19.5, "humidity": 50});
    assert_eq!(
        post(&app, &body.to_string(), &[]).await,
        (200, json!({"written": 1}))
    );
    let (_, latest) = get(&app, "/devices/s-bed/latest", &[]).await;
    assert_eq!(latest["reading"]["room"], "bedroom");
    let unknown = json!({"device_id": "s-new", "timestamp": "2026-11-21T05:00:00Z", "type": "climate", "temperature": 19.5, "humidity": 50});
    let (status, body) = post(&app, &unknown.to_string(), &[]).await;
    assert_eq!(
        (
            status,
            body["error"]["details"][0]["field"].as_str().unwrap()
        ),
        (400, "room")
    );
}

async fn each_function_serves_only_its_own_routes<S: TestStore>() {
    let store = S::fresh("routesets").await;
    let ingest = app(store.clone(), None, RouteSet::Ingest).await;
    let query = app(store, None, RouteSet::Query).await;
    assert_eq!(get(&ingest, "/devices", &[]).await.0, 404);
    let body = power("m", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    assert_eq!(post(&query, &body, &[]).await.0, 404);
    assert_eq!(post(&ingest, &body, &[]).await.0, 200);
    assert_eq!(get(&query, "/devices/m/latest", &[]).await.0, 200);
}

/// A Lambda's binary links its own routes only (issue 43): built for the
/// ingest function, the Router answers 404 to every read even on an App
/// that would serve all; built for the query function, to every write and
/// page; built for the dashboard function, to every write and JSON read.
async fn a_binary_links_only_its_own_routes<S: TestStore>() {
    use shared::api::{lambda::invoke, router_linking, DashboardRoutes, IngestRoutes, QueryRoutes};
    let all = app(S::fresh("linked").await, None, RouteSet::All).await;
    let body = power("m", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    let write = || api_event("POST", "/readings", &[], Some(&body), &[]);
    let read = || api_event("GET", "/devices/m/latest", &[], None, &[]);
    let ingest = || router_linking::<S, IngestRoutes>(all.clone());
    let query = || router_linking::<S, QueryRoutes>(all.clone());
    assert_eq!(invoke(ingest(), write()).await.status_code, 200);
    assert_eq!(invoke(ingest(), read()).await.status_code, 404);
    assert_eq!(invoke(query(), read()).await.status_code, 200);
    assert_eq!(invoke(query(), write()).await.status_code, 404);
    let pages = || router_linking::<S, DashboardRoutes>(all.clone());
    let dashboard = || api_event("GET", "/", &[], None, &[]);
    let influxql = || api_event("GET", "/query", &[("q", "SHOW DATABASES")], None, &[]);
    assert_eq!(invoke(ingest(), dashboard()).await.status_code, 404);
    assert_eq!(invoke(query(), dashboard()).await.status_code, 404);
    assert_eq!(invoke(query(), influxql()).await.status_code, 404);
    assert_eq!(invoke(pages(), dashboard()).await.status_code, 200);
    assert_eq!(invoke(pages(), influxql()).await.status_code, 200);
    assert_eq!(invoke(pages(), read()).await.status_code, 404);
    assert_eq!(invoke(pages(), write()).await.status_code, 404);
}

async fn the_cached_registry_reloads_only_after_its_ttl<S: TestStore>() {
    use shared::registry::RegistryCache;
    use std::time::Duration;
    let store = S::fresh("cache").await;
    let fresh = RegistryCache::load(&store, Duration::ZERO).await.unwrap();
    let stale = RegistryCache::load(&store, Duration::from_secs(3600))
        .await
        .unwrap();
    assert!(fresh.snapshot().devices.is_empty());
    register(
        &store,
        &[power("meter-9", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)],
    )
    .await;
    // Past its TTL the cache answers at once with what it has and refreshes in the
    // background; a later use sees the refreshed registry.
    assert!(
        fresh.current(&store).await.devices.is_empty(),
        "an aged cache answers from its snapshot, without waiting for a load"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while fresh.snapshot().devices.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background refresh never landed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(fresh.current(&store).await.devices.len(), 1);
    assert!(
        stale.current(&store).await.devices.is_empty(),
        "within its TTL the cache is not reloaded"
    );
    stale.invalidate();
    assert_eq!(
        stale.current(&store).await.devices.len(),
        1,
        "an invalidated cache reloads at once"
    );
}

async fn a_cache_with_only_latest_values_stale_serves_rooms_as_cached<S: TestStore>() {
    use shared::registry::RegistryCache;
    use std::time::Duration;
    let store = S::fresh("latest-stale").await;
    let cache = RegistryCache::load(&store, Duration::from_secs(3600))
        .await
        .unwrap();
    register(
        &store,
        &[power("meter-9", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)],
    )
    .await;
    cache.invalidate_latest();
    assert!(
        cache.current_for_rooms(&store).await.devices.is_empty(),
        "ingest's rooms come from the cache as it is"
    );
    assert_eq!(
        cache.current(&store).await.devices.len(),
        1,
        "an answer that shows latest values reloads first"
    );
    register(
        &store,
        &[power("meter-8", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)],
    )
    .await;
    cache.invalidate();
    assert_eq!(
        cache.current_for_rooms(&store).await.devices.len(),
        2,
        "a change of rooms or devices reloads before ingest too"
    );
}

async fn put<S: Store>(
    app: &App<S>,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    answer(&handle(app, api_event("PUT", path, &[], Some(body), headers)).await)
}

async fn names_are_set_by_users_shown_in_lists_and_never_overwritten<S: TestStore>() {
    let mut app = seeded::<S>("names", Some("tok")).await;
    app.access.reads = shared::api::ReadAccess::Open; // this test is about writes
    let auth = [("authorization", "Bearer tok")];
    let (status, body) = put(
        &app,
        "/devices/s-bed",
        r#"{"name": "  Bedroom sensor ", "room": "bedroom"}"#,
        &auth,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["device"]["name"].clone(),
            body["device"]["room"].clone()
        ),
        (json!("Bedroom sensor"), json!("bedroom"))
    );
    assert_eq!(
        body["device"]["types"],
        json!(["climate"]),
        "registry fields are kept"
    );
    let (status, body) = put(&app, "/rooms/bedroom", r#"{"name": "寝室"}"#, &auth).await;
    assert_eq!((status, body["room"]["name"].clone()), (200, json!("寝室")));
    // A device that has not reported yet can be named ahead of time.
    let (status, body) = put(
        &app,
        "/devices/meter-new",
        r#"{"name": "New meter"}"#,
        &auth,
    )
    .await;
    assert_eq!(
        (
            status,
            body["device"]["name"].clone(),
            body["device"]["last_seen"].clone()
        ),
        (200, json!("New meter"), Value::Null)
    );

    // Names show in the lists at once.
    let (_, devices) = get(&app, "/devices", &[]).await;
    let named: Vec<(&str, &str)> = devices["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| Some((d["device_id"].as_str()?, d["name"].as_str()?)))
        .collect();
    assert_eq!(
        named,
        vec![("meter-new", "New meter"), ("s-bed", "Bedroom sensor")]
    );
    assert_eq!(get(&app, "/rooms", &[]).await.1["rooms"][0]["name"], "寝室");

    // Registry maintenance after naming keeps the names.
    register(
        &app.store,
        &[climate(
            "s-bed",
            "bedroom",
            "2026-11-21T09:00:00Z",
            19.0,
            50.0,
        )],
    )
    .await;
    app.registry.invalidate(); // as if the cache's TTL had passed
    let (_, device) = get(&app, "/devices/s-bed", &[]).await;
    assert_eq!(device["device"]["name"], "Bedroom sensor");
    assert_eq!(device["device"]["last_seen"], "2026-11-21T09:00:00.000Z");
    let room = app
        .store
        .room(&"bedroom".parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(room.name.as_deref(), Some("寝室"));

    // null removes a name.
    let (_, body) = put(&app, "/devices/s-bed", r#"{"name": null}"#, &auth).await;
    assert_eq!(body["device"]["name"], Value::Null);
}

async fn bad_names_and_missing_tokens_are_refused<S: TestStore>() {
    let mut app = seeded::<S>("badnames", Some("tok")).await;
    app.access.reads = shared::api::ReadAccess::Open; // this test is about writes
    let auth = [("authorization", "Bearer tok")];
    let resp = handle(
        &app,
        api_event("PUT", "/devices/s-bed", &[], Some(r#"{"name": "x"}"#), &[]),
    )
    .await;
    assert_eq!(answer(&resp).0, 401);
    assert_eq!(resp.headers.get("www-authenticate").unwrap(), "Bearer");
    for (path, body, status, field) in [
        ("/devices/s-bed", r#"{"name": ""}"#, 400, "name"),
        ("/devices/s-bed", r#"{"nmae": "x"}"#, 400, "name"),
        ("/devices/s-bed", r#"{"name": 5}"#, 400, "name"),
        (
            "/devices/s-bed",
            r#"{"name": "x", "room": "a#b"}"#,
            400,
            "room",
        ),
        (
            "/rooms/bedroom",
            r#"{"name": "x", "room": "kitchen"}"#,
            400,
            "room",
        ),
        ("/devices/s-bed", "[]", 400, ""),
    ] {
        let (got, answer) = put(&app, path, body, &auth).await;
        assert_eq!(got, status, "{path} {body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_body", "{answer}");
        assert!(
            answer["error"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["field"] == field),
            "{answer}"
        );
    }
    let (status, answer) = put(&app, "/devices/s-bed", "{", &auth).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str().unwrap()),
        (400, "invalid_json")
    );
    let (status, _) = put(&app, "/devices/DEVICE", r#"{"name": "x"}"#, &auth).await;
    assert_eq!(status, 400);
    let (status, _) = put(
        &app,
        "/devices/s-bed",
        &format!(r#"{{"name": "{}"}}"#, "x".repeat(5000)),
        &auth,
    )
    .await;
    assert_eq!(status, 413);
    let resp = handle(
        &app,
        api_event("DELETE", "/devices/s-bed", &[], None, &auth),
    )
    .await;
    assert_eq!(resp.headers.get("allow").unwrap(), "GET,HEAD,PUT");
    // Nothing was written by the refused requests.
    assert_eq!(
        get(&app, "/devices/s-bed", &[]).await.1["device"]["name"],
        Value::Null
    );
}

async fn reads_need_the_token_when_one_is_set_unless_configured_open<S: TestStore>() {
    let mut app = seeded::<S>("readaccess", Some("tok")).await;
    let resp = handle(&app, api_event("GET", "/devices", &[], None, &[])).await;
    assert_eq!(answer(&resp).0, 401);
    assert_eq!(resp.headers.get("www-authenticate").unwrap(), "Bearer");
    let (status, body) = answer(
        &handle(
            &app,
            api_event(
                "GET",
                "/devices",
                &[],
                None,
                &[("authorization", "Bearer tok")],
            ),
        )
        .await,
    );
    assert_eq!(
        (status, body["devices"].as_array().unwrap().len()),
        (200, 3)
    );
    app.access.reads = shared::api::ReadAccess::Open;
    assert_eq!(get(&app, "/devices", &[]).await.0, 200);
    let body = power("m", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0).to_string();
    assert_eq!(post(&app, &body, &[]).await.0, 401, "writes still need it");
}

async fn epoch_times_and_readings_without_a_time_are_stored_and_an_empty_batch_is_refused<
    S: TestStore,
>() {
    let app = app(S::fresh("times").await, None, RouteSet::All).await;
    let mut seconds = power("meter-1", "", 1.0, 0.0, 10.0);
    seconds["timestamp"] = json!(1_795_222_923); // 2026-11-21T01:02:03Z
    let mut millis = power("meter-1", "", 2.0, 0.0, 20.0);
    millis["timestamp"] = json!(1_795_222_983_250i64);
    let (status, body) = post(&app, &json!([seconds, millis]).to_string(), &[]).await;
    assert_eq!((status, body), (200, json!({"written": 2})));
    let (_, read) = get(&app, "/devices/meter-1/readings", &DAY).await;
    assert_eq!(
        timestamps(&read),
        ["2026-11-21T01:02:03.000Z", "2026-11-21T01:03:03.250Z"]
    );

    // No time: the time the server received it, so it is the device's latest.
    let before = Timestamp::now();
    let mut untimed = power("meter-1", "", 3.0, 0.0, 30.0);
    untimed.as_object_mut().unwrap().remove("timestamp");
    assert_eq!(
        post(&app, &untimed.to_string(), &[]).await,
        (200, json!({"written": 1}))
    );
    let (_, latest) = get(&app, "/devices/meter-1/latest", &[]).await;
    let stamped = Timestamp::parse(latest["reading"]["timestamp"].as_str().unwrap()).unwrap();
    assert!(before <= stamped && stamped <= Timestamp::now(), "{latest}");
    assert_eq!(latest["reading"]["cumulative_kwh_p"], 3.0);

    let (status, body) = post(&app, "[]", &[]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str().unwrap()),
        (400, "invalid_readings")
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("empty"));
    let mut ambiguous = power("meter-2", "", 1.0, 0.0, 1.0);
    ambiguous["timestamp"] = json!(50_000_000_000i64);
    let (status, body) = post(&app, &ambiguous.to_string(), &[]).await;
    assert_eq!(
        (
            status,
            body["error"]["details"][0]["field"].as_str().unwrap()
        ),
        (400, "timestamp")
    );
}

/// The devices of issue 12, as they post: a temperature-only sensor, a plug
/// that reports watts, a CO2 sensor, a light sensor and a gas meter.
async fn readings_of_any_quantities_are_stored_listed_aggregated_and_registered<S: TestStore>() {
    let app = app(S::fresh("quantities").await, None, RouteSet::All).await;
    let batch = json!([
        {"device_id":"ds18b20-1","timestamp":"2026-11-21T01:00:00Z","type":"climate","room":"garage","temperature":8.5},
        {"device_id":"plug-1","timestamp":"2026-11-21T01:00:00Z","type":"power","current_w":35.5},
        {"device_id":"plug-1","timestamp":"2026-11-21T01:30:00Z","current_w":40.5},
        {"device_id":"co2-1","timestamp":"2026-11-21T01:00:00Z","room":"office","co2_ppm":612,"temperature":21.0},
        {"device_id":"lux-1","timestamp":"2026-11-21T01:00:00Z","room":"office","illuminance_lx":320},
        {"device_id":"gas-1","timestamp":"2026-11-21T01:00:00Z","gas_m3":1234.5}
    ]);
    assert_eq!(
        post(&app, &batch.to_string(), &[]).await,
        (200, json!({"written": 6}))
    );
    register(&app.store, batch.as_array().unwrap()).await;
    app.registry.invalidate();

    let (_, garage) = get(&app, "/devices/ds18b20-1/readings", &DAY).await;
    assert_eq!(
        garage["readings"],
        json!([{"device_id":"ds18b20-1","timestamp":"2026-11-21T01:00:00.000Z","type":"climate","room":"garage","temperature":8.5}])
    );
    let (_, gas) = get(&app, "/devices/gas-1/latest", &[]).await;
    assert_eq!(
        gas["reading"],
        json!({"device_id":"gas-1","timestamp":"2026-11-21T01:00:00.000Z","type":"meter","gas_m3":1234.5})
    );
    // The registry keeps which quantities each device reports.
    let (_, co2) = get(&app, "/devices/co2-1", &[]).await;
    assert_eq!(
        co2["device"]["quantities"],
        json!(["temperature", "co2_ppm"])
    );
    assert_eq!(co2["device"]["types"], json!(["climate"]));
    assert_eq!(co2["device"]["room"], "office");
    let (_, devices) = get(&app, "/devices", &[]).await;
    assert_eq!(devices["devices"].as_array().unwrap().len(), 5);

    // A room's readings are its temperature and humidity (the room-time index's
    // projection): the CO2 sensor's temperature, not its CO2; not the light sensor.
    let (_, office) = get(&app, "/rooms/office/readings", &DAY).await;
    assert_eq!(
        office["readings"],
        json!([{"device_id":"co2-1","timestamp":"2026-11-21T01:00:00.000Z","type":"climate","room":"office","temperature":21.0}])
    );
    let (_, room) = get(&app, "/rooms/office", &[]).await;
    assert_eq!(room["room"]["devices"], json!(["co2-1", "lux-1"]));

    // Aggregates cover whatever quantities there are.
    let stats_q = [DAY[0], DAY[1], ("bucket", "1d")];
    let (_, plug) = get(&app, "/devices/plug-1/stats", &stats_q).await;
    assert_eq!(
        plug["buckets"][0]["fields"],
        json!({"current_w": {"min": 35.5, "max": 40.5, "mean": 38.0, "count": 2}})
    );
    let (_, co2) = get(&app, "/devices/co2-1/stats", &stats_q).await;
    let fields: Vec<&String> = co2["buckets"][0]["fields"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(fields, ["co2_ppm", "temperature"]);
    // No counters, no energy; no humidity, not in a box search.
    let (status, energy) = get(&app, "/devices/plug-1/energy", &stats_q).await;
    assert_eq!((status, energy["buckets"].clone()), (200, json!([])));
    // (A table that takes batches as blocks has no box-search index: the
    // route says so.)
    let (status, found) = get(&app, "/rooms/office/search", &DAY).await;
    match integration_tests::AS_BATCHES
        .try_with(|b| *b)
        .unwrap_or(false)
    {
        false => assert_eq!((status, found["readings"].clone()), (200, json!([]))),
        true => assert_eq!(
            (status, found["error"]["code"].clone()),
            (404, json!("index_disabled"))
        ),
    }
}

on_every_store_and_batches!(
    readings_of_any_quantities_are_stored_listed_aggregated_and_registered,
    epoch_times_and_readings_without_a_time_are_stored_and_an_empty_batch_is_refused,
    post_one_reading_or_a_batch_and_read_them_back,
    lists_and_lookups_come_from_the_registry,
    ranges_page_with_opaque_cursors_in_both_orders,
    bad_query_parameters_and_cursors_get_400_naming_the_parameter,
    bad_paths_unknown_routes_and_missing_things_get_4xx,
    invalid_bodies_get_400_with_every_problem_and_nothing_is_written,
    oversized_requests_get_413,
    a_configured_token_is_required_to_post,
    a_climate_reading_may_omit_the_room_of_a_registered_device,
    each_function_serves_only_its_own_routes,
    a_binary_links_only_its_own_routes,
    the_cached_registry_reloads_only_after_its_ttl,
    a_cache_with_only_latest_values_stale_serves_rooms_as_cached,
    names_are_set_by_users_shown_in_lists_and_never_overwritten,
    bad_names_and_missing_tokens_are_refused,
    reads_need_the_token_when_one_is_set_unless_configured_open;
    items_only: pages_of_readings_come_as_columns_when_asked,
);
