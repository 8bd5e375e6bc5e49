//! The cost table of docs/cost.md, computed from what the code writes: the
//! items as stored on dynalite (readings, the registry's DEVICE and ROOM
//! items, rollups, the rollup marker), sized by DynamoDB's rules, and the
//! indexes of `template.yaml` each one enters in each combination of
//! `BoxSearch` and `AllDevicesFeed`. The test renders the table and holds
//! docs/cost.md to it; `COST_TABLE_WRITE=1` writes it there instead.

use aws_sdk_dynamodb::types::AttributeValue;
use integration_tests::{
    dynalite, fresh_store, resolve_template, stream_event_for, template, RawItems,
    INDEX_COMBINATIONS,
};
use serde_yaml_ng::Value as Yaml;
use shared::domain::aggregate::rollup::{spans, Stored};
use shared::domain::billing::rollup_size;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Span, Timestamp};
use shared::store::dynamodb::size::{item_size, value_size};
use shared::store::{DynamoStore, Indexes, Store};
use std::collections::HashMap;
use std::fmt::Write;

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

/// On-demand price of a million write request units, us-east-1, November 2024.
const WRU_DOLLARS: f64 = 0.625;

/// A random walk at sensor resolution, the same every run (the blocks'
/// size depends on it: a constant would compress to nothing).
fn walk(minute: i64, seed: u64, steps: i64) -> i64 {
    let mut x = seed;
    let mut at = 0;
    for _ in 0..=minute {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at += (x % (2 * steps as u64 + 1)) as i64 - steps;
    }
    at
}

fn climate(minute: i64) -> Reading {
    // Hundredths of a degree and tenths of a percent, drifting.
    // (Divided last, as a sensor's decimal text parses: an exact number of
    // thousandths, which the block codec stores as an integer.)
    let celsius = (2137 + walk(minute, 7, 3)) as f64 / 100.0;
    let humidity = (452 + walk(minute, 11, 2)) as f64 / 10.0;
    Reading {
        device_id: DeviceId::parse("sensor-bedroom").unwrap(),
        timestamp: Timestamp::from_millis(T0 + minute * 60_000).unwrap(),
        measurement: Measurement::climate(RoomId::parse("bedroom").unwrap(), celsius, humidity)
            .unwrap(),
    }
}

fn power(minute: i64) -> Reading {
    // Watts in steps of 1 (a house drawing about 800 W), the meter's bought
    // kWh in thousandths counting them up; the kWh sold standing still.
    let watts = |m: i64| (812 + walk(m, 13, 40)) as f64;
    let wh: f64 = (0..=minute).map(|m| watts(m) / 60.0).sum();
    let kwh = (5_123_456.0 + wh).round() / 1000.0;
    Reading {
        device_id: DeviceId::parse("meter-1").unwrap(),
        timestamp: Timestamp::from_millis(T0 + minute * 60_000).unwrap(),
        measurement: Measurement::power(kwh, 812.125, watts(minute)).unwrap(),
    }
}

