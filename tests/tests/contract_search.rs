//! Z-order box search (`GET /rooms/{id}/search`, `GET /devices/{id}/search`) on
//! every engine (`on_every_store!`: dynalite and the embedded store), and once on
//! moto: every page together is exactly a brute-force filter of the same data,
//! the cursor never repeats or skips, and bad parameters or cursors get a 400.

use integration_tests::handle;
use integration_tests::{answer, api_event, app, moto, on_every_store, table_name, TestStore};
use proptest::prelude::*;
use serde_json::Value;
use shared::api::{App, RouteSet};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::{DynamoStore, SqliteStore, Store};
use std::collections::BTreeSet;

const BASE_MS: i64 = 1_790_000_000_000; // 2026-09-21

fn climate(device: &str, room: &str, minute: i64, t: f64, h: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: Timestamp::from_millis(BASE_MS + minute * 60_000 + minute % 7).unwrap(),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, h).unwrap(),
    }
}

/// Two sensors in `lab` and one in `hall` over 300 minutes, with daily-like
/// swings (including below-zero temperatures and the values 0.0 and -0.0), and
/// a meter that has no place in any search.
fn data() -> Vec<Reading> {
    let mut out = Vec::new();
    for m in 0..300i64 {
        let x = m as f64;
        let t = 10.0 * (x / 40.0).sin() + 5.0 * (x / 7.0).cos();
        let h = 50.0 + 30.0 * (x / 25.0).cos();
        let t = if m == 17 {
            -0.0
        } else if m == 18 {
            0.0
        } else {
            (t * 100.0).round() / 100.0
        };
        out.push(climate("sensor-a", "lab", m, t, h));
        out.push(climate("sensor-b", "lab", m, t + 3.0, (h - 20.0).max(0.0)));
        out.push(climate("sensor-c", "hall", m, t - 1.0, h));
        out.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: Timestamp::from_millis(BASE_MS + m * 60_000).unwrap(),
            measurement: Measurement::power(100.0 + x, 0.0, 200.0).unwrap(),
        });
    }
    out
}

#[derive(Debug, Clone, Copy)]
struct Box3 {
    from_min: i64,
    to_min: i64,
    t: (f64, f64),
    h: (f64, f64),
}

impl Box3 {
    fn contains(&self, r: &Reading) -> bool {
        let (Some(t), Some(h)) = (r.get(Quantity::Temperature), r.get(Quantity::Humidity)) else {
            return false;
        };
        let (from, to) = (
            BASE_MS + self.from_min * 60_000,
            BASE_MS + self.to_min * 60_000,
        );
        (from..to).contains(&r.timestamp.millis())
            && (self.t.0..=self.t.1).contains(&t)
            && (self.h.0..=self.h.1).contains(&h)
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        let ts = |m: i64| {
            Timestamp::from_millis(BASE_MS + m * 60_000)
                .unwrap()
                .to_string()
        };
        vec![
            ("from", ts(self.from_min)),
            ("to", ts(self.to_min)),
            ("tmin", self.t.0.to_string()),
            ("tmax", self.t.1.to_string()),
            ("hmin", self.h.0.to_string()),
            ("hmax", self.h.1.to_string()),
        ]
    }
}

async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    answer(&handle(app, api_event("GET", path, query, None, &[])).await)
}

/// Every page of a search, following cursors; (device, ms) of each reading, in
/// the order returned, and the items read and returned in total.
async fn search_all<S: Store>(
    app: &App<S>,
    path: &str,
    b: &Box3,
    limit: usize,
) -> (Vec<(String, i64)>, usize, usize) {
    let mut params = b.params();
    params.push(("limit", limit.to_string()));
    let (mut got, mut read, mut returned, mut cursor) = (Vec::new(), 0, 0, None::<String>);
    for _ in 0..10_000 {
        let mut q: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let (status, body) = get(app, path, &q).await;
        assert_eq!(status, 200, "{path} {q:?}: {body}");
        let page = body["readings"].as_array().unwrap();
        assert!(page.len() <= limit);
        for r in page {
            let ts = Timestamp::parse(r["timestamp"].as_str().unwrap()).unwrap();
            got.push((r["device_id"].as_str().unwrap().to_owned(), ts.millis()));
        }
        read += body["items_read"].as_u64().unwrap() as usize;
        returned += body["items_returned"].as_u64().unwrap() as usize;
        assert_eq!(
            body["items_returned"].as_u64().unwrap() as usize,
            page.len()
        );
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (got, read, returned),
        }
    }
    panic!("search never ended");
}

