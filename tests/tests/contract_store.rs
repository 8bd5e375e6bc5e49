//! The storage contract, run on every engine (`on_every_store_and_batches!`): the DynamoDB
//! adapter on dynalite, which validates requests as DynamoDB does (it rejects a
//! 26-item BatchWriteItem and unused expression values), and the embedded
//! SQLite store. Both must give the same answers.

use integration_tests::{on_every_store_and_batches, RawItems, TestStore};
use serde_dynamo::{AttributeValue, Item};
use shared::keys::Position;
use shared::model::{DeviceId, Measurement, Reading, RoomId, TimeRange, Timestamp};
use shared::store::DynamoStore;
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use shared::store::{DeviceUpdate, Order, RangeRequest, RoomUpdate};
use std::collections::{BTreeSet, HashMap};

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn dev(s: &str) -> DeviceId {
    DeviceId::parse(s).unwrap()
}

fn power_at(device: &str, minute: i64, kwh: f64) -> Reading {
    Reading {
        device_id: dev(device),
        timestamp: Timestamp::from_millis(ts("2026-11-01T00:00:00Z").millis() + minute * 60_000)
            .unwrap(),
        measurement: Measurement::power(kwh, 0.5, 300.0).unwrap(),
    }
}

fn climate_at(device: &str, room: &str, minute: i64, t: f64) -> Reading {
    Reading {
        device_id: dev(device),
        timestamp: Timestamp::from_millis(ts("2026-11-01T00:00:00Z").millis() + minute * 60_000)
            .unwrap(),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, 45.0).unwrap(),
    }
}

fn day() -> TimeRange {
    TimeRange::new(ts("2026-11-01T00:00:00Z"), ts("2026-11-02T00:00:00Z")).unwrap()
}

fn req(order: Order, limit: usize, after: Option<Position>) -> RangeRequest {
    RangeRequest {
        range: day(),
        order,
        limit,
        after,
    }
}

/// DynamoDB only: the embedded store keeps rows, not items (its own tests).
#[tokio::test]
async fn writes_store_the_exact_items_of_the_design() {
    use AttributeValue::{N, S as Str};
    let store = DynamoStore::fresh("items").await;
    let report = store
        .write_readings(&[
            power_at("meter-1", 0, 1234.5),
            climate_at("s1", "bedroom", 0, 21.25),
        ])
        .await;
    assert!(report.unwritten.is_empty());
    let p = store
        .raw_item("meter-1", "TS#2026-11-01T00:00:00.000Z")
        .await
        .unwrap();
    assert_eq!(
        p,
        Item::from(HashMap::from([
            ("pk".into(), Str("meter-1".into())),
            ("sk".into(), Str("TS#2026-11-01T00:00:00.000Z".into())),
            ("type".into(), Str("power".into())),
            ("cumulative_kwh_p".into(), N("1234.5".into())),
            ("cumulative_kwh_n".into(), N("0.5".into())),
            ("current_w".into(), N("300".into())),
            // The all-devices index keys (docs/all-devices.md): shard of "meter-1" among 11.
            (
                "shard".into(),
                Str(format!(
                    "ALL#{}",
                    shared::keys::shard_of(&dev("meter-1"), shared::keys::DEFAULT_SHARDS)
                ))
            ),
            (
                "ats".into(),
                Str("TS#2026-11-01T00:00:00.000Z#meter-1".into())
            ),
        ]))
    );
    let c = store
        .raw_item("s1", "TS#2026-11-01T00:00:00.000Z")
        .await
        .unwrap();
    assert_eq!(c.get("room"), Some(&Str("bedroom".into())));
    assert_eq!(c.get("temperature"), Some(&N("21.25".into())));
    assert_eq!(c.get("type"), Some(&Str("climate".into())));
}

