//! Rollups answer as the readings do (issue 14): on the embedded store, for
//! random readings delivered in random batches and orders (late, repeated
//! with other values, reversed), random ranges, hour, day, week and month
//! buckets, in UTC
//! and in zones with whole-hour and half-hour offsets, `stats` and `energy`
//! from rollups equal the same queries over the readings (the same store
//! with rollup reads off), within float tolerance.

use proptest::prelude::*;
use shared::domain::aggregate::{Bucketing, Width};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, TimeRange, Timestamp};
use shared::query::{self, Partition, Source, StatsQuery};
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use shared::store::RollupStore;
use shared::store::{SqliteStore, Store};

const T0: i64 = 1_795_219_200_000; // 2026-11-21T00:00:00Z
const MINUTE: i64 = 60_000;

#[derive(Debug, Clone)]
enum What {
    /// The meter: its counters move by this much (negative: a dip). The
    /// `u8` names the counters the reading carries: bit 0 bought, bit 1 sold,
    /// bit 2 gas (a meter that reports one, the other, both, or gains one
    /// part way; a P1 meter's telegram, electricity and gas).
    Meter(f64, u8),
    Zero(u8),
    NewMeter(u8),
    /// A room sensor (0 or 1) in a room (0 or 1), a temperature.
    Climate(u8, u8, f64),
}

fn what() -> impl Strategy<Value = What> {
    let which = prop_oneof![
        3 => Just(3u8),
        2 => Just(1u8),
        1 => Just(2u8),
        2 => Just(7u8),
        1 => Just(4u8)
    ];
    prop_oneof![
        6 => (-5.0f64..3.0, which.clone()).prop_map(|(d, w)| What::Meter(d, w)),
        1 => which.clone().prop_map(What::Zero),
        1 => which.prop_map(What::NewMeter),
        6 => (0u8..2, 0u8..2, 15.0f64..25.0).prop_map(|(s, r, t)| What::Climate(s, r, t)),
    ]
}

fn history() -> impl Strategy<Value = Vec<(i64, What)>> {
    prop::collection::vec((0i64..5 * 1440, what()), 1..250)
}

/// A meter's reading of the counters `which` names, with its watts.
fn meter(
    which: u8,
    bought: f64,
    sold: f64,
) -> Result<Measurement, Vec<shared::model::FieldProblem>> {
    let mut values = vec![(Quantity::Power, 100.0)];
    if which & 1 != 0 {
        values.push((Quantity::EnergyBought, bought));
    }
    if which & 2 != 0 {
        values.push((Quantity::EnergySold, sold));
    }
    if which & 4 != 0 {
        // Gas follows the same steps (dips, zeros, a new meter), in m³.
        values.push((Quantity::Gas, bought * 3.0));
    }
    Measurement::new(None, values)
}

/// A bought-only meter's reading (`meter` with the bought counter alone).
fn meter_reading(which: u8, kwh: f64) -> Measurement {
    meter(which, kwh, 0.0).unwrap()
}

fn readings(h: &[(i64, What)], t0: i64) -> Vec<Reading> {
    let mut kwh = 1000.0f64;
    h.iter()
        .map(|(minute, what)| {
            let (device, measurement) = match what {
                What::Meter(d, which) => {
                    kwh = ((kwh + d).max(0.5) * 1000.0).round() / 1000.0;
                    ("meter-1", meter(*which, kwh, kwh / 10.0))
                }
                What::Zero(which) => ("meter-1", meter(*which, 0.0, 0.0)),
                What::NewMeter(which) => {
                    kwh = 1.5;
                    ("meter-1", meter(*which, kwh, kwh / 10.0))
                }
                What::Climate(s, r, t) => (
                    ["sensor-1", "sensor-2"][*s as usize],
                    Measurement::climate(
                        RoomId::parse(["bedroom", "hall"][*r as usize]).unwrap(),
                        (t * 100.0).round() / 100.0,
                        50.0,
                    ),
                ),
            };
            Reading {
                device_id: DeviceId::parse(device).unwrap(),
                timestamp: Timestamp::from_millis(t0 + minute * MINUTE).unwrap(),
                measurement: measurement.unwrap(),
            }
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn rollup_answers_equal_raw_answers(
        h in history(),
        batch in 1usize..80,
        order in 0u8..3,
        from_min in 0i64..3 * 1440,
        len_min in 60i64..4 * 1440,
        zone in 0usize..4,
        width in 0usize..4,
    ) {
        let mut all = readings(&h, T0);
        match order {
            0 => all.sort_by_key(|r| r.timestamp), // appends
            1 => all.sort_by_key(|r| std::cmp::Reverse(r.timestamp)), // reversed
            _ => {} // as generated: late readings, and keys written again
        }
        let tz = [None, Some(shared::model::Zone::named("Europe/Berlin").unwrap()), Some(shared::model::Zone::named("America/New_York").unwrap()), Some(shared::model::Zone::named("Asia/Kolkata").unwrap())][zone];
        let bucketing = Bucketing::new([Width::Hour, Width::Day, Width::Week, Width::Month][width], tz);
        let range = TimeRange::new(
            Timestamp::from_millis(T0 + from_min * MINUTE).unwrap(),
            Timestamp::from_millis(T0 + (from_min + len_min) * MINUTE).unwrap(),
        ).unwrap();
        let q = StatsQuery { range, bucketing };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let store = SqliteStore::in_memory().unwrap();
            for chunk in all.chunks(batch) {
                assert!(store.write_readings(chunk).await.unwritten.is_empty());
            }
            let raw = store.clone().without_rollup_reads();
            let expect_rollups = zone != 3 && len_min >= 120;
            same_answers(&store, &raw, &q, |_| expect_rollups).await;
        });
    }
}

