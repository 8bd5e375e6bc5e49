//! The cost table of docs/cost.md, computed from what the code writes
//! (issue 25). A day of a room sensor's and a meter's readings, at 1 a
//! minute and at 1 every 10 seconds, goes through the real write path and
//! the real stream handlers on dynalite, batched as the template's event
//! source mappings batch them; the registry and rollups functions' writes
//! are counted as DynamoDB reports them (`ReturnConsumedCapacity`). A
//! reading's own units are its item and the index entries it makes, sized
//! by DynamoDB's rules, in each combination of `RoomIndex`, `BoxSearch` and
//! `AllDevicesFeed` (dynalite reports the table's units only). The test
//! renders the table and holds docs/cost.md to it; `COST_TABLE_WRITE=1`
//! writes it there instead.

use aws_sdk_dynamodb::types::AttributeValue;
use integration_tests::{
    client, dynalite, resolve_template, stream_event_for, table_name, template,
    template_conditions, RawItems, INDEX_COMBINATIONS,
};
use serde_yaml_ng::Value as Yaml;
use shared::domain::aggregate::rollup::spans;
use shared::fleet_cost::{self, Device, Fleet, Path};
use shared::model::{DeviceId, Measurement, Reading, RoomId, Span, Timestamp};
use shared::registry::RegistryUpkeep;
use shared::store::dynamodb::size::{item_size, value_size};
use shared::store::format::billing::rollup_size;
use shared::store::format::rollup::Stored;
use shared::store::metering::metered_writes;
use shared::store::ReadingStore;
use shared::store::{DynamoStore, Indexes};
use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

type Item = HashMap<String, AttributeValue>;

/// Write units of an item of `size` bytes (1 per KB, rounded up).
fn wcu(size: usize) -> usize {
    size.div_ceil(1024).max(1)
}

/// An index of the template: name, its key attributes, what it projects.
struct Gsi {
    name: String,
    keys: Vec<String>,
    include: Vec<String>,
}

fn indexes(t: &Yaml) -> Vec<Gsi> {
    t["Resources"]["ReadingsTable"]["Properties"]["GlobalSecondaryIndexes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|g| Gsi {
            name: g["IndexName"].as_str().unwrap().to_owned(),
            keys: g["KeySchema"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|k| k["AttributeName"].as_str().unwrap().to_owned())
                .collect(),
            include: g["Projection"]["NonKeyAttributes"]
                .as_sequence()
                .map(|v| v.iter().map(|a| a.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default(),
        })
        .collect()
}

/// The index entry of an item (its keys, the table's keys and the projected
/// attributes), when the item has every key attribute of the index.
fn entry(item: &Item, gsi: &Gsi) -> Option<usize> {
    if !gsi.keys.iter().all(|k| item.contains_key(k)) {
        return None;
    }
    let mut names: Vec<&str> = vec!["pk", "sk"];
    names.extend(gsi.keys.iter().map(String::as_str));
    names.extend(gsi.include.iter().map(String::as_str));
    names.sort();
    names.dedup();
    Some(
        names
            .iter()
            .filter_map(|n| Some(n.len() + value_size(item.get(*n)?)))
            .sum(),
    )
}

/// What writing one item costs: write units in the table and in each index
/// it enters, and bytes stored (with DynamoDB's 100 bytes per item and entry).
struct Cost {
    attributes: usize,
    table: usize,
    indexes: Vec<(String, usize)>,
    stored: usize,
}

impl Cost {
    fn of(item: &Item, gsis: &[Gsi]) -> Self {
        let size = item_size(item);
        let entries: Vec<(String, usize)> = gsis
            .iter()
            .filter_map(|g| Some((g.name.clone(), entry(item, g)?)))
            .collect();
        Cost {
            attributes: item.len(),
            table: wcu(size),
            indexes: entries.iter().map(|(n, s)| (n.clone(), wcu(*s))).collect(),
            stored: size + 100 + entries.iter().map(|(_, s)| s + 100).sum::<usize>(),
        }
    }

    fn units(&self) -> usize {
        self.table + self.indexes.iter().map(|(_, u)| u).sum::<usize>()
    }
}

fn to_item(v: serde_dynamo::Item) -> Item {
    v.into()
}

const T0: i64 = 1_795_219_200_000; // 2026-11-21T00:00:00Z

/// On-demand prices, us-east-1, November 2024: a million write request
/// units, Lambda requests, API Gateway HTTP API requests.
const WRU_DOLLARS: f64 = fleet_cost::WRITE_UNITS;
const MINUTES_A_YEAR: f64 = 525_600.0;

/// A day and the first 10 minutes of the next: the day closes once.
const MINUTES: i64 = 24 * 60 + 10;

/// A random walk at sensor resolution, the same every run (the blocks'
/// size depends on it: a constant would compress to nothing).
struct Walk(u64);

impl Walk {
    fn step(&mut self, steps: i64) -> i64 {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % (2 * steps as u64 + 1)) as i64 - steps
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Climate,
    Power,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Climate => "room sensor",
            Kind::Power => "meter",
        }
    }
}