/// Items exactly as the version before the quantity catalogue wrote them (a
/// power and a climate reading, their DEVICE items without `quantities`) read
/// back as the same readings, and the registry knows their quantities.
/// DynamoDB only: for the embedded store, the items of its version 1 files
/// are migrated through the same codec (tests/tests/upgrade_embedded.rs).
#[tokio::test]
async fn items_written_before_the_catalogue_read_back_identically() {
    let store = DynamoStore::fresh("oldshape").await;
    let item = |v: serde_json::Value| -> Item { serde_json::from_value(v).unwrap() };
    store
        .put_raw(item(serde_json::json!({
            "pk": {"S": "meter-1"}, "sk": {"S": "TS#2026-11-01T00:00:00.000Z"}, "type": {"S": "power"},
            "cumulative_kwh_p": {"N": "1234.5"}, "cumulative_kwh_n": {"N": "0.5"}, "current_w": {"N": "300"},
            "shard": {"S": "ALL#1"}, "ats": {"S": "TS#2026-11-01T00:00:00.000Z#meter-1"}
        })))
        .await;
    store
        .put_raw(item(serde_json::json!({
            "pk": {"S": "s1"}, "sk": {"S": "TS#2026-11-01T00:00:00.000Z"}, "type": {"S": "climate"},
            "room": {"S": "bedroom"}, "temperature": {"N": "21.25"}, "humidity": {"N": "45"},
            "z": {"S": "Z#0"}, "shard": {"S": "ALL#2"}, "ats": {"S": "TS#2026-11-01T00:00:00.000Z#s1"}
        })))
        .await;
    let latest = |kind: &str, values: serde_json::Value| {
        let mut m = serde_json::json!({"device_id": {"S": "s1"}, "timestamp": {"S": "2026-11-01T00:00:00.000Z"}, "type": {"S": kind}});
        for (k, v) in values.as_object().unwrap() {
            m[k] = v.clone();
        }
        m
    };
    store
        .put_raw(item(serde_json::json!({
            "pk": {"S": "DEVICE"}, "sk": {"S": "s1"}, "types": {"SS": ["climate"]}, "room": {"S": "bedroom"},
            "first_seen": {"S": "2026-11-01T00:00:00.000Z"}, "last_seen": {"S": "2026-11-01T00:00:00.000Z"},
            "latest": {"M": latest("climate", serde_json::json!({"room": {"S": "bedroom"}, "temperature": {"N": "21.25"}, "humidity": {"N": "45"}}))}
        })))
        .await;
    let day = TimeRange::new(
        Timestamp::parse("2026-11-01T00:00:00Z").unwrap(),
        Timestamp::parse("2026-11-02T00:00:00Z").unwrap(),
    )
    .unwrap();
    let request = RangeRequest {
        range: day,
        order: Order::Asc,
        limit: 10,
        after: None,
    };
    let meter = store
        .device_readings(&dev("meter-1"), &request)
        .await
        .unwrap();
    assert_eq!(meter.readings, vec![power_at("meter-1", 0, 1234.5)]);
    let s1 = store.device_readings(&dev("s1"), &request).await.unwrap();
    let expected = Reading {
        device_id: dev("s1"),
        timestamp: day.from(),
        measurement: Measurement::climate(RoomId::parse("bedroom").unwrap(), 21.25, 45.0).unwrap(),
    };
    assert_eq!(s1.readings, vec![expected.clone()]);
    let room = store
        .room_readings(&RoomId::parse("bedroom").unwrap(), &request)
        .await
        .unwrap();
    assert_eq!(room.readings, vec![expected.clone()]);
    let registry = store.load_registry().await.unwrap();
    let d = &registry.devices[&dev("s1")];
    assert_eq!(d.latest.as_ref(), Some(&expected));
    let names: Vec<&str> = d.quantities.iter().map(|q| q.name()).collect();
    assert_eq!(
        names,
        ["temperature", "humidity"],
        "from the latest snapshot"
    );
}

async fn batches_over_25_are_chunked_and_duplicates_keep_the_last<S: TestStore>() {
    let store = S::fresh("chunks").await;
    // 130 readings, 10 of which repeat an earlier key with a new value.
    let mut readings: Vec<Reading> = (0..120).map(|m| power_at("meter-1", m, m as f64)).collect();
    readings.extend((0..10).map(|m| power_at("meter-1", m, 1000.0 + m as f64)));
    let report = store.write_readings(&readings).await;
    assert_eq!(report.unwritten, Vec::<usize>::new());
    assert_eq!((report.items_written, report.duplicates), (120, 10));
    let page = store
        .device_readings(&dev("meter-1"), &req(Order::Asc, 1000, None))
        .await
        .unwrap();
    assert_eq!(page.readings.len(), 120);
    assert_eq!(page.readings[3], readings[123], "the later duplicate won");
    assert_eq!(page.readings[50], readings[50]);
    assert!(page.next.is_none());
}

