//! Issue 76 on every engine: the device and room lists are pages with
//! tamper-proof cursors and a fleet operator's filters; a sandbox over a
//! fleet does not hold the registry, and ingest then asks the store about
//! its batch's devices only; a household's lists are one page, as before.

use integration_tests::{
    answer, api_event, app, climate, handle, on_every_store, power, TestStore,
};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::model::{Reading, Timestamp};
use shared::registry::{RegistryCache, SEED_BOUND};
use shared::store::Store;
use std::collections::BTreeSet;
use std::time::Duration;

async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    answer(&handle(app, api_event("GET", path, query, None, &[])).await)
}

async fn post<S: Store>(app: &App<S>, body: &Value) -> (u16, Value) {
    answer(
        &handle(
            app,
            api_event("POST", "/readings", &[], Some(&body.to_string()), &[]),
        )
        .await,
    )
}

/// Registry items as the stream handler leaves them after these readings.
async fn register<S: Store>(store: &S, readings: &[Value]) {
    let parsed: Vec<Reading> = readings
        .iter()
        .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
        .collect();
    for chunk in parsed.chunks(500) {
        let plan = shared::domain::registry::plan(chunk.iter().enumerate());
        assert!(shared::registry::apply(store, &plan).await.is_empty());
    }
}

/// A small fleet: 12 climate sensors in 4 rooms (`s-00` .. `s-11`, in
/// `room-0` .. `room-3`), 5 meters (`m-0` .. `m-4`), one of them quiet
/// since October, and one named sensor.
fn fleet() -> Vec<Value> {
    let mut v = Vec::new();
    for i in 0..12 {
        v.push(climate(
            &format!("s-{i:02}"),
            &format!("room-{}", i % 4),
            "2026-11-21T01:00:00Z",
            20.0,
            40.0,
        ));
    }
    for i in 0..5 {
        let at = if i == 4 {
            "2026-10-01T00:00:00Z"
        } else {
            "2026-11-21T01:00:00Z"
        };
        v.push(power(&format!("m-{i}"), at, 100.0, 0.0, 300.0));
    }
    v
}

fn ids(list: &Value, key: &str, id: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|d| d[id].as_str().unwrap().to_owned())
        .collect()
}

/// Every page of a list, following `next_cursor`: the ids in order.
async fn walk<S: Store>(
    app: &App<S>,
    path: &str,
    query: &[(&str, &str)],
    key: &str,
    id: &str,
) -> Vec<String> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut q: Vec<(&str, &str)> = query.to_vec();
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let (status, page) = get(app, path, &q).await;
        assert_eq!(status, 200, "{path} {q:?}: {page}");
        all.extend(ids(&page, key, id));
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return all,
        }
    }
    panic!("{path} never ended")
}