/// `n` readings `step_ms` apart from T0.
fn series(kind: Kind, n: i64, step_ms: i64) -> Vec<Reading> {
    let at = |i: i64| Timestamp::from_millis(T0 + i * step_ms).unwrap();
    match kind {
        Kind::Climate => {
            let device = DeviceId::parse("sensor-bedroom").unwrap();
            let room = RoomId::parse("bedroom").unwrap();
            let (mut t, mut h) = (Walk(7), Walk(11));
            let (mut celsius, mut humidity) = (2137, 452);
            (0..n)
                .map(|i| {
                    // Hundredths of a degree and tenths of a percent,
                    // divided last as a sensor's decimal text parses.
                    celsius += t.step(3);
                    humidity += h.step(2);
                    Reading {
                        device_id: device.clone(),
                        timestamp: at(i),
                        measurement: Measurement::climate(
                            room.clone(),
                            celsius as f64 / 100.0,
                            humidity as f64 / 10.0,
                        )
                        .unwrap(),
                    }
                })
                .collect()
        }
        Kind::Power => {
            // Watts in steps of 1 (a house drawing about 800 W), the bought
            // kWh in thousandths counting them up; the sold kWh standing still.
            let device = DeviceId::parse("meter-1").unwrap();
            let mut w = Walk(13);
            let mut watts = 812;
            let mut wh = 0.0;
            (0..n)
                .map(|i| {
                    watts += w.step(40);
                    wh += watts as f64 * step_ms as f64 / 3_600_000.0;
                    Reading {
                        device_id: device.clone(),
                        timestamp: at(i),
                        measurement: Measurement::power(
                            (5_123_456.0 + wh).round() / 1000.0,
                            812.125,
                            watts as f64,
                        )
                        .unwrap(),
                    }
                })
                .collect()
        }
    }
}

async fn store_with(indexes: Indexes, hint: &str) -> DynamoStore {
    let store = DynamoStore::new(client(&dynalite()), table_name(hint)).with_indexes(indexes);
    store.create_table().await.expect("create table");
    store
}

/// What the stream functions wrote for a day of one device's readings.
struct Measured {
    readings: usize,
    /// Write units per reading, as DynamoDB reported them.
    registry: f64,
    rollups: f64,
    /// Invocations per reading of the one device alone.
    registry_calls: f64,
    rollups_calls: f64,
    /// The items left, for sizes: DEVICE, ROOM, an hour, a day, the marker, a presence item.
    items: Vec<(String, Item)>,
}

