//! `GET /readings`: every device's readings, merged from the `all-time` shards,
//! on every engine (`on_every_store!`) and on moto. The order is correct across
//! shards, and paging never repeats or skips a reading. The shard spread of
//! 1000 realistic device ids is within the bound `docs/all-devices.md` states.

use integration_tests::handle;
use integration_tests::{answer, api_event, app, moto, on_every_store, table_name, TestStore};
use serde_json::Value;
use shared::api::{App, RouteSet};
use shared::keys::{shard_of, DEFAULT_SHARDS};
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::{DynamoStore, Store};
use std::collections::{BTreeMap, BTreeSet};

const BASE_MS: i64 = 1_790_000_000_000;

/// 24 devices (so every one of 11 shards has some), each reporting every 30 s
/// with its own phase, several at the very same millisecond.
fn data(minutes: i64) -> Vec<Reading> {
    let mut out = Vec::new();
    for d in 0..24i64 {
        let device = DeviceId::parse(&format!("dev-{d:02}")).unwrap();
        for k in 0..minutes * 2 {
            let ms = BASE_MS + k * 30_000 + if d % 3 == 0 { 0 } else { d * 997 };
            let measurement = if d % 2 == 0 {
                Measurement::power(k as f64, 0.0, 100.0).unwrap()
            } else {
                Measurement::climate(RoomId::parse("hall").unwrap(), 20.0, 50.0).unwrap()
            };
            out.push(Reading {
                device_id: device.clone(),
                timestamp: Timestamp::from_millis(ms).unwrap(),
                measurement,
            });
        }
    }
    out
}

async fn get<S: Store>(app: &App<S>, query: &[(&str, &str)]) -> (u16, Value) {
    answer(&handle(app, api_event("GET", "/readings", query, None, &[])).await)
}

/// Every page from `from` to `to`: (ms, device) of each reading, as returned.
async fn all_pages<S: Store>(
    app: &App<S>,
    from: i64,
    to: i64,
    limit: usize,
    order: &str,
) -> Vec<(i64, String)> {
    let (from, to) = (
        Timestamp::from_millis(from).unwrap().to_string(),
        Timestamp::from_millis(to).unwrap().to_string(),
    );
    let limit = limit.to_string();
    let (mut got, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut q = vec![
            ("from", from.as_str()),
            ("to", to.as_str()),
            ("limit", limit.as_str()),
            ("order", order),
        ];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let (status, body) = get(app, &q).await;
        assert_eq!(status, 200, "{body}");
        for r in body["readings"].as_array().unwrap() {
            let ts = Timestamp::parse(r["timestamp"].as_str().unwrap()).unwrap();
            got.push((ts.millis(), r["device_id"].as_str().unwrap().to_owned()));
        }
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return got,
        }
    }
}

async fn check<S: Store>(app: &App<S>, data: &[Reading], from: i64, to: i64) {
    let mut want: Vec<(i64, String)> = data
        .iter()
        .filter(|r| (from..to).contains(&r.timestamp.millis()))
        .map(|r| (r.timestamp.millis(), r.device_id.to_string()))
        .collect();
    want.sort();
    assert!(want.len() > 50, "a meaningful range");
    for limit in [7, 1000] {
        let got = all_pages(app, from, to, limit, "asc").await;
        assert_eq!(
            got, want,
            "ascending, limit {limit}: time order across shards, nothing repeated or skipped"
        );
    }
    let got = all_pages(app, from, to, 11, "desc").await;
    let mut reversed = want.clone();
    reversed.reverse();
    assert_eq!(got, reversed, "descending");
}