/// `stats` (two devices and a room) and `energy` (the meter) from `store`
/// equal those from `raw` (the same data, read from the readings only).
/// `expect_rollups`: which partitions' stats must have used rollups.
async fn same_answers<S: Store>(
    store: &S,
    raw: &S,
    q: &StatsQuery,
    expect_rollups: impl Fn(&Partition) -> bool,
) {
    let meter = DeviceId::parse("meter-1").unwrap();
    let sensor = DeviceId::parse("sensor-1").unwrap();
    let bedroom = RoomId::parse("bedroom").unwrap();
    for partition in [
        Partition::Device(&meter),
        Partition::Device(&sensor),
        Partition::Room(&bedroom),
    ] {
        let got = query::stats(store, partition, q).await.unwrap();
        let want = query::stats(raw, partition, q).await.unwrap();
        assert_eq!(want.source, Source::Raw);
        if expect_rollups(&partition) {
            assert_ne!(got.source, Source::Raw, "{q:?}");
        }
        assert_eq!(got.buckets.len(), want.buckets.len(), "{partition:?} {q:?}");
        for (a, b) in got.buckets.iter().zip(&want.buckets) {
            assert_eq!(
                (a.start, a.end, a.count),
                (b.start, b.end, b.count),
                "{partition:?}"
            );
            assert_eq!(
                a.fields.keys().collect::<Vec<_>>(),
                b.fields.keys().collect::<Vec<_>>()
            );
            for (k, f) in &a.fields {
                let g = b.fields[k];
                assert!(
                    (f.min, f.max, f.count) == (g.min, g.max, g.count) && close(f.sum, g.sum),
                    "{partition:?} {k}: {f:?} {g:?}"
                );
            }
        }
    }
    let got = query::energy(store, &meter, q).await.unwrap();
    let want = query::energy(raw, &meter, q).await.unwrap();
    assert_eq!(
        got.buckets.len(),
        want.buckets.len(),
        "{:?}\n{:?}",
        got.buckets,
        want.buckets
    );
    for (a, b) in got.buckets.iter().zip(&want.buckets) {
        assert_eq!((a.start, a.resets), (b.start, b.resets), "{a:?} {b:?}");
        assert!(
            close(a.kwh_bought, b.kwh_bought) && close(a.kwh_sold, b.kwh_sold),
            "{a:?} {b:?}"
        );
        assert_eq!(a.m3_gas.is_some(), b.m3_gas.is_some(), "{a:?} {b:?}");
        assert!(
            close(a.m3_gas.unwrap_or(0.0), b.m3_gas.unwrap_or(0.0)),
            "{a:?} {b:?}"
        );
    }
}

/// 2026-01-20T00:00:00Z: the DynamoDB property's readings lie well before
/// now, where the rollups stream function is surely done.
const PAST_T0: i64 = 1_768_867_200_000;

