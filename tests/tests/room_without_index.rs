//! Room answers with and without the `room-time` index (issue 25): the same
//! readings on two dynalite tables, `RoomIndex` on and off, answer every
//! room page, in both orders and across cursors, identically; including a
//! device that moved rooms and moved back, two devices at the same
//! millisecond, a roomless meter and a room reading with neither
//! temperature nor humidity. Then a table in the shape from before presence
//! (DEVICE items with `room`, ROOM items without `presence_since`, no
//! presence items) still answers the same, and after `reindex` as well.

use integration_tests::{client, dynalite, stream_event_for, table_name, RawItems};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, TimeRange, Timestamp};
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use shared::store::{DynamoStore, Indexes, Order, RangeRequest};

const T0: i64 = 1_795_219_200_000; // 2026-11-21T00:00:00Z
const HOUR: i64 = 3_600_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + ms).unwrap()
}

fn climate(device: &str, room: &str, ms: i64, t: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: at(ms),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, 40.0).unwrap(),
    }
}

/// Three days: `mover` is in the bedroom on day 0, the kitchen on day 1 and
/// back in the bedroom on day 2; `stay` in the bedroom throughout, at the
/// same milliseconds as `mover`; a CO2 sensor in the bedroom (not a room
/// route's reading); a meter with no room.
fn readings() -> Vec<Reading> {
    let mut out = Vec::new();
    for h in 0..72 {
        let ms = h * HOUR;
        let room = match h / 24 {
            1 => "kitchen",
            _ => "bedroom",
        };
        out.push(climate("mover", room, ms, 20.0 + h as f64 / 10.0));
        out.push(climate("stay", "bedroom", ms, 18.0));
        out.push(climate("stay", "bedroom", ms + 1_000, 18.5));
        out.push(Reading {
            device_id: DeviceId::parse("co2").unwrap(),
            timestamp: at(ms + 500),
            measurement: Measurement::new(
                Some(RoomId::parse("bedroom").unwrap()),
                vec![(Quantity::Co2, 600.0)],
            )
            .unwrap(),
        });
        out.push(Reading {
            device_id: DeviceId::parse("meter").unwrap(),
            timestamp: at(ms + 700),
            measurement: Measurement::power(1.0 + h as f64, 0.0, 100.0).unwrap(),
        });
    }
    out
}

async fn table(room_time: bool, hint: &str) -> DynamoStore {
    let store = DynamoStore::new(client(&dynalite()), table_name(hint)).with_indexes(Indexes {
        room_time,
        box_search: false,
        all_devices: false,
    });
    store.create_table().await.unwrap();
    store
}

async fn filled(room_time: bool, hint: &str) -> DynamoStore {
    let store = table(room_time, hint).await;
    let data = readings();
    integration_tests::write_all(&store, &data).await;
    // The registry function, one stream batch per 20 readings.
    for batch in data.chunks(20) {
        let r = shared::stream::handle(&store, stream_event_for(batch)).await;
        assert!(r.batch_item_failures.is_empty());
    }
    store
}

/// A room's whole answer, page by page (`limit` a page), with each page's size.
async fn pages(
    store: &DynamoStore,
    room: &str,
    range: TimeRange,
    order: Order,
    limit: usize,
) -> Vec<Vec<(String, Timestamp)>> {
    let room = RoomId::parse(room).unwrap();
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .room_readings(
                &room,
                &RangeRequest {
                    range,
                    order,
                    limit,
                    after,
                },
            )
            .await
            .unwrap();
        out.push(
            page.readings
                .iter()
                .map(|r| (r.device_id.to_string(), r.timestamp))
                .collect(),
        );
        match page.next {
            Some(p) => after = Some(p),
            None => return out,
        }
        assert!(out.len() < 1000, "paging does not end");
    }
}

/// What a room's answer must be: its readings naming it, with a
/// temperature or a humidity, in (time, device) order.
fn expected(room: &str, range: TimeRange) -> Vec<(String, Timestamp)> {
    let mut want: Vec<(String, Timestamp)> = readings()
        .into_iter()
        .filter(|r| r.room().map(|x| x.as_str()) == Some(room))
        .filter(|r| r.get(Quantity::Temperature).is_some() || r.get(Quantity::Humidity).is_some())
        .filter(|r| range.contains(r.timestamp))
        .map(|r| (r.device_id.to_string(), r.timestamp))
        .collect();
    want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    want
}

fn flat(pages: &[Vec<(String, Timestamp)>]) -> Vec<(String, Timestamp)> {
    pages.iter().flatten().cloned().collect()
}