/// A day of readings through the write path and the two stream handlers,
/// batched as the template batches them: the registry's 1-second window
/// makes each reading its own batch at these rates; the rollups' 5-minute
/// window gathers 5 minutes of readings.
async fn day_of(kind: Kind, per_minute: i64) -> Measured {
    let store = store_with(Indexes::NONE, "cost").await;
    let readings = series(kind, MINUTES * per_minute, 60_000 / per_minute);
    let upkeep = RegistryUpkeep::new(Duration::from_secs(
        shared::config::DEFAULT_REGISTRY_LATEST_SECONDS,
    ));
    let (mut registry, mut rollups, mut rollup_batches) = (0.0, 0.0, 0);
    // As time goes by: 5 minutes of readings written, each through the
    // registry handler as it comes, then the 5 minutes through the rollups.
    for batch in readings.chunks(5 * per_minute as usize) {
        assert!(store.write_readings(batch).await.unwritten.is_empty());
        for r in batch {
            let event = stream_event_for(std::slice::from_ref(r));
            let (response, units) =
                metered_writes(shared::stream::handle_with(&store, &upkeep, event)).await;
            assert!(response.batch_item_failures.is_empty());
            registry += units;
        }
        let event = stream_event_for(batch);
        let (report, units) = metered_writes(Box::pin(shared::stream::rollups::handle_batch(
            &store, &event,
        )))
        .await;
        assert_eq!(report.failed, None);
        rollups += units;
        rollup_batches += 1;
    }
    let n = readings.len() as f64;
    let device = readings[0].device_id.as_str().to_owned();
    let raw = |pk: String, sk: String| {
        let store = &store;
        async move { to_item(store.raw_item(&pk, &sk).await.unwrap()) }
    };
    let mut items = vec![
        (
            "DEVICE item".to_owned(),
            raw("DEVICE".into(), device.clone()).await,
        ),
        (
            "hour item: rollup and block".to_owned(),
            raw(device.clone(), "RH#2026-11-21T00:00:00.000Z".into()).await,
        ),
        (
            "day rollup".to_owned(),
            raw(device.clone(), "RD#2026-11-21T00:00:00.000Z".into()).await,
        ),
        (
            "rollup marker".to_owned(),
            raw(device.clone(), "RSINCE".into()).await,
        ),
    ];
    if kind == Kind::Climate {
        items.push((
            "ROOM item".to_owned(),
            raw("ROOM".into(), "bedroom".into()).await,
        ));
        items.push((
            "presence item".to_owned(),
            raw("ROOM#bedroom".into(), format!("2026-11-21#{device}")).await,
        ));
    }
    Measured {
        readings: readings.len(),
        registry: registry / n,
        rollups: rollups / n,
        registry_calls: 1.0,
        rollups_calls: rollup_batches as f64 / n,
        items,
    }
}