proptest! {
    // Each case is a fresh table on dynalite, fed as the stream would feed it.
    #![proptest_config(ProptestConfig::with_cases(10))]
    /// On DynamoDB, with rollups kept by the stream handlers: each batch
    /// written, then its stream event handled (registry and rollups), some
    /// events delivered twice, or all again in reverse afterwards.
    #[test]
    fn rollup_answers_equal_raw_answers_on_dynamodb(
        h in prop::collection::vec((0i64..3 * 1440, what()), 1..120),
        batch in 1usize..50,
        order in 0u8..3,
        redeliver in 0u8..3,
        from_min in 0i64..2 * 1440,
        len_min in 60i64..3 * 1440,
        zone in 0usize..3,
        width in 0usize..4,
        as_batches in any::<bool>(),
    ) {
        dynamodb_case(&h, batch, order, redeliver, (from_min, len_min), zone, width, as_batches);
    }
}

/// One case of the property above: `h` written to a fresh dynalite table in
/// `batch`es, in `order`, each batch's stream event handled (twice with
/// `redeliver` 1, all again in reverse with 2), as single items or
/// `as_batches`; then the answers over `from_min` + `len_min` compared.
#[allow(clippy::too_many_arguments)]
fn dynamodb_case(
    h: &[(i64, What)],
    batch: usize,
    order: u8,
    redeliver: u8,
    (from_min, len_min): (i64, i64),
    zone: usize,
    width: usize,
    as_batches: bool,
) {
    use integration_tests::{stream_event_for, TestStore};
    use shared::store::DynamoStore;
    let mut all = readings(h, PAST_T0);
    match order {
        0 => all.sort_by_key(|r| r.timestamp),
        1 => all.sort_by_key(|r| std::cmp::Reverse(r.timestamp)),
        _ => {}
    }
    let tz = [
        None,
        Some(shared::model::Zone::named("Europe/Berlin").unwrap()),
        Some(shared::model::Zone::named("America/New_York").unwrap()),
    ][zone];
    let bucketing = Bucketing::new(
        [Width::Hour, Width::Day, Width::Week, Width::Month][width],
        tz,
    );
    let range = TimeRange::new(
        Timestamp::from_millis(PAST_T0 + from_min * MINUTE).unwrap(),
        Timestamp::from_millis(PAST_T0 + (from_min + len_min) * MINUTE).unwrap(),
    )
    .unwrap();
    let q = StatsQuery { range, bucketing };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // As batches (issue 78): a chunk's closed hours go in as blocks
        // through ingest, and the stream brings only its items.
        let store = integration_tests::AS_BATCHES
            .scope(as_batches, DynamoStore::fresh("rollups-prop"))
            .await;
        let cache = shared::registry::RegistryCache::unloaded(std::time::Duration::from_secs(30));
        let mut events = Vec::new();
        for chunk in all.chunks(batch) {
            let items: Vec<Reading> = if as_batches {
                assert!(shared::ingest::write(&store, &cache, chunk.to_vec())
                    .await
                    .unwritten
                    .is_empty());
                let split =
                    shared::domain::batch_hours::split(chunk, Timestamp::now(), Default::default());
                split.items.iter().map(|&i| chunk[i].clone()).collect()
            } else {
                assert!(store.write_readings(chunk).await.unwritten.is_empty());
                chunk.to_vec()
            };
            let event = stream_event_for(&items);
            let deliveries = if redeliver == 1 { 2 } else { 1 };
            for _ in 0..deliveries {
                let registry = shared::stream::handle(&store, event.clone()).await;
                assert!(registry.batch_item_failures.is_empty());
                let report = shared::stream::rollups::handle_batch(&store, &event).await;
                assert_eq!(report.failed, None);
            }
            events.push(event);
        }
        if redeliver == 2 {
            for event in events.iter().rev() {
                let report = shared::stream::rollups::handle_batch(&store, event).await;
                assert_eq!(report.failed, None);
                assert_eq!(
                    report.writes.write_units, 0.0,
                    "a late duplicate rewrites nothing"
                );
            }
        }
        let meter = DeviceId::parse("meter-1").unwrap();
        let cover = store
            .rollup_coverage(std::slice::from_ref(&meter))
            .await
            .unwrap();
        let expect_rollups = cover.is_some_and(|c| {
            c.to().millis().min(range.to().millis()) - c.from().millis().max(range.from().millis())
                >= 2 * 60 * MINUTE
        });
        let raw = store.clone().with_rollup_lag(None);
        same_answers(&store, &raw, &q, |p| {
            expect_rollups && matches!(p, Partition::Device(d) if **d == meter)
        })
        .await;
    });
}