async fn ranges_read_both_orders_and_page_with_positions<S: TestStore>() {
    let store = S::fresh("ranges").await;
    let readings: Vec<Reading> = (0..30)
        .map(|m| power_at("meter-1", m * 60, m as f64))
        .collect(); // hourly, 30 h
    store.write_readings(&readings).await;
    store.write_readings(&[power_at("meter-2", 5, 1.0)]).await; // another partition stays out

    let asc = store
        .device_readings(&dev("meter-1"), &req(Order::Asc, 1000, None))
        .await
        .unwrap();
    assert_eq!(
        asc.readings,
        readings[..24].to_vec(),
        "only the 24 hours of the range, oldest first"
    );
    let desc = store
        .device_readings(&dev("meter-1"), &req(Order::Desc, 1000, None))
        .await
        .unwrap();
    let mut expected = readings[..24].to_vec();
    expected.reverse();
    assert_eq!(desc.readings, expected);

    // Pages of 10 in descending order: 10 + 10 + 4, positions chain without gaps or repeats.
    let mut seen = Vec::new();
    let mut after = None;
    for expected_len in [10, 10, 4] {
        let page = store
            .device_readings(&dev("meter-1"), &req(Order::Desc, 10, after))
            .await
            .unwrap();
        assert_eq!(page.readings.len(), expected_len);
        seen.extend(page.readings);
        after = page.next;
    }
    assert!(after.is_none());
    assert_eq!(seen, expected);
}

async fn latest_is_the_newest_reading_of_that_device_only<S: TestStore>() {
    let store = S::fresh("latest").await;
    assert_eq!(store.latest_reading(&dev("meter-1")).await.unwrap(), None);
    let rs: Vec<Reading> = (0..5).map(|m| power_at("meter-1", m, m as f64)).collect();
    store.write_readings(&rs).await;
    store.write_readings(&[power_at("meter-10", 99, 1.0)]).await; // newer, other device
    assert_eq!(
        store.latest_reading(&dev("meter-1")).await.unwrap(),
        Some(rs[4].clone())
    );
}

async fn room_ranges_use_the_index_and_never_return_registry_items<S: TestStore>() {
    let store = S::fresh("rooms").await;
    let mut rs = Vec::new();
    for m in 0..6 {
        rs.push(climate_at("s1", "bedroom", m, 20.0 + m as f64));
        rs.push(climate_at("s2", "bedroom", m, 18.0));
        rs.push(climate_at("s3", "kitchen", m, 25.0));
    }
    store.write_readings(&rs).await;
    // A DEVICE item carries `room` too, so it is in the index under sk=<device id>.
    store
        .apply_device_update(&DeviceUpdate {
            device_id: dev("s1"),
            first_seen: rs[0].timestamp,
            latest: rs[15].clone(),
            types: BTreeSet::from([shared::model::ReadingKind::Climate]),
            quantities: quantities(&rs[15]),
            room: Some(RoomId::parse("bedroom").unwrap()),
        })
        .await
        .unwrap();
    let bedroom = RoomId::parse("bedroom").unwrap();
    let all = store
        .room_readings(&bedroom, &req(Order::Asc, 1000, None))
        .await
        .unwrap();
    assert_eq!(
        all.readings.len(),
        12,
        "6 minutes x 2 devices, no DEVICE item"
    );
    assert!(all.readings.iter().all(|r| r.room() == Some(&bedroom)));
    let mut expected: Vec<Reading> = rs
        .iter()
        .filter(|r| r.room() == Some(&bedroom))
        .cloned()
        .collect();
    expected.sort_by_key(|r| r.timestamp);
    let got_ts: Vec<Timestamp> = all.readings.iter().map(|r| r.timestamp).collect();
    assert_eq!(
        got_ts,
        expected.iter().map(|r| r.timestamp).collect::<Vec<_>>()
    );
    for r in &all.readings {
        assert!(
            expected.contains(r),
            "{r:?} read back through the index equals what was written"
        );
    }

    // Paging through the index in pages of 5, descending.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .room_readings(&bedroom, &req(Order::Desc, 5, after))
            .await
            .unwrap();
        seen.extend(page.readings);
        after = page.next;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), 12);
    assert!(seen.windows(2).all(|w| w[0].timestamp >= w[1].timestamp));
    let distinct: BTreeSet<(Timestamp, String)> = seen
        .iter()
        .map(|r| (r.timestamp, r.device_id.to_string()))
        .collect();
    assert_eq!(distinct.len(), 12, "no reading repeated across pages");
}