fn expected(
    data: &[Reading],
    b: &Box3,
    keep: impl Fn(&Reading) -> bool,
) -> BTreeSet<(String, i64)> {
    data.iter()
        .filter(|r| keep(r) && b.contains(r))
        .map(|r| (r.device_id.to_string(), r.timestamp.millis()))
        .collect()
}

fn room_of(r: &Reading) -> Option<&str> {
    r.room().map(|room| room.as_str())
}

/// Checks one box through both routes and several page sizes; returns items read / returned.
async fn check_box<S: Store>(app: &App<S>, data: &[Reading], b: &Box3) -> (usize, usize) {
    let mut totals = (0, 0);
    for limit in [3, 1000] {
        let want = expected(data, b, |r| room_of(r) == Some("lab"));
        let (got, read, returned) = search_all(app, "/rooms/lab/search", b, limit).await;
        let set: BTreeSet<_> = got.iter().cloned().collect();
        assert_eq!(set.len(), got.len(), "no reading twice: {b:?}");
        assert_eq!(
            set, want,
            "room search equals the brute-force filter: {b:?} limit {limit}"
        );
        assert!(read >= returned);
        totals = (totals.0 + read, totals.1 + returned);

        let want = expected(data, b, |r| r.device_id.as_str() == "sensor-c");
        let (got, _, _) = search_all(app, "/devices/sensor-c/search", b, limit).await;
        let set: BTreeSet<_> = got.iter().cloned().collect();
        assert_eq!(set.len(), got.len());
        assert_eq!(
            set, want,
            "device search equals the brute-force filter: {b:?} limit {limit}"
        );
    }
    totals
}

const BOXES: [Box3; 5] = [
    Box3 {
        from_min: 0,
        to_min: 300,
        t: (8.0, 20.0),
        h: (60.0, 100.0),
    },
    Box3 {
        from_min: 50,
        to_min: 120,
        t: (-100.0, 150.0),
        h: (0.0, 100.0),
    },
    Box3 {
        from_min: 0,
        to_min: 300,
        t: (-0.0, 0.0),
        h: (0.0, 100.0),
    },
    Box3 {
        from_min: 100,
        to_min: 250,
        t: (-20.0, -2.5),
        h: (30.0, 55.5),
    },
    Box3 {
        from_min: 0,
        to_min: 300,
        t: (40.0, 50.0),
        h: (0.0, 100.0),
    },
];

async fn search_returns_exactly_the_box_in_pages<S: TestStore>() {
    let store = S::fresh("search").await;
    let data = data();
    assert!(store.write_readings(&data).await.unwritten.is_empty());
    let mut app = app(store, None, RouteSet::Query).await;
    app.access.reads = shared::api::ReadAccess::Open;
    for b in &BOXES {
        check_box(&app, &data, b).await;
    }
    let (read, returned) = check_box(&app, &data, &BOXES[0]).await;
    assert!(returned > 0);
    if S::SEALS_CLOSED_DAYS {
        // The day is sealed: a page decodes the blocks whose header meets the
        // box, whole (two devices in the lab, 300 readings each), and no more.
        let pages = returned.div_ceil(3) + 1 + 1;
        assert!(
            read <= pages * 600,
            "{read} items read for {returned} returned"
        );
        // A box that no block's minimum and maximum meet decodes nothing.
        assert_eq!(check_box(&app, &data, &BOXES[4]).await, (0, 0));
    } else {
        // A selective box reads little beyond what it returns.
        assert!(
            read < 4 * returned,
            "{read} items read for {returned} returned"
        );
    }
}