/// A reading's item as the write path stores it with `indexes`.
async fn reading_item(indexes: Indexes, kind: Kind) -> Item {
    let store = store_with(indexes, "cost-item").await;
    let r = &series(kind, 1, 60_000)[0];
    assert!(store
        .write_readings(std::slice::from_ref(r))
        .await
        .unwritten
        .is_empty());
    to_item(
        store
            .raw_item(r.device_id.as_str(), &shared::keys::reading_sk(r.timestamp))
            .await
            .unwrap(),
    )
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Dollars a year for `devices` devices at `per_minute`, each posting each
/// reading alone, as `ingester-local cost` computes them (`fleet_cost`,
/// from the units this test holds it to).
fn dollars(devices: u64, per_minute: i64, kind: Kind) -> f64 {
    Fleet {
        devices,
        every: Duration::from_secs(60 / per_minute as u64),
        device: match kind {
            Kind::Climate => Device::RoomSensor,
            Kind::Power => Device::Meter,
        },
        path: Path::HttpEach,
    }
    .bill()
    .total
}

async fn render() -> String {
    let mut measured = Vec::new();
    for kind in [Kind::Climate, Kind::Power] {
        for per_minute in [1, 6] {
            measured.push((kind, per_minute, day_of(kind, per_minute).await));
        }
    }
    let find = |kind: Kind, per_minute: i64| {
        &measured
            .iter()
            .find(|(k, p, _)| *k == kind && *p == per_minute)
            .unwrap()
            .2
    };

    let mut summary = String::new();
    writeln!(summary, "| room index | box search | all-devices feed | device | reading | registry at 1/min | rollups at 1/min | **write units per reading at 1/min** | registry at 10 s | rollups at 10 s | **write units per reading at 10 s** | $ per device-year at 1/min (writes only) |").unwrap();
    writeln!(summary, "|---|---|---|---|---|---|---|---|---|---|---|---|").unwrap();
    let mut item_rows = String::new();
    writeln!(item_rows, "| room index | box search | all-devices feed | item | attributes | write units: table + indexes | indexes entered | bytes stored |").unwrap();
    writeln!(item_rows, "|---|---|---|---|---|---|---|---|").unwrap();
    let mut default_total = Vec::new();
    for room_time in [false, true] {
        for (box_search, all_devices) in INDEX_COMBINATIONS {
            let ix = Indexes {
                room_time,
                box_search,
                all_devices,
            };
            let t = resolve_template(&template(), &template_conditions(ix)).unwrap();
            let gsis = indexes(&t);
            let flags = format!(
                "{} | {} | {}",
                onoff(room_time),
                onoff(box_search),
                onoff(all_devices)
            );
            for kind in [Kind::Climate, Kind::Power] {
                let item = reading_item(ix, kind).await;
                let c = Cost::of(&item, &gsis);
                let entered: Vec<&str> = c.indexes.iter().map(|(n, _)| n.as_str()).collect();
                writeln!(
                    item_rows,
                    "| {flags} | {} reading | {} | {} + {} | {} | {} |",
                    kind.name(),
                    c.attributes,
                    c.table,
                    c.units() - c.table,
                    if entered.is_empty() {
                        "none".into()
                    } else {
                        entered.join(", ")
                    },
                    c.stored
                )
                .unwrap();
                // Registry and rollup items enter no index, whatever is on.
                for (name, it) in &find(kind, 1).items {
                    let c = Cost::of(it, &gsis);
                    assert!(
                        c.indexes.is_empty(),
                        "{name} enters {:?} with {flags}",
                        c.indexes.iter().map(|(n, _)| n).collect::<Vec<_>>()
                    );
                }
                let reading = c.units() as f64;
                let (a, b) = (find(kind, 1), find(kind, 6));
                let total_1 = reading + a.registry + a.rollups;
                let total_6 = reading + b.registry + b.rollups;
                writeln!(
                    summary,
                    "| {flags} | {} | {reading:.1} | {:.3} | {:.3} | **{total_1:.2}** | {:.3} | {:.3} | **{total_6:.2}** | {:.2} |",
                    kind.name(),
                    a.registry,
                    a.rollups,
                    b.registry,
                    b.rollups,
                    total_1 * MINUTES_A_YEAR * WRU_DOLLARS / 1e6,
                )
                .unwrap();
                if !room_time && !box_search && !all_devices {
                    default_total.push((kind, total_1, total_6));
                }
            }
        }
    }
    // What `ingester-local cost` prices (`fleet_cost`) is what is measured.
    for (kind, total_1, total_6) in &default_total {
        let (minute, ten_seconds) = match kind {
            Kind::Climate => fleet_cost::ITEMS_ROOM_SENSOR,
            Kind::Power => fleet_cost::ITEMS_METER,
        };
        assert_eq!(
            (format!("{total_1:.2}"), format!("{total_6:.2}")),
            (format!("{minute:.2}"), format!("{ten_seconds:.2}")),
            "fleet_cost's units for a {} are not the measured ones",
            kind.name()
        );
    }
    // Issue 25's goal, with the default template at 1 a minute.
    for (kind, total, _) in &default_total {
        let limit = match kind {
            Kind::Climate => 1.5,
            Kind::Power => 1.3,
        };
        assert!(
            *total <= limit,
            "a {} reading costs {total:.3} write units, above {limit}",
            kind.name()
        );
    }

    // The stream functions' items, sized (they enter no index).
    let mut stream_items = String::new();
    writeln!(
        stream_items,
        "| device | item | attributes | write units | bytes stored |"
    )
    .unwrap();
    writeln!(stream_items, "|---|---|---|---|---|").unwrap();
    for kind in [Kind::Climate, Kind::Power] {
        for (name, it) in &find(kind, 1).items {
            let c = Cost::of(it, &[]);
            writeln!(
                stream_items,
                "| {} | {name} | {} | {} | {} |",
                kind.name(),
                c.attributes,
                c.table,
                c.stored
            )
            .unwrap();
        }
    }

    // Blocks: what the hour item adds against the stored rollup it replaced
    // (rewritten once per rollups batch), and the bytes a reading leaves
    // once its raw item has expired.
    let mut blocks = String::new();
    writeln!(blocks, "| device | rate | write units blocks add per reading | bytes stored per reading after the raw window |").unwrap();
    writeln!(blocks, "|---|---|---|---|").unwrap();
    for (kind, per_minute, m) in &measured {
        let get = |n: &str| &m.items.iter().find(|(name, _)| name == n).unwrap().1;
        let hour = get("hour item: rollup and block");
        assert!(hour.contains_key("blk"), "the hour item holds its block");
        let hour_readings = series(*kind, 60 * per_minute, 60_000 / per_minute);
        let before_blocks = rollup_size(
            hour_readings[0].device_id.as_str().len(),
            &Stored::from(&spans(Span::Hour, Default::default(), hour_readings.iter())[0]),
        );
        let per_batch = 5.0 * *per_minute as f64;
        let added = (wcu(item_size(hour)) as f64 - wcu(before_blocks) as f64).max(0.0) / per_batch;
        let per_hour = 60.0 * *per_minute as f64;
        let after_raw = (item_size(hour) + 100) as f64 / per_hour
            + (item_size(get("day rollup")) + 100) as f64 / (24.0 * per_hour);
        assert!(
            added <= 0.25,
            "{kind:?}: blocks add {added} write units a reading"
        );
        assert!(
            after_raw <= 8.0,
            "{kind:?}: {after_raw} bytes a reading after the raw window"
        );
        writeln!(
            blocks,
            "| {} | {} | {added:.2} | {after_raw:.1} |",
            kind.name(),
            rate(*per_minute)
        )
        .unwrap();
    }

    // Requests, and dollars a year with the default template.
    let mut fleet = String::new();
    writeln!(fleet, "| device | rate | write units per reading | Lambda invocations per reading (one device alone) | API Gateway requests per reading | $ a year, 1 device | 100 devices | 10,000 devices |").unwrap();
    writeln!(fleet, "|---|---|---|---|---|---|---|---|").unwrap();
    for (kind, total_1, total_6) in &default_total {
        for (per_minute, total) in [(1, total_1), (6, total_6)] {
            let m = find(*kind, per_minute);
            let calls = 1.0 + m.registry_calls + m.rollups_calls;
            writeln!(
                fleet,
                "| {} | {} | {total:.2} | {calls:.2} | 1 | {:.2} | {:.0} | {:.0} |",
                kind.name(),
                rate(per_minute),
                dollars(1, per_minute, *kind),
                dollars(100, per_minute, *kind),
                dollars(10_000, per_minute, *kind),
            )
            .unwrap();
        }
    }
    let n = measured.iter().map(|(_, _, m)| m.readings).sum::<usize>();
    format!(
        "Write units per reading ({n} readings measured):\n\n{summary}\nWith the default template (every index off):\n\n{fleet}\nBlocks:\n\n{blocks}\nReading items, in each combination:\n\n{item_rows}\nThe stream functions' items (they enter no index in any combination):\n\n{stream_items}"
    )
}

fn rate(per_minute: i64) -> &'static str {
    if per_minute == 1 {
        "1/min"
    } else {
        "every 10 s"
    }
}