async fn lists_are_pages_that_join_up_to_the_whole_list<S: TestStore>() {
    let store = S::fresh("fleet-pages").await;
    register(&store, &fleet()).await;
    let app = app(store, None, RouteSet::All).await;
    // A household's list is one page, with no cursor: the answer it always was.
    let (status, whole) = get(&app, "/devices", &[]).await;
    assert_eq!(status, 200);
    assert!(whole.get("next_cursor").is_none(), "{whole}");
    let every = ids(&whole, "devices", "device_id");
    assert_eq!(every.len(), 17);
    let mut sorted = every.clone();
    sorted.sort();
    assert_eq!(every, sorted, "sorted by id");
    for limit in ["1", "5", "16", "17"] {
        assert_eq!(
            walk(
                &app,
                "/devices",
                &[("limit", limit)],
                "devices",
                "device_id"
            )
            .await,
            every,
            "pages of {limit} join up to the whole list, each device once"
        );
    }
    let (_, first) = get(&app, "/devices", &[("limit", "5")]).await;
    assert_eq!(ids(&first, "devices", "device_id").len(), 5);
    assert!(first["next_cursor"].is_string());
    let rooms = walk(&app, "/rooms", &[("limit", "3")], "rooms", "room_id").await;
    assert_eq!(rooms, ["room-0", "room-1", "room-2", "room-3"]);
    // A room's devices a page at a time.
    let (status, room) = get(&app, "/rooms/room-1", &[("limit", "2")]).await;
    assert_eq!(status, 200, "{room}");
    assert_eq!(room["room"]["room_id"], "room-1");
    assert_eq!(ids(&room, "devices", "device_id"), ["s-01", "s-05"]);
    let (_, rest) = get(
        &app,
        "/rooms/room-1",
        &[
            ("limit", "2"),
            ("cursor", room["next_cursor"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(ids(&rest, "devices", "device_id"), ["s-09"]);
    assert!(rest.get("next_cursor").is_none());
    let (_, whole_room) = get(&app, "/rooms/room-1", &[]).await;
    assert!(whole_room.get("next_cursor").is_none());
    assert_eq!(whole_room["devices"].as_array().unwrap().len(), 3);
}

/// A query string's pairs.
type Query<'a> = Vec<(&'a str, &'a str)>;

async fn a_fleet_operator_filters_by_room_type_prefix_silence_and_text<S: TestStore>() {
    let store = S::fresh("fleet-filters").await;
    register(&store, &fleet()).await;
    let app = app(store, None, RouteSet::All).await;
    let (status, _) = handle_put_name(&app, "s-07", "Boiler room north").await;
    assert_eq!(status, 200);
    let cases: Vec<(Query, Vec<&str>)> = vec![
        (vec![("room", "room-2")], vec!["s-02", "s-06", "s-10"]),
        (vec![("room", "no-such-room")], vec![]),
        (
            vec![("type", "power")],
            vec!["m-0", "m-1", "m-2", "m-3", "m-4"],
        ),
        (vec![("prefix", "s-1")], vec!["s-10", "s-11"]),
        (vec![("silent_since", "2026-11-01T00:00:00Z")], vec!["m-4"]),
        (vec![("search", "BOILER")], vec!["s-07"]),
        (
            vec![("search", "m-")],
            vec!["m-0", "m-1", "m-2", "m-3", "m-4"],
        ),
        (
            vec![("type", "climate"), ("room", "room-3"), ("prefix", "s-0")],
            vec!["s-03", "s-07"],
        ),
        (
            vec![("type", "power"), ("silent_since", "2026-11-01T00:00:00Z")],
            vec!["m-4"],
        ),
    ];
    for (q, want) in cases {
        for limit in ["1", "2", "1000"] {
            let mut paged = q.clone();
            paged.push(("limit", limit));
            assert_eq!(
                walk(&app, "/devices", &paged, "devices", "device_id").await,
                want,
                "/devices {paged:?}"
            );
        }
    }
    assert_eq!(
        walk(
            &app,
            "/rooms",
            &[("prefix", "room-"), ("limit", "1")],
            "rooms",
            "room_id"
        )
        .await,
        ["room-0", "room-1", "room-2", "room-3"]
    );
    assert_eq!(
        walk(&app, "/rooms", &[("search", "M-2")], "rooms", "room_id").await,
        ["room-2"]
    );
    // A cursor belongs to its list and filter: another filter's, or an
    // edited one, is a 400 naming it, and nothing is listed.
    let (_, page) = get(&app, "/devices", &[("type", "power"), ("limit", "2")]).await;
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    for q in [
        vec![("type", "climate"), ("cursor", cursor.as_str())],
        vec![("cursor", cursor.as_str())],
    ] {
        let (status, body) = get(&app, "/devices", &q).await;
        assert_eq!(status, 400, "{q:?}: {body}");
        assert_eq!(body["error"]["details"][0]["parameter"], "cursor");
    }
    let (status, body) = get(&app, "/rooms", &[("cursor", cursor.as_str())]).await;
    assert_eq!(
        (status, body["error"]["details"][0]["parameter"].clone()),
        (400, json!("cursor"))
    );
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let text = String::from_utf8(engine.decode(&cursor).unwrap()).unwrap();
    let tampered = engine.encode(text.replace("m-1", "m-3"));
    let (status, body) = get(
        &app,
        "/devices",
        &[("type", "power"), ("cursor", &tampered)],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"][0]["parameter"], "cursor");
}

async fn handle_put_name<S: Store>(app: &App<S>, device: &str, name: &str) -> (u16, Value) {
    answer(
        &handle(
            app,
            api_event(
                "PUT",
                &format!("/devices/{device}"),
                &[],
                Some(&json!({ "name": name }).to_string()),
                &[],
            ),
        )
        .await,
    )
}

/// Past `SEED_BOUND` devices a sandbox holds no registry: lists still
/// answer from the store, a device is looked up, and a climate reading that
/// names no room takes its registered device's room, read for that batch.
async fn a_sandbox_over_a_fleet_holds_no_registry_and_asks_about_its_batch<S: TestStore>() {
    let store = S::fresh("fleet-seed").await;
    let sensors: Vec<Value> = (0..=SEED_BOUND)
        .map(|i| {
            climate(
                &format!("f-{i:04}"),
                &format!("r-{:03}", i / 10),
                "2026-11-21T01:00:00Z",
                20.0,
                40.0,
            )
        })
        .collect();
    register(&store, &sensors).await;
    let cache = RegistryCache::load(&store, Duration::from_secs(3600))
        .await
        .unwrap();
    assert!(!cache.holds_whole(), "past the bound, nothing is held");
    assert!(cache.snapshot().devices.is_empty());
    let app = app(store, None, RouteSet::All).await;
    assert!(!app.registry.holds_whole());
    let listed = walk(
        &app,
        "/devices",
        &[("limit", "1000")],
        "devices",
        "device_id",
    )
    .await;
    assert_eq!(listed.len(), SEED_BOUND + 1);
    let (status, device) = get(&app, "/devices/f-0123", &[]).await;
    assert_eq!(
        (status, device["device"]["room"].clone()),
        (200, json!("r-012"))
    );
    // No room given: the device's own, asked of the store.
    let body = json!({"device_id": "f-0042", "timestamp": "2026-11-21T02:00:00Z", "type": "climate", "temperature": 21.5});
    assert_eq!(post(&app, &body).await, (200, json!({"written": 1})));
    let (_, page) = get(
        &app,
        "/rooms/r-004/readings",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-22T00:00:00Z"),
        ],
    )
    .await;
    let temps: BTreeSet<String> = page["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{}@{}", r["device_id"].as_str().unwrap(), r["temperature"]))
        .collect();
    assert!(temps.contains("f-0042@21.5"), "{page}");
    // A device the store does not know still needs a room.
    let unknown = json!({"device_id": "new-1", "timestamp": "2026-11-21T02:00:00Z", "type": "climate", "temperature": 21.5});
    let (status, body) = post(&app, &unknown).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"][0]["field"], "room");
    assert!(
        app.registry.snapshot().devices.is_empty(),
        "ingest asked about its batch, not the fleet"
    );
    // The overview pages: a screenful of devices, a link to the next, a search.
    let (status, html) = get_html(&app, "/", &[]).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("More devices"),
        "the overview pages over a fleet"
    );
    assert!(html.contains(r#"type="search""#));
    assert!(html.matches("class=\"device\"").count() <= 50);
    let (status, found) = get_html(&app, "/", &[("search", "f-0199")]).await;
    assert_eq!(status, 200);
    assert!(
        found.contains("data-device=\"f-0199\""),
        "the search finds it"
    );
    assert!(!found.contains("data-device=\"f-0198\""));
}

async fn get_html<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, String) {
    let resp = handle(app, api_event("GET", path, query, None, &[])).await;
    let body = match resp.body {
        Some(aws_lambda_events::encodings::Body::Text(t)) => t,
        Some(aws_lambda_events::encodings::Body::Binary(b)) => String::from_utf8(b).unwrap(),
        _ => String::new(),
    };
    (resp.status_code as u16, body)
}

on_every_store!(
    lists_are_pages_that_join_up_to_the_whole_list,
    a_fleet_operator_filters_by_room_type_prefix_silence_and_text,
    a_sandbox_over_a_fleet_holds_no_registry_and_asks_about_its_batch,
);