/// Readings of one millisecond put in device order (reversed, descending).
fn ties_sorted(mut readings: Vec<(String, Timestamp)>, order: Order) -> Vec<(String, Timestamp)> {
    readings.sort_by(|a, b| match order {
        Order::Asc => (a.1, &a.0).cmp(&(b.1, &b.0)),
        Order::Desc => (b.1, &b.0).cmp(&(a.1, &a.0)),
    });
    readings
}

async fn same_answers(with: &DynamoStore, without: &DynamoStore) {
    let whole = TimeRange::new(at(-HOUR), at(80 * HOUR)).unwrap();
    let inside = TimeRange::new(at(20 * HOUR + 1), at(50 * HOUR)).unwrap();
    for room in ["bedroom", "kitchen"] {
        for range in [whole, inside] {
            for order in [Order::Asc, Order::Desc] {
                for limit in [7, 1000] {
                    let a = pages(with, room, range, order, limit).await;
                    let b = pages(without, room, range, order, limit).await;
                    let mut want = expected(room, range);
                    if order == Order::Desc {
                        want.reverse();
                    }
                    assert_eq!(
                        flat(&b),
                        want,
                        "{room} {order:?} limit {limit}, without the index"
                    );
                    // DynamoDB keeps no order among index items with equal
                    // keys: at one millisecond, two devices may come either
                    // way from the index (each exactly once).
                    let times: Vec<Timestamp> = flat(&a).iter().map(|r| r.1).collect();
                    assert!(
                        times.windows(2).all(|w| match order {
                            Order::Asc => w[0] <= w[1],
                            Order::Desc => w[0] >= w[1],
                        }),
                        "{room} {order:?}: the index's answer in time order"
                    );
                    assert_eq!(
                        ties_sorted(flat(&a), order),
                        want,
                        "{room} {order:?} limit {limit}, with the index"
                    );
                    // Pages of the same sizes (an empty last page aside:
                    // DynamoDB may end on a full page).
                    let sizes = |p: &[Vec<(String, Timestamp)>]| {
                        p.iter()
                            .map(Vec::len)
                            .filter(|n| *n > 0)
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(
                        sizes(&a),
                        sizes(&b),
                        "{room} {order:?} limit {limit}: pages"
                    );
                }
            }
        }
    }
    // The kitchen's day: the mover alone, on its day there.
    let kitchen = expected("kitchen", whole);
    assert_eq!(kitchen.len(), 24);
    assert!(kitchen.iter().all(|(d, _)| d == "mover"));
}

#[tokio::test]
async fn room_answers_are_the_same_with_and_without_the_room_index() {
    let with = filled(true, "room-index-on").await;
    let without = filled(false, "room-index-off").await;
    same_answers(&with, &without).await;
    // Registry items enter no room index: DEVICE items carry `in_room`.
    let device = without.raw_item("DEVICE", "mover").await.unwrap();
    assert!(device.get("room").is_none(), "{device:?}");
    assert_eq!(
        device.get("in_room"),
        Some(&serde_dynamo::AttributeValue::S("bedroom".into()))
    );
    // Presence: one item per (room, day, device).
    assert!(without
        .raw_item("ROOM#kitchen", "2026-11-22#mover")
        .await
        .is_some());
    assert!(without
        .raw_item("ROOM#kitchen", "2026-11-21#mover")
        .await
        .is_none());
}

#[tokio::test]
async fn a_table_from_before_presence_answers_the_same_before_and_after_reindex() {
    let with = filled(true, "legacy-index-on").await;
    let old = filled(false, "legacy-shape").await;
    // Back to the shape an earlier version left: DEVICE items with `room`
    // (and no `in_room`), ROOM items without `presence_since`, no presence.
    let ddb = client(&dynalite());
    for device in ["mover", "stay", "co2"] {
        let mut item = old.raw_item("DEVICE", device).await.unwrap();
        let room = item.remove("in_room").unwrap();
        item.insert("room".into(), room);
        old.put_raw(item).await;
    }
    for room in ["bedroom", "kitchen"] {
        let mut item = old.raw_item("ROOM", room).await.unwrap();
        assert!(item.remove("presence_since").is_some());
        old.put_raw(item).await;
        for day in ["2026-11-21", "2026-11-22", "2026-11-23"] {
            for device in ["mover", "stay"] {
                old.delete_raw(&format!("ROOM#{room}"), &format!("{day}#{device}"))
                    .await;
            }
        }
    }
    let legacy = old.load_registry().await.unwrap();
    assert_eq!(
        legacy.devices[&DeviceId::parse("mover").unwrap()]
            .room
            .as_ref()
            .map(|r| r.as_str()),
        Some("bedroom"),
        "a DEVICE item's `room` still reads as its room"
    );
    same_answers(&with, &old).await;

    let checkpoint = std::env::temp_dir().join(format!("presence-{}.json", std::process::id()));
    ingester_local::reindex::run(&old, 2, &checkpoint, false)
        .await
        .unwrap();
    assert!(old
        .raw_item("ROOM#kitchen", "2026-11-22#mover")
        .await
        .is_some());
    let room = old.raw_item("ROOM", "bedroom").await.unwrap();
    assert!(room.contains_key("presence_since"), "{room:?}");
    let device = old.raw_item("DEVICE", "mover").await.unwrap();
    assert!(device.get("room").is_none() && device.contains_key("in_room"));
    same_answers(&with, &old).await;
    drop(ddb);
}

/// The merge of many devices' partitions (a bounded k-way merge, each
/// device read a chunk at a time): twelve sensors, some dense, some sparse,
/// one silent for hours, some at the same milliseconds; every page size
/// and both orders give exactly the readings in (time, device) order, each
/// once, with no page over its limit.
#[tokio::test]
async fn a_room_of_many_devices_pages_exactly_in_either_order() {
    let store = table(false, "room-many").await;
    let mut rng = fastrand::Rng::with_seed(25);
    let mut data = Vec::new();
    for d in 0..12 {
        let every = [1, 2, 3, 7, 30][d % 5] * 60_000;
        let mut ms = (d as i64 % 3) * 60_000;
        while ms < 3 * HOUR {
            // Device 5 is silent from hour 1 to hour 2.
            if !(d == 5 && (HOUR..2 * HOUR).contains(&ms)) {
                data.push(climate(&format!("s-{d:02}"), "hall", ms, 20.0));
            }
            ms += every + rng.i64(0..3) * 1000;
        }
    }
    integration_tests::write_all(&store, &data).await;
    for batch in data.chunks(50) {
        let r = shared::stream::handle(&store, stream_event_for(batch)).await;
        assert!(r.batch_item_failures.is_empty());
    }
    let range = TimeRange::new(at(0), at(3 * HOUR)).unwrap();
    let want: Vec<(String, Timestamp)> = ties_sorted(
        data.iter()
            .map(|r| (r.device_id.to_string(), r.timestamp))
            .collect(),
        Order::Asc,
    );
    for order in [Order::Asc, Order::Desc] {
        let mut want = want.clone();
        if order == Order::Desc {
            want.reverse();
        }
        for limit in [5, 97, 1000] {
            let got = pages(&store, "hall", range, order, limit).await;
            assert!(got.iter().all(|p| p.len() <= limit));
            assert_eq!(flat(&got), want, "{order:?} limit {limit}");
        }
    }
}

/// A page reads about a page, not a page from every device: twelve sensors
/// at one reading a minute for a day, and the first page of 97 costs a
/// twentieth of reading every device's day once (reading up to 97 from each
/// of the twelve, as the merge first did, cost about a twelfth: 13.5 read
/// units against 6.5 now, of 168).
#[tokio::test]
async fn a_room_page_reads_about_a_page() {
    let store = table(false, "room-cost").await;
    let data: Vec<Reading> = (0..1440)
        .flat_map(|m| (0..12).map(move |d| climate(&format!("s-{d:02}"), "hall", m * 60_000, 20.0)))
        .collect();
    integration_tests::write_all(&store, &data).await;
    // The registry (and the room's presence) from one reading of each device.
    let r = shared::stream::handle(&store, stream_event_for(&data[..12])).await;
    assert!(r.batch_item_failures.is_empty());
    let range = TimeRange::new(at(0), at(24 * HOUR)).unwrap();
    let every_device = shared::store::metering::metered(async {
        for d in 0..12 {
            let device = DeviceId::parse(&format!("s-{d:02}")).unwrap();
            let mut after = None;
            loop {
                let request = RangeRequest {
                    range,
                    order: Order::Asc,
                    limit: 1000,
                    after,
                };
                match store.device_readings(&device, &request).await.unwrap().next {
                    Some(p) => after = Some(p),
                    None => break,
                }
            }
        }
    })
    .await
    .1;
    let request = RangeRequest {
        range,
        order: Order::Asc,
        limit: 97,
        after: None,
    };
    let room = RoomId::parse("hall").unwrap();
    let (page, page_units) =
        shared::store::metering::metered(store.room_readings(&room, &request)).await;
    let page = page.unwrap();
    assert_eq!(page.readings.len(), 97);
    assert!(page.next.is_some());
    assert!(
        page_units < every_device / 20.0,
        "a page of 97 read {page_units} read units; every device's day {every_device}"
    );
}