/// Holds docs/cost.md's table between `<!-- {marker}:begin -->` and
/// `<!-- {marker}:end -->` to `table`; with `COST_TABLE_WRITE` set, writes
/// it there instead (one writer at a time: both tables live in the file).
fn doc_table_is(marker: &str, table: &str) {
    static DOC: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = DOC
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let (begin, end) = (
        format!("<!-- {marker}:begin -->\n"),
        format!("<!-- {marker}:end -->"),
    );
    let a = doc.find(&begin).unwrap_or_else(|| panic!("no {begin}")) + begin.len();
    let b = doc.find(&end).unwrap_or_else(|| panic!("no {end}"));
    if std::env::var_os("COST_TABLE_WRITE").is_some() {
        std::fs::write(path, format!("{}{table}{}", &doc[..a], &doc[b..])).unwrap();
        return;
    }
    assert_eq!(
        &doc[a..b],
        table,
        "docs/cost.md's {marker} is not what the code computes; COST_TABLE_WRITE=1 rewrites it"
    );
}

#[tokio::test]
async fn the_cost_table_is_what_the_code_writes() {
    doc_table_is("cost-table", &render().await);
}

/// docs/cost.md's fleet table: dollars a year by how readings arrive, for
/// 1 to 100,000 devices, as `ingester-local cost` computes them.
fn fleet_table() -> String {
    let mut out = String::new();
    writeln!(out, "| how readings arrive (`--path`) | device | write units a reading | 1 device | 100 | 10,000 | 100,000 |").unwrap();
    writeln!(out, "|---|---|---|---|---|---|---|").unwrap();
    for path in Path::ALL {
        for (device, name) in [
            (Device::RoomSensor, "room sensor"),
            (Device::Meter, "meter"),
        ] {
            let bill = |devices| {
                Fleet {
                    devices,
                    every: Duration::from_secs(60),
                    device,
                    path,
                }
                .bill()
            };
            let totals: Vec<String> = [1, 100, 10_000, 100_000]
                .map(|n| format!("{:.2}", bill(n).total))
                .to_vec();
            writeln!(
                out,
                "| {} | {name} | {} | {} |",
                path.name(),
                bill(1).write_units_a_reading,
                totals.join(" | ")
            )
            .unwrap();
        }
    }
    out
}

#[test]
fn the_fleet_table_is_what_the_cost_command_computes() {
    doc_table_is("fleet-table", &fleet_table());
    // Issue 78's goals for 10,000 room sensors at one reading a minute.
    let hour = Fleet {
        devices: 10_000,
        every: Duration::from_secs(60),
        device: Device::RoomSensor,
        path: Path::HttpHour,
    }
    .bill();
    assert!(hour.total <= 1_000.0, "{hour:?}");
}