async fn bad_search_parameters_and_cursors_get_400<S: TestStore>() {
    let store = S::fresh("search-bad").await;
    assert!(store.write_readings(&data()).await.unwritten.is_empty());
    let mut app = app(store, None, RouteSet::Query).await;
    app.access.reads = shared::api::ReadAccess::Open;
    let b = BOXES[0];
    let params = b.params();
    let base: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (name, value) in [
        ("tmin", "warm"),
        ("tmax", "NaN"),
        ("hmin", "-1"),
        ("hmax", "101"),
        ("tmin", "inf"),
        ("limit", "0"),
        ("cursor", "not-a-cursor"),
        ("order", "desc"),
    ] {
        let mut q: Vec<(&str, &str)> = base.iter().filter(|(k, _)| *k != name).cloned().collect();
        q.push((name, value));
        let (status, body) = get(&app, "/rooms/lab/search", &q).await;
        assert_eq!(status, 400, "{name}={value}: {body}");
        assert!(body.to_string().contains(name), "{name}: {body}");
    }
    let mut q = base.clone();
    q.retain(|(k, _)| *k != "tmax");
    q.push(("tmax", "1"));
    let (status, body) = get(&app, "/rooms/lab/search", &q).await;
    assert_eq!(
        (status, body["error"]["details"][0]["parameter"].as_str()),
        (400, Some("tmin")),
        "{body}"
    );

    // A cursor from one search is refused by another box or room, and when altered.
    let mut q = base.clone();
    q.push(("limit", "2"));
    let (_, body) = get(&app, "/rooms/lab/search", &q).await;
    let cursor = body["next_cursor"].as_str().unwrap().to_owned();
    let mut other = q.clone();
    other.retain(|(k, _)| *k != "hmin");
    other.push(("hmin", "61"));
    other.push(("cursor", &cursor));
    let (status, body) = get(&app, "/rooms/lab/search", &other).await;
    assert_eq!(status, 400, "{body}");
    let mut same = q.clone();
    same.push(("cursor", &cursor));
    let (status, _) = get(&app, "/rooms/hall/search", &same).await;
    assert_eq!(status, 400);
    let mut chars: Vec<char> = cursor.chars().collect();
    let i = chars.len() - 3;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    let mut q2 = q.clone();
    q2.push(("cursor", &tampered));
    let (status, body) = get(&app, "/rooms/lab/search", &q2).await;
    assert_eq!(status, 400, "{body}");
}

on_every_store!(
    search_returns_exactly_the_box_in_pages,
    bad_search_parameters_and_cursors_get_400
);

/// The same on moto, the second DynamoDB-API server.
#[tokio::test]
async fn search_on_moto() {
    let store = DynamoStore::new(
        integration_tests::client(&moto()),
        table_name("search-moto"),
    );
    store.create_table().await.unwrap();
    let data: Vec<Reading> = data()
        .into_iter()
        .filter(|r| r.timestamp.millis() < BASE_MS + 100 * 60_000)
        .collect();
    assert!(store.write_readings(&data).await.unwritten.is_empty());
    let mut app = app(store, None, RouteSet::Query).await;
    app.access.reads = shared::api::ReadAccess::Open;
    for b in &BOXES[..2] {
        let b = Box3 {
            to_min: b.to_min.min(100),
            ..*b
        };
        check_box(&app, &data, &b).await;
    }
}

fn arb_box() -> impl Strategy<Value = Box3> {
    (
        0i64..120,
        1i64..120,
        -15.0f64..20.0,
        0.0f64..25.0,
        0.0f64..100.0,
        0.0f64..60.0,
    )
        .prop_map(|(from, span, t, tw, h, hw)| Box3 {
            from_min: from,
            to_min: from + span,
            t: (t, t + tw),
            h: (h, (h + hw).min(100.0)),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any box, any page size: the embedded store's search equals the brute-force filter.
    #[test]
    fn search_equals_a_brute_force_filter(b in arb_box(), limit in 1usize..40) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = SqliteStore::in_memory().unwrap();
            let data: Vec<Reading> = data().into_iter().filter(|r| r.timestamp.millis() < BASE_MS + 240 * 60_000).collect();
            assert!(store.write_readings(&data).await.unwritten.is_empty());
            let mut app = app(store, None, RouteSet::Query).await;
            app.access.reads = shared::api::ReadAccess::Open;
            let want = expected(&data, &b, |r| room_of(r) == Some("lab"));
            let (got, _, _) = search_all(&app, "/rooms/lab/search", &b, limit).await;
            let set: BTreeSet<_> = got.iter().cloned().collect();
            assert_eq!(set.len(), got.len());
            assert_eq!(set, want);
        });
    }
}