/// The items one device leaves after an hour at 1 reading a minute, with the
/// registry and rollups kept as the stream functions keep them.
async fn items(store: &DynamoStore, reading: fn(i64) -> Reading) -> (Item, Item, Item, Item, Item) {
    let readings: Vec<Reading> = (0..60).map(reading).collect();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    let event = stream_event_for(&readings);
    assert!(shared::stream::handle(store, event.clone())
        .await
        .batch_item_failures
        .is_empty());
    assert_eq!(
        shared::stream::rollups::handle_batch(store, &event)
            .await
            .failed,
        None
    );
    let device = readings[0].device_id.as_str().to_owned();
    let raw =
        |pk: String, sk: String| async move { to_item(store.raw_item(&pk, &sk).await.unwrap()) };
    (
        raw(device.clone(), "TS#2026-11-21T00:30:00.000Z".into()).await,
        raw("DEVICE".into(), device.clone()).await,
        raw(device.clone(), "RH#2026-11-21T00:00:00.000Z".into()).await,
        raw(device.clone(), "RD#2026-11-21T00:00:00.000Z".into()).await,
        raw(device, "RSINCE".into()).await,
    )
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

async fn render() -> String {
    let mut out = String::new();
    let per_year = 525_600.0;
    writeln!(out, "| box search | all-devices feed | item | attributes | write units: table + indexes | indexes entered | bytes stored |").unwrap();
    writeln!(out, "|---|---|---|---|---|---|---|").unwrap();
    let mut summary = String::new();
    writeln!(summary, "| box search | all-devices feed | reading | reading | registry | rollups | of which blocks | **write units per reading** | write units per device-year at 1/min | $ a year for them | stored per device-year | bytes stored per reading after the raw window |").unwrap();
    writeln!(summary, "|---|---|---|---|---|---|---|---|---|---|---|---|").unwrap();
    let mut queries = String::new();
    writeln!(queries, "| box search | all-devices feed | query | items read | read units (eventually consistent) |").unwrap();
    writeln!(queries, "|---|---|---|---|---|").unwrap();
    for (box_search, all_devices) in INDEX_COMBINATIONS {
        let t = resolve_template(
            &template(),
            &[
                ("HasToken", false),
                ("HasBoxSearch", box_search),
                ("HasAllDevicesFeed", all_devices),
            ],
        )
        .unwrap();
        let gsis = indexes(&t);
        let store = fresh_store(&dynalite(), "cost")
            .await
            .with_indexes(Indexes {
                box_search,
                all_devices,
            });
        for (kind, reading) in [("climate", climate as fn(i64) -> Reading), ("power", power)] {
            let (r, device, hour, day, marker) = items(&store, reading).await;
            let room = to_item(store.raw_item("ROOM", "bedroom").await.unwrap());
            let mut rows = vec![
                (format!("{kind} reading"), Cost::of(&r, &gsis)),
                (format!("DEVICE item ({kind})"), Cost::of(&device, &gsis)),
                (
                    format!("hour item: rollup and block ({kind})"),
                    Cost::of(&hour, &gsis),
                ),
                (format!("day rollup ({kind})"), Cost::of(&day, &gsis)),
            ];
            if kind == "climate" {
                rows.push(("ROOM item".into(), Cost::of(&room, &gsis)));
                rows.push(("rollup marker".into(), Cost::of(&marker, &gsis)));
            }
            for (name, c) in &rows {
                let entered: Vec<&str> = c.indexes.iter().map(|(n, _)| n.as_str()).collect();
                writeln!(
                    out,
                    "| {} | {} | {name} | {} | {} + {} | {} | {} |",
                    onoff(box_search),
                    onoff(all_devices),
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
            }
            // Per reading at 1 a minute: the reading; the registry function's
            // update of the DEVICE item (and the ROOM item) once per stream
            // batch, and at 1 a minute with a 1-second window every reading is
            // its own batch; the rollups' hour and day every 5-minute batch.
            let reading_units = rows[0].1.units() as f64;
            let registry = rows[1].1.units() as f64
                + if kind == "climate" {
                    rows[4].1.units() as f64
                } else {
                    0.0
                };
            let rollups = (rows[2].1.units() + rows[3].1.units()) as f64 / 5.0;
            // What blocks add: the hour item (its block and entering chain)
            // against the stored rollup it replaced, rewritten as often.
            let readings: Vec<Reading> = (0..60).map(reading).collect();
            let before_blocks = rollup_size(
                readings[0].device_id.as_str().len(),
                &Stored::from(&spans(Span::Hour, None, readings.iter())[0]),
            );
            assert!(hour.contains_key("blk"), "the hour item holds its block");
            let blocks = (rows[2].1.table as f64 - wcu(before_blocks) as f64) / 5.0;
            // Once the raw items are gone: the hour items (with their blocks)
            // and the day items.
            let after_raw = rows[2].1.stored as f64 / 60.0 + rows[3].1.stored as f64 / 1440.0;
            assert!(
                blocks <= 0.25,
                "{kind}: blocks add {blocks} write units a reading"
            );
            assert!(
                after_raw <= 8.0,
                "{kind}: {after_raw} bytes a reading after the raw window"
            );
            let total = reading_units + registry + rollups;
            let stored = rows[0].1.stored as f64
                + (rows[2].1.stored as f64 / 60.0)
                + (rows[3].1.stored as f64 / 1440.0);
            writeln!(
                summary,
                "| {} | {} | {kind} | {reading_units:.1} | {registry:.1} | {rollups:.1} | {blocks:.1} | **{total:.1}** | {:.0} | {:.2} | {:.1} MB | {after_raw:.1} |",
                onoff(box_search),
                onoff(all_devices),
                total * per_year,
                total * per_year * WRU_DOLLARS / 1e6,
                stored * per_year / 1e6
            )
            .unwrap();
            // Reads: 0.5 read units per 4 KB of items a Query reads.
            let read_units = |items: usize, size: usize| (items * size).div_ceil(4096) as f64 * 0.5;
            for (what, n, size) in [
                (
                    format!("a day of a {kind} device's readings"),
                    1440,
                    item_size(&r),
                ),
                (
                    format!("a year of daily {kind} stats from day rollups"),
                    365,
                    item_size(&day),
                ),
                (
                    format!("a year of daily {kind} stats from the readings"),
                    525_600,
                    item_size(&r),
                ),
                (
                    format!(
                        "a year of a {kind} device's readings after the raw window (hour blocks)"
                    ),
                    8760,
                    item_size(&hour),
                ),
            ] {
                writeln!(
                    queries,
                    "| {} | {} | {what} | {n} | {:.1} |",
                    onoff(box_search),
                    onoff(all_devices),
                    read_units(n, size)
                )
                .unwrap();
            }
        }
    }
    format!("{summary}\nPer query (the item sizes above; readings enter no more items when an index is on, but grow by its keys):\n\n{queries}\nItem by item:\n\n{out}")
}

#[tokio::test]
async fn the_cost_table_is_what_the_code_writes() {
    let table = render().await;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let (begin, end) = ("<!-- cost-table:begin -->\n", "<!-- cost-table:end -->");
    let a = doc.find(begin).expect("the table's begin marker") + begin.len();
    let b = doc.find(end).expect("the table's end marker");
    if std::env::var_os("COST_TABLE_WRITE").is_some() {
        std::fs::write(path, format!("{}{table}{}", &doc[..a], &doc[b..])).unwrap();
        return;
    }
    assert_eq!(
        &doc[a..b],
        table,
        "docs/cost.md is not what the code writes; COST_TABLE_WRITE=1 rewrites it"
    );
}