/// The case a fresh clone's CI drew on 2026-11-29, kept as it was found: a
/// meter's reading at minute 3386 written again with another value in a
/// later batch, as batches. A day's sum of the sold counter from rollups
/// (2.7717) differs from the readings' (2.8044): the raw read takes the
/// item where an item and an hour block both hold a time (docs/batches.md,
/// "How it is read"), and here the item is the older write. A known defect
/// of issue 78's blocks, not fixed yet: ignored until it is, so that the
/// property above is what CI runs (it draws such a case rarely).
#[test]
#[ignore = "known defect: an older item wins over a newer hour block (docs/batches.md)"]
fn rollups_on_dynamodb_as_batches_with_late_repeated_readings() {
    let h: Vec<(i64, What)> = vec![
        (840, What::Meter(-0.35946976774398365, 3)),
        (2756, What::Meter(-0.5947400674798298, 1)),
        (956, What::Zero(7)),
        (1002, What::Meter(-3.844863789277062, 3)),
        (1353, What::Meter(1.7054801323024766, 2)),
        (882, What::Meter(-2.618474298108995, 3)),
        (1995, What::Meter(-1.3702486710505601, 3)),
        (2649, What::Climate(0, 0, 24.365588093295802)),
        (1885, What::Meter(-3.087720696843259, 7)),
        (2603, What::Climate(1, 0, 21.09108244057093)),
        (2848, What::Climate(1, 1, 17.268388812385425)),
        (3933, What::Climate(1, 1, 20.033019312827687)),
        (4255, What::Climate(0, 0, 19.011498155282613)),
        (781, What::NewMeter(3)),
        (1823, What::Climate(0, 1, 24.049622949866453)),
        (1218, What::Meter(-1.5254113192873822, 7)),
        (2763, What::Meter(-3.2289177756575866, 1)),
        (242, What::Climate(0, 1, 21.220386170286638)),
        (2465, What::Meter(0.5181893431369681, 1)),
        (3229, What::Climate(1, 0, 17.70969812953831)),
        (3368, What::NewMeter(3)),
        (1878, What::Zero(1)),
        (2812, What::Climate(1, 1, 17.994516231591053)),
        (1689, What::Meter(0.6606392475794199, 7)),
        (4280, What::Meter(-4.150019115347345, 3)),
        (792, What::Meter(-4.653421380807659, 4)),
        (1702, What::Meter(-1.450642848871437, 3)),
        (2059, What::Climate(0, 1, 20.098424704514432)),
        (3144, What::Meter(-3.420225661859635, 1)),
        (4144, What::Climate(0, 0, 18.126311977764857)),
        (1391, What::Climate(1, 1, 20.005882270392235)),
        (1808, What::NewMeter(7)),
        (3328, What::NewMeter(7)),
        (1478, What::Meter(0.944765473493301, 1)),
        (1314, What::Climate(1, 0, 23.101846621314653)),
        (3815, What::Meter(-2.3403516381999507, 3)),
        (2865, What::Meter(2.2827109010817948, 3)),
        (787, What::Meter(-0.45540202081403097, 1)),
        (477, What::Climate(1, 0, 16.813995784281445)),
        (3783, What::Climate(0, 1, 15.114030040843076)),
        (4293, What::Meter(2.4707766764802637, 3)),
        (4247, What::Meter(-2.117130312528604, 4)),
        (432, What::Climate(0, 1, 20.64563762957581)),
        (1288, What::Meter(-1.1986339673576951, 1)),
        (2541, What::Meter(-0.47289196761502234, 1)),
        (989, What::Zero(1)),
        (1203, What::Climate(0, 1, 21.450513521183233)),
        (2154, What::Climate(1, 0, 24.04772235005525)),
        (1380, What::Meter(2.1359003341531158, 4)),
        (231, What::Meter(-1.5740915057523583, 7)),
        (1196, What::Climate(0, 0, 16.22397874302766)),
        (2186, What::Zero(3)),
        (2652, What::Climate(1, 1, 19.333410499862747)),
        (3675, What::Climate(0, 0, 24.47250907100336)),
        (84, What::Climate(1, 1, 19.167767615183692)),
        (3263, What::Climate(1, 0, 19.7213806445472)),
        (4130, What::NewMeter(7)),
        (3677, What::Meter(-0.8681526905242009, 2)),
        (1734, What::Climate(1, 1, 23.877334727659683)),
        (3137, What::Climate(1, 1, 21.99828741524153)),
        (3345, What::Meter(1.3162605440084751, 3)),
        (1051, What::Meter(-0.9167122767265535, 4)),
        (2205, What::Climate(1, 1, 17.80763645979094)),
        (1799, What::Climate(1, 0, 19.587539268600942)),
        (4234, What::Meter(0.2934964632176467, 3)),
        (1555, What::Climate(1, 0, 19.817511142063754)),
        (1989, What::Climate(0, 0, 22.703635172159018)),
        (1495, What::Climate(1, 0, 20.9520890345069)),
        (1574, What::Climate(0, 0, 19.056776174008494)),
        (852, What::Climate(1, 0, 19.834409767197705)),
        (1933, What::Meter(-3.808609100682731, 7)),
        (3481, What::NewMeter(3)),
        (3320, What::Climate(0, 1, 17.489829169056698)),
        (2560, What::Meter(-3.4266456250426693, 3)),
        (3069, What::Meter(-4.40023240174652, 1)),
        (3477, What::Zero(3)),
        (2889, What::Meter(1.7173768793148043, 7)),
        (3386, What::Meter(-1.3902663391634336, 3)),
        (4250, What::Climate(1, 0, 15.336847905450613)),
        (1876, What::Climate(1, 0, 20.57126987321361)),
        (3290, What::NewMeter(2)),
        (3816, What::Meter(1.076275376038632, 4)),
        (4065, What::Meter(2.3186704709301678, 3)),
        (1529, What::Climate(1, 0, 15.76507635198669)),
        (2547, What::Meter(-2.8673495632087143, 4)),
        (4023, What::Climate(0, 0, 23.65703980692552)),
        (1594, What::Meter(2.354262918651927, 3)),
        (2664, What::NewMeter(3)),
        (3051, What::Meter(-0.09604247269882271, 4)),
        (3808, What::Meter(1.4982101497311695, 3)),
        (4073, What::Climate(0, 1, 21.110225596224833)),
        (2571, What::NewMeter(1)),
        (3299, What::Climate(0, 1, 16.42288119066729)),
        (1423, What::Climate(0, 0, 24.573750827419996)),
        (1889, What::Meter(-1.596022638133694, 3)),
        (2730, What::Meter(1.6306386356326183, 3)),
        (1451, What::Climate(1, 0, 24.74765017282612)),
        (36, What::Climate(1, 1, 24.35145649425876)),
        (692, What::Climate(0, 0, 17.921618118152058)),
        (881, What::Meter(-2.8815527239754806, 3)),
        (2717, What::Meter(-4.227283254342912, 2)),
        (3386, What::Meter(-4.311722004065677, 3)),
        (960, What::NewMeter(4)),
        (2715, What::Meter(-1.3788987299345004, 7)),
        (2513, What::Meter(-2.6508564638687595, 1)),
        (3615, What::Climate(0, 0, 16.012791028342576)),
        (3402, What::Climate(0, 0, 17.512353682071073)),
        (2977, What::Climate(0, 1, 16.992221851895057)),
        (260, What::Meter(-0.9910720827207061, 3)),
    ];
    dynamodb_case(&h, 12, 2, 0, (2329, 3688), 0, 1, true);
}

