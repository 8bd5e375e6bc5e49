//! Properties (proptest): timestamp normalisation preserves order, key and
//! cursor encodings round-trip, cursors are rejected outside their scope, and
//! the registry converges to one state under any duplication, permutation and
//! batching of the same changes, on real stores.

use integration_tests::{stream_event_for, TestStore};
use proptest::prelude::*;
use shared::keys::{self, CursorScope, Position};
use shared::model::{DeviceId, Measurement, Reading, RoomId, TimeRange, Timestamp};
use shared::store::{DynamoStore, SqliteStore};

/// 2000-01-01 .. 2100-01-01, in ms.
fn instant() -> impl Strategy<Value = i64> {
    946_684_800_000i64..4_102_444_800_000i64
}

/// An RFC 3339 text of `ms` at a UTC offset of `offset_min` minutes.
fn with_offset(ms: i64, offset_min: i32) -> String {
    use chrono::{FixedOffset, TimeZone};
    let tz = FixedOffset::east_opt(offset_min * 60).unwrap();
    tz.timestamp_millis_opt(ms)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

fn device_id() -> impl Strategy<Value = DeviceId> {
    "[A-Za-z0-9._:-]{1,40}".prop_filter_map("reserved", |s| DeviceId::parse(&s).ok())
}

proptest! {
    #[test]
    fn timestamp_normalisation_preserves_order(a in instant(), b in instant(), oa in -1439i32..1440, ob in -1439i32..1440) {
        let ta = Timestamp::parse(&with_offset(a, oa)).unwrap();
        let tb = Timestamp::parse(&with_offset(b, ob)).unwrap();
        prop_assert_eq!(ta.millis(), a);
        prop_assert_eq!(a.cmp(&b), ta.cmp(&tb));
        prop_assert_eq!(a.cmp(&b), ta.to_string().cmp(&tb.to_string()), "text order is time order");
        prop_assert_eq!(ta.to_string().len(), Timestamp::TEXT_LEN);
    }

    #[test]
    fn reading_keys_round_trip_and_keep_order(a in instant(), b in instant()) {
        let (ta, tb) = (Timestamp::from_millis(a).unwrap(), Timestamp::from_millis(b).unwrap());
        prop_assert_eq!(keys::parse_reading_sk(&keys::reading_sk(ta)), Some(ta));
        prop_assert_eq!(a.cmp(&b), keys::reading_sk(ta).cmp(&keys::reading_sk(tb)));
    }

    #[test]
    fn cursors_round_trip_in_scope_and_are_rejected_elsewhere(
        dev in device_id(), other in device_id(), from in instant(), span in 1i64..10_000_000_000, at in 0.0f64..1.0,
        shift in 1i64..1_000_000, desc in any::<bool>()
    ) {
        let range = TimeRange::new(Timestamp::from_millis(from).unwrap(), Timestamp::from_millis(from + span).unwrap()).unwrap();
        let pos = Position {
            timestamp: Timestamp::from_millis(from + ((span - 1) as f64 * at) as i64).unwrap(),
            device_id: dev.clone(),
        };
        let scope = CursorScope::Device { device: &dev, range: &range, descending: desc };
        let cursor = scope.encode(&pos);
        prop_assert_eq!(scope.decode(&cursor), Ok(pos.clone()));
        prop_assert!(cursor.len() <= keys::MAX_CURSOR_LEN);
        if other != dev {
            let elsewhere = CursorScope::Device { device: &other, range: &range, descending: desc };
            prop_assert!(elsewhere.decode(&cursor).is_err());
        }
        let moved = TimeRange::new(range.from(), range.to().saturating_add_millis(shift)).unwrap();
        let other_range = CursorScope::Device { device: &dev, range: &moved, descending: desc };
        prop_assert!(other_range.decode(&cursor).is_err());
        let other_order = CursorScope::Device { device: &dev, range: &range, descending: !desc };
        prop_assert!(other_order.decode(&cursor).is_err());
        let room = RoomId::parse("r1").unwrap();
        let a_room = CursorScope::Room { room: &room, range: &range, descending: desc };
        prop_assert!(a_room.decode(&cursor).is_err());
    }
}

/// A small world: 3 devices over 2 rooms and a meter, readings at distinct times per device.
fn changes() -> impl Strategy<Value = Vec<Reading>> {
    prop::collection::vec((0usize..4, 0i64..500, 0usize..2, 0u32..100), 1..20).prop_map(|raw| {
        let mut seen = std::collections::HashSet::new();
        raw.into_iter()
            .filter(|(d, t, _, _)| seen.insert((*d, *t)))
            .map(|(d, t, room, v)| {
                let timestamp = Timestamp::from_millis(1_795_219_200_000 + t * 60_000).unwrap();
                let measurement = if d == 3 {
                    Measurement::power(f64::from(v), 0.0, 1.0).unwrap()
                } else {
                    let room = RoomId::parse(["living", "kitchen"][(d + room) % 2]).unwrap();
                    Measurement::climate(room, f64::from(v) / 4.0, 50.0).unwrap()
                };
                Reading {
                    device_id: DeviceId::parse(&format!("dev-{d}")).unwrap(),
                    timestamp,
                    measurement,
                }
            })
            .collect()
    })
}

/// Any delivery of `readings`: every change at least once plus duplicates,
/// shuffled, cut into batches of 1-4.
fn delivery(readings: Vec<Reading>) -> impl Strategy<Value = (Vec<Reading>, Vec<Vec<Reading>>)> {
    let n = readings.len();
    (
        Just(readings),
        prop::collection::vec(0..n, 0..2 * n),
        prop::collection::vec(1usize..5, 1..20),
    )
        .prop_flat_map(|(readings, extra, sizes)| {
            let order: Vec<usize> = (0..readings.len()).chain(extra).collect();
            (Just(readings), Just(order).prop_shuffle(), Just(sizes))
        })
        .prop_map(|(readings, order, sizes)| {
            let shuffled: Vec<Reading> = order.iter().map(|&i| readings[i].clone()).collect();
            let mut batches = Vec::new();
            let mut rest = &shuffled[..];
            for size in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let size = (*size).min(rest.len());
                batches.push(rest[..size].to_vec());
                rest = &rest[size..];
            }
            (readings, batches)
        })
}

async fn converges<S: TestStore>(
    readings: &[Reading],
    batches: &[Vec<Reading>],
) -> Result<(), TestCaseError> {
    let reference = S::fresh("prop-ref").await;
    let r = shared::stream::handle(&reference, stream_event_for(readings)).await;
    prop_assert!(r.batch_item_failures.is_empty());
    let shuffled = S::fresh("prop-shuffled").await;
    for batch in batches {
        let r = shared::stream::handle(&shuffled, stream_event_for(batch)).await;
        prop_assert!(r.batch_item_failures.is_empty());
    }
    prop_assert_eq!(
        reference.load_registry().await.unwrap(),
        shuffled.load_registry().await.unwrap()
    );
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_embedded_registry_converges_under_any_delivery((readings, batches) in changes().prop_flat_map(delivery)) {
        runtime().block_on(converges::<SqliteStore>(&readings, &batches))?;
    }
}

proptest! {
    // Each case makes two tables on dynalite: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn the_dynamodb_registry_converges_under_any_delivery((readings, batches) in changes().prop_flat_map(delivery)) {
        runtime().block_on(converges::<DynamoStore>(&readings, &batches))?;
    }
}