async fn registry_updates_are_monotonic_and_never_touch_names<S: TestStore>() {
    let store = S::fresh("registry").await;
    let newer = climate_at("s1", "bedroom", 60, 22.0);
    let older = climate_at("s1", "kitchen", 30, 19.0);
    let oldest = power_at("s1", 0, 1.0);
    let update = |first: &Reading, latest: &Reading| DeviceUpdate {
        device_id: dev("s1"),
        first_seen: first.timestamp,
        latest: latest.clone(),
        types: BTreeSet::from([latest.kind()]),
        quantities: quantities(latest),
        room: latest.room().cloned(),
    };
    store
        .apply_device_update(&update(&newer, &newer))
        .await
        .unwrap();
    // A user names the device (the registry must never overwrite it).
    store
        .set_device_profile(
            &dev("s1"),
            Some(&shared::model::Name::parse("Bedroom sensor").unwrap()),
            None,
        )
        .await
        .unwrap();
    // Late, older changes: first_seen moves earlier, latest/room/last_seen stay.
    store
        .apply_device_update(&update(&older, &older))
        .await
        .unwrap();
    store
        .apply_device_update(&update(&oldest, &oldest))
        .await
        .unwrap();
    // Duplicate delivery of the newest.
    store
        .apply_device_update(&update(&newer, &newer))
        .await
        .unwrap();

    let d = store.device(&dev("s1")).await.unwrap().unwrap();
    assert_eq!(d.name.as_deref(), Some("Bedroom sensor"));
    assert_eq!(d.latest, Some(newer.clone()));
    assert_eq!(d.last_seen, Some(newer.timestamp));
    assert_eq!(d.first_seen, Some(oldest.timestamp));
    assert_eq!(d.room.as_ref().map(|r| r.as_str()), Some("bedroom"));
    assert_eq!(d.types.len(), 2, "power and climate");

    let room = |latest: &Reading, devices: &[&str]| RoomUpdate {
        room_id: RoomId::parse("bedroom").unwrap(),
        first_seen: latest.timestamp,
        latest: latest.clone(),
        devices: devices.iter().map(|d| dev(d)).collect(),
        presence: BTreeSet::new(),
        record: true,
    };
    store
        .apply_room_update(&room(&newer, &["s1"]))
        .await
        .unwrap();
    let s2_older = climate_at("s2", "bedroom", 10, 17.0);
    store
        .apply_room_update(&room(&s2_older, &["s2"]))
        .await
        .unwrap();
    let r = store
        .room(&RoomId::parse("bedroom").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.latest, Some(newer));
    assert_eq!(r.first_seen, Some(s2_older.timestamp));
    assert_eq!(r.devices, BTreeSet::from([dev("s1"), dev("s2")]));
}

async fn the_registry_load_reads_every_page<S: TestStore>() {
    let store = S::fresh("pages").await; // 3 items per registry page on DynamoDB
    for i in 0..10 {
        let r = climate_at(&format!("s{i}"), &format!("room{}", i % 4), i, 20.0);
        store
            .apply_device_update(&DeviceUpdate {
                device_id: r.device_id.clone(),
                first_seen: r.timestamp,
                latest: r.clone(),
                types: BTreeSet::from([r.kind()]),
                quantities: quantities(&r),
                room: r.room().cloned(),
            })
            .await
            .unwrap();
        store
            .apply_room_update(&RoomUpdate {
                room_id: r.room().unwrap().clone(),
                first_seen: r.timestamp,
                latest: r.clone(),
                devices: BTreeSet::from([r.device_id.clone()]),
                presence: BTreeSet::new(),
                record: true,
            })
            .await
            .unwrap();
    }
    let snapshot = store.load_registry().await.unwrap();
    assert_eq!(snapshot.devices.len(), 10, "4 pages of 3");
    assert_eq!(snapshot.rooms.len(), 4, "2 pages of 3");
    assert_eq!(
        snapshot.rooms[&RoomId::parse("room1").unwrap()]
            .devices
            .len(),
        3
    );
}

on_every_store_and_batches!(
    batches_over_25_are_chunked_and_duplicates_keep_the_last,
    ranges_read_both_orders_and_page_with_positions,
    latest_is_the_newest_reading_of_that_device_only,
    registry_updates_are_monotonic_and_never_touch_names,
    the_registry_load_reads_every_page;
    items_only: room_ranges_use_the_index_and_never_return_registry_items,
);

/// The quantities a reading carries, as a registry update records them.
fn quantities(r: &Reading) -> BTreeSet<shared::model::Quantity> {
    r.measurement.values().iter().map(|(q, _)| *q).collect()
}