/// `readings` written to a DynamoDB store in batches of 50, each batch's
/// stream event handled by the rollups function, as on AWS.
async fn written_through_the_stream(store: &shared::store::DynamoStore, readings: &[Reading]) {
    for chunk in readings.chunks(50) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
        let event = integration_tests::stream_event_for(chunk);
        assert_eq!(
            shared::stream::rollups::handle_batch(store, &event)
                .await
                .failed,
            None
        );
    }
}

/// Each hour and day rollup item of `device` in `range` as `edit` leaves
/// it (what an earlier build wrote): how many there were.
async fn rollup_items_rewritten(
    store: &shared::store::DynamoStore,
    device: &DeviceId,
    range: TimeRange,
    mut edit: impl FnMut(&mut serde_dynamo::Item),
) -> usize {
    use integration_tests::RawItems;
    use shared::model::Span;
    let mut rewritten = 0;
    for span in [Span::Hour, Span::Day] {
        let mut start = span.start_of(range.from());
        while start < range.to() {
            let sk = shared::keys::rollup_sk(span, start);
            if let Some(mut item) = store.raw_item(device.as_str(), &sk).await {
                edit(&mut item);
                store.put_raw(item).await;
                rewritten += 1;
            }
            start = span.end_of(start);
        }
    }
    rewritten
}