async fn every_device_in_time_order_across_shards<S: TestStore>() {
    let store = S::fresh("all").await;
    let data = data(10);
    assert!(store.write_readings(&data).await.unwritten.is_empty());
    // The 24 devices really are spread: at least 8 of the 11 shards hold one.
    let used: BTreeSet<u32> = (0..24)
        .map(|d| {
            shard_of(
                &DeviceId::parse(&format!("dev-{d:02}")).unwrap(),
                DEFAULT_SHARDS,
            )
        })
        .collect();
    assert!(used.len() >= 8, "{used:?}");
    let mut app = app(store, None, RouteSet::Query).await;
    app.access.reads = shared::api::ReadAccess::Open;
    check(&app, &data, BASE_MS + 60_000, BASE_MS + 7 * 60_000 + 1).await;

    // A cursor is bound to its range; an altered one is refused.
    let (from, to) = (
        Timestamp::from_millis(BASE_MS).unwrap().to_string(),
        Timestamp::from_millis(BASE_MS + 600_000)
            .unwrap()
            .to_string(),
    );
    let (_, body) = get(&app, &[("from", &from), ("to", &to), ("limit", "5")]).await;
    let cursor = body["next_cursor"].as_str().unwrap().to_owned();
    let (status, _) = get(
        &app,
        &[("from", &from), ("limit", "5"), ("cursor", &cursor)],
    )
    .await;
    assert_eq!(status, 400, "another range");
    let (status, _) = get(
        &app,
        &[
            ("from", &from),
            ("to", &to),
            ("limit", "5"),
            ("order", "desc"),
            ("cursor", &cursor),
        ],
    )
    .await;
    assert_eq!(status, 400, "another order");
    let (status, body) = get(&app, &[("from", &from), ("to", &to), ("cursor", "AAAA")]).await;
    assert_eq!(
        (status, body["error"]["details"][0]["parameter"].as_str()),
        (400, Some("cursor"))
    );
}

on_every_store!(every_device_in_time_order_across_shards);

#[tokio::test]
async fn every_device_in_time_order_on_moto() {
    let store = DynamoStore::new(integration_tests::client(&moto()), table_name("all-moto"));
    store.create_table().await.unwrap();
    let data = data(4);
    assert!(store.write_readings(&data).await.unwritten.is_empty());
    let mut app = app(store, None, RouteSet::Query).await;
    app.access.reads = shared::api::ReadAccess::Open;
    check(&app, &data, BASE_MS, BASE_MS + 4 * 60_000).await;
}

/// 1000 device ids of the shapes people use. The bound (docs/all-devices.md):
/// with 11 shards no shard gets more than 1.5x or less than 0.5x its even share.
#[test]
fn a_thousand_realistic_ids_spread_within_the_documented_bound() {
    let rooms = [
        "kitchen", "bedroom", "living", "bath", "office", "garage", "hall", "attic", "cellar",
        "nursery",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut hex = |n: usize| -> String {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from_digit((state % 16) as u32, 16).unwrap()
            })
            .collect()
    };
    let mut ids: Vec<String> = Vec::new();
    ids.extend((0..250).map(|i| format!("meter-{i:04}")));
    ids.extend((0..250).map(|i| format!("sensor-{}-{}", rooms[i % 10], i / 10)));
    ids.extend((0..250).map(|_| format!("shelly-{}", hex(12))));
    ids.extend((0..250).map(|_| format!("esp32_{}", hex(6))));
    let mut per_shard: BTreeMap<u32, usize> = BTreeMap::new();
    for id in &ids {
        *per_shard
            .entry(shard_of(&DeviceId::parse(id).unwrap(), DEFAULT_SHARDS))
            .or_default() += 1;
    }
    let even = ids.len() as f64 / DEFAULT_SHARDS as f64;
    let (min, max) = (
        *per_shard.values().min().unwrap(),
        *per_shard.values().max().unwrap(),
    );
    println!("ids per shard: {per_shard:?} (even share {even:.1})");
    assert_eq!(
        per_shard.len(),
        DEFAULT_SHARDS as usize,
        "every shard is used"
    );
    assert!(
        max as f64 <= 1.5 * even && min as f64 >= 0.5 * even,
        "{per_shard:?}"
    );
}