/// Rollup items a build before gas was followed wrote for a gas meter: day
/// items without `x`, hour items without an entering chain (it had no
/// electricity counter). On DynamoDB, such items answer gas from the
/// readings, as the fresh ones do, per hour and per day.
#[tokio::test]
async fn rollup_items_from_before_gas_was_followed_answer_from_the_readings() {
    use integration_tests::TestStore;
    use shared::keys;
    use shared::store::DynamoStore;
    let store = DynamoStore::fresh("rollups-gas").await;
    let meter = DeviceId::parse("gas-1").unwrap();
    let all: Vec<Reading> = (0..2 * 144)
        .map(|i| Reading {
            device_id: meter.clone(),
            timestamp: Timestamp::from_millis(PAST_T0 + i * 10 * MINUTE).unwrap(),
            measurement: Measurement::new(
                None,
                vec![(Quantity::Gas, 3000.0 + (i / 4) as f64 * 0.013)],
            )
            .unwrap(),
        })
        .collect();
    written_through_the_stream(&store, &all).await;
    let range = TimeRange::new(
        Timestamp::from_millis(PAST_T0).unwrap(),
        Timestamp::from_millis(PAST_T0 + 2 * 1440 * MINUTE).unwrap(),
    )
    .unwrap();
    let queries = [Width::Hour, Width::Day].map(|width| StatsQuery {
        range,
        bucketing: Bucketing::new(width, None),
    });
    let mut fresh = Vec::new();
    for q in &queries {
        let answer = query::energy(&store, &meter, q).await.unwrap();
        assert_eq!(answer.source, Source::Rollups);
        let total: f64 = answer.buckets.iter().map(|b| b.m3_gas.unwrap()).sum();
        assert!((total - (287 / 4) as f64 * 0.013).abs() < 1e-9, "{total}");
        fresh.push(answer);
    }
    // The first hour entered with no chain; every other item had one of the two.
    let mut without = 0;
    let rewritten = rollup_items_rewritten(&store, &meter, range, |item| {
        let x = item.remove("x").is_some();
        let entering = item.remove(keys::attr::ENTERING).is_some();
        without += usize::from(!x && !entering);
    })
    .await;
    assert!(rewritten >= 48 && without == 1, "{rewritten} {without}");
    for (q, fresh) in queries.iter().zip(&fresh) {
        let old = query::energy(&store, &meter, q).await.unwrap();
        assert_eq!(old.buckets, fresh.buckets);
        assert!(
            old.items_read > fresh.items_read,
            "{} {}",
            old.items_read,
            fresh.items_read
        );
    }
}

/// Day rollups an earlier build wrote into an embedded store's file
/// (version 4 bodies, no gas) for a P1 meter's telegrams, electricity and
/// gas: its energy answers, gas included, are what fresh rollups give,
/// those days read from their readings; the catch-up a start runs
/// (`rollups::catch_up`) finds them stale and writes them again as version 5.
#[tokio::test]
async fn embedded_rollups_from_before_gas_was_followed_answer_from_the_readings() {
    let dir = std::env::temp_dir().join(format!("rollups-gas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ingester.db");
    let device = DeviceId::parse("dsmr").unwrap();
    let readings: Vec<Reading> = (0..3 * 144)
        .map(|i| Reading {
            device_id: device.clone(),
            timestamp: Timestamp::from_millis(T0 + i * 10 * MINUTE).unwrap(),
            measurement: Measurement::new(
                None,
                vec![
                    (Quantity::EnergyBought, 500.0 + i as f64 * 0.125),
                    (Quantity::Gas, 4021.117 + (i / 3) as f64 * 0.011),
                ],
            )
            .unwrap(),
        })
        .collect();
    let range = TimeRange::new(
        Timestamp::from_millis(T0).unwrap(),
        Timestamp::from_millis(T0 + 3 * 1440 * MINUTE).unwrap(),
    )
    .unwrap();
    let q = StatsQuery {
        range,
        bucketing: Bucketing::new(Width::Day, None),
    };
    let fresh = {
        let store = SqliteStore::open(&file).unwrap();
        assert!(store.write_readings(&readings).await.unwritten.is_empty());
        query::energy(&store, &device, &q).await.unwrap()
    };
    let gas: f64 = fresh.buckets.iter().map(|b| b.m3_gas.unwrap()).sum();
    assert!((gas - (431 / 3) as f64 * 0.011).abs() < 1e-6, "{gas}");
    // Each day's body as the build before wrote it: the same, without gas.
    assert_eq!(integration_tests::rollups_as_before_volumes(&file), 3);
    let store = SqliteStore::open(&file).unwrap();
    let old = query::energy(&store, &device, &q).await.unwrap();
    assert_eq!(old.buckets, fresh.buckets);
    assert!(
        old.items_read > fresh.items_read,
        "read from the readings: {} {}",
        old.items_read,
        fresh.items_read
    );
    // What an upgraded store's start rebuilds (`rollups::catch_up`): the
    // meter whose rollups do not stand for its gas, over their days.
    let stale = shared::rollups::Upkeep::stale_rollups(&store)
        .await
        .unwrap();
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_eq!(stale[0].0, device);
    assert!(stale[0].1.from() <= range.from() && range.to() <= stale[0].1.to());
    let progress = shared::rollups::CatchUp::default();
    assert_eq!(shared::rollups::catch_up(&store, &progress).await, 1);
    let report = progress.report();
    assert_eq!(
        (report.devices, report.rebuilt, report.finished),
        (1, 1, true)
    );
    assert!(shared::rollups::Upkeep::stale_rollups(&store)
        .await
        .unwrap()
        .is_empty());
    let rebuilt = query::energy(&store, &device, &q).await.unwrap();
    assert_eq!(rebuilt.buckets, fresh.buckets);
    assert_eq!(rebuilt.items_read, fresh.items_read);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A year of a meter: daily stats and monthly energy read a day rollup per
/// day (≤ 400 items), not every reading, and give the readings' answers.
#[tokio::test]
async fn a_year_of_daily_stats_and_monthly_energy_reads_day_rollups() {
    const STEP: i64 = 10 * MINUTE; // 52,560 readings: a year at 1/minute reads the same rollups
    let start = 1_767_225_600_000; // 2026-01-01T00:00:00Z
    let year: Vec<Reading> = (0..365 * 144)
        .map(|i| Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: Timestamp::from_millis(start + i * STEP).unwrap(),
            measurement: Measurement::power(1000.0 + i as f64 * 0.01, 5.0, 300.0).unwrap(),
        })
        .collect();
    let store = SqliteStore::in_memory().unwrap();
    for chunk in year.chunks(1000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    let raw = store.clone().without_rollup_reads();
    let meter = DeviceId::parse("meter-1").unwrap();
    let range = TimeRange::new(
        Timestamp::from_millis(start).unwrap(),
        Timestamp::from_millis(start + 365 * 86_400_000).unwrap(),
    )
    .unwrap();
    let daily = StatsQuery {
        range,
        bucketing: Bucketing::new(Width::Day, None),
    };
    let got = query::stats(&store, Partition::Device(&meter), &daily)
        .await
        .unwrap();
    let want = query::stats(&raw, Partition::Device(&meter), &daily)
        .await
        .unwrap();
    assert_eq!(
        (got.source, got.items_read, got.buckets.len()),
        (Source::Rollups, 365, 365)
    );
    assert_eq!(want.items_read, year.len());
    for (a, b) in got.buckets.iter().zip(&want.buckets) {
        assert_eq!((a.start, a.count), (b.start, b.count));
    }
    let monthly = StatsQuery {
        range,
        bucketing: Bucketing::new(Width::Month, None),
    };
    let got = query::energy(&store, &meter, &monthly).await.unwrap();
    let want = query::energy(&raw, &meter, &monthly).await.unwrap();
    assert_eq!(got.buckets.len(), 12);
    assert!(got.items_read <= 400, "{} items", got.items_read);
    for (a, b) in got.buckets.iter().zip(&want.buckets) {
        assert!(close(a.kwh_bought, b.kwh_bought), "{a:?} {b:?}");
    }
    let total: f64 = got.buckets.iter().map(|b| b.kwh_bought).sum();
    assert!(close(total, (year.len() - 1) as f64 * 0.01), "{total}");
}

/// On DynamoDB (dynalite), rollup items (`RH#`/`RD#` in the device's
/// partition) come back whole, and no reading range, room range or registry
/// read ever sees one.
#[tokio::test]
async fn rollup_items_round_trip_on_dynamodb_and_stay_out_of_reading_ranges() {
    use integration_tests::TestStore;
    use shared::domain::aggregate::rollup::spans;
    use shared::model::Span;
    use shared::store::{DynamoStore, Order, RangeRequest};
    let store = DynamoStore::fresh("rollup-items").await;
    let h: Vec<(i64, What)> = (0..150)
        .map(|i| {
            let what = match i % 4 {
                0 => What::Meter(0.5, [3, 1, 2][(i % 3) as usize]),
                1 => What::Climate(0, (i % 3 == 0) as u8, 20.0 + (i % 7) as f64),
                2 => What::Meter(-2.0, 3),
                _ => What::Zero(1),
            };
            (i * 37, what)
        })
        .collect();
    let mut all = readings(&h, T0);
    all.sort_by_key(|r| r.timestamp);
    assert!(store.write_readings(&all).await.unwritten.is_empty());
    let everything = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    for device in ["meter-1", "sensor-1"] {
        let device = DeviceId::parse(device).unwrap();
        let mine: Vec<Reading> = all
            .iter()
            .filter(|r| r.device_id == device)
            .cloned()
            .collect();
        for span in [Span::Hour, Span::Day] {
            let fresh = spans(span, Default::default(), mine.iter());
            for r in &fresh {
                store.put_rollup(&device, r).await.unwrap();
            }
            assert_eq!(
                store
                    .read_rollups(&device, span, &everything)
                    .await
                    .unwrap(),
                fresh
            );
        }
        let page = store
            .device_readings(
                &device,
                &RangeRequest {
                    range: everything,
                    order: Order::Asc,
                    limit: 1000,
                    after: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(page.readings, mine, "readings only");
    }
    let room = store
        .room_readings(
            &RoomId::parse("hall").unwrap(),
            &RangeRequest {
                range: everything,
                order: Order::Desc,
                limit: 1000,
                after: None,
            },
        )
        .await
        .unwrap();
    assert!(room
        .readings
        .iter()
        .all(|r| r.device_id.as_str() == "sensor-1"));
    let registry = store.load_registry().await.unwrap();
    assert_eq!(
        registry.devices.len(),
        0,
        "the registry is the stream's to fill"
    );
    // Rollup items alone do not make answers use them: only the marker the
    // stream function (or `rollups rebuild`) leaves does.
    let meter = DeviceId::parse("meter-1").unwrap();
    assert_eq!(store.rollup_coverage(&[meter]).await.unwrap(), None);
}

/// Rollup items a build before single counters wrote (version 1) for a
/// meter that reports only its bought counter held no energy. On DynamoDB,
/// such items answer energy from the readings, as the fresh ones do.
#[tokio::test]
async fn version_1_rollup_items_of_a_bought_only_meter_answer_from_the_readings() {
    use integration_tests::TestStore;
    use shared::keys;
    use shared::store::DynamoStore;
    let store = DynamoStore::fresh("rollups-v1").await;
    let meter = DeviceId::parse("tasmota-1").unwrap();
    let all: Vec<Reading> = (0..2 * 144)
        .map(|i| Reading {
            device_id: meter.clone(),
            timestamp: Timestamp::from_millis(PAST_T0 + i * 10 * MINUTE).unwrap(),
            measurement: meter_reading(1, 700.0 + i as f64 * 0.25),
        })
        .collect();
    written_through_the_stream(&store, &all).await;
    let q = StatsQuery {
        range: TimeRange::new(
            Timestamp::from_millis(PAST_T0).unwrap(),
            Timestamp::from_millis(PAST_T0 + 2 * 1440 * MINUTE).unwrap(),
        )
        .unwrap(),
        bucketing: Bucketing::new(Width::Hour, None),
    };
    let fresh = query::energy(&store, &meter, &q).await.unwrap();
    assert_eq!(fresh.source, Source::Rollups);
    let total: f64 = fresh.buckets.iter().map(|b| b.kwh_bought).sum();
    assert!((total - 287.0 * 0.25).abs() < 1e-9, "{total}");
    let rewritten = rollup_items_rewritten(&store, &meter, q.range, |item| {
        for name in ["b", "s", "k", keys::attr::ENTERING] {
            item.remove(name);
        }
        item.insert("v".into(), serde_dynamo::AttributeValue::N("1".into()));
    })
    .await;
    assert!(rewritten >= 48, "{rewritten}");
    let old = query::energy(&store, &meter, &q).await.unwrap();
    assert_eq!(old.buckets, fresh.buckets);
    assert!(
        old.items_read > fresh.items_read,
        "{} {}",
        old.items_read,
        fresh.items_read
    );
}
