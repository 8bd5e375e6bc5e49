//! Batches written as hour blocks (issue 78, docs/batches.md), on dynalite:
//! what an hour sent in one request costs through the real handler, and
//! that every reading route answers alike whether the readings arrived in
//! batches (closed hours written as blocks) or one at a time (items, folded
//! by the stream functions), late and rewritten readings included.

use integration_tests::household::{household, DEVICES};
use integration_tests::routes_alike::{aggregates_alike, all_pages, get, open_app, pages_alike};
use integration_tests::{
    answer, api_event, climate, dynalite, fresh_store, handle, power, stream_event_for,
    through_stream_functions, write_through_stream_functions,
};
use serde_json::{json, Value};
use shared::domain::batch_hours;
use shared::model::{DeviceId, Measurement, Reading, Span, Timestamp, HOUR_MS};
use shared::registry::RegistryCache;
use shared::store::metering::metered_writes;
use shared::store::{DynamoStore, Indexes, Store};
use std::time::Duration;

async fn store(hint: &str, blocks: bool) -> DynamoStore {
    fresh_store(&dynalite(), hint)
        .await
        .with_indexes(Indexes::NONE)
        .with_hour_blocks(blocks)
}

/// A device's reading items (`TS#`) in the table.
async fn reading_items(store: &DynamoStore, device: &str) -> i32 {
    store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("pk = :pk AND begins_with(sk, :ts)")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(device.into()),
        )
        .expression_attribute_values(
            ":ts",
            aws_sdk_dynamodb::types::AttributeValue::S("TS#".into()),
        )
        .select(aws_sdk_dynamodb::types::Select::Count)
        .send()
        .await
        .unwrap()
        .count()
}

/// Six closed hours of a meter and a room sensor at one reading a minute,
/// each hour posted in one request (a hub that sends an hour at a time):
/// at most 0.1 write units a reading in all (blocks, rollups, registry,
/// presence), and no item per reading. Then every reading reads back.
#[tokio::test]
async fn an_hour_sent_in_one_request_costs_at_most_a_tenth_of_a_write_unit_a_reading() {
    let store = store("batch-cost", true).await;
    let app = open_app(store.clone()).await;
    // Yesterday 02:00 to 08:00: closed hours, and no midnight among them,
    // whose day item (a write a device and day) a short run would count
    // two hundred times more than a year does; the figure must not depend
    // on the hour the test runs at.
    let first = Span::Day.start_of(Timestamp::now()).millis() - 22 * HOUR_MS;
    let (mut units, mut readings) = (0.0, 0);
    for hour in 0..6 {
        let mut body = Vec::new();
        for minute in 0..60 {
            let t = first + hour * HOUR_MS + minute * 60_000;
            let ts = Timestamp::from_millis(t).unwrap().to_string();
            let kwh = 1000.0 + (hour * 60 + minute) as f64 * 0.01;
            body.push(power("meter-1", &ts, kwh, 5.0, 600.0));
            let temp = 20.0 + (minute % 7) as f64 / 10.0;
            body.push(climate("sensor-1", "bedroom", &ts, temp, 45.0));
        }
        let body = Value::Array(body).to_string();
        let event = api_event("POST", "/readings", &[], Some(&body), &[]);
        let (response, written) = metered_writes(handle(&app, event)).await;
        let (status, answer) = answer(&response);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["written"], 120, "{answer}");
        units += written;
        readings += 120;
    }
    let per_reading = units / readings as f64;
    println!("write units a reading, an hour a request: {per_reading:.4}");
    assert!(per_reading > 0.0, "nothing metered");
    assert!(per_reading <= 0.1, "{per_reading} write units a reading");
    // What `ingester-local cost` prices this path at is what is measured.
    let priced = shared::fleet_cost::HOUR_BATCHES;
    assert!(
        (per_reading - priced).abs() < 0.005,
        "{per_reading} measured, {priced} priced"
    );
    // No item per reading: the hours are their blocks.
    assert_eq!(reading_items(&store, "meter-1").await, 0);
    assert_eq!(reading_items(&store, "sensor-1").await, 0);
    // Every reading reads back, the registry and the room know them.
    let from = Timestamp::from_millis(first).unwrap().to_string();
    let q = [("from", from.as_str()), ("limit", "1000")];
    assert_eq!(
        all_pages(&app, "/devices/meter-1/readings", &q).await.len(),
        360
    );
    assert_eq!(
        all_pages(&app, "/rooms/bedroom/readings", &q).await.len(),
        360
    );
    let (status, device) = get(&app, "/devices/meter-1", &[]).await;
    assert_eq!(status, 200, "{device}");
    let last = Timestamp::from_millis(first + 6 * HOUR_MS - 60_000)
        .unwrap()
        .to_string();
    assert_eq!(
        device["device"]["latest"]["timestamp"],
        json!(last),
        "{device}"
    );
    let (_, latest) = get(&app, "/devices/sensor-1/latest", &[]).await;
    assert_eq!(latest["reading"]["timestamp"], json!(last), "{latest}");
    let (_, energy) = get(
        &app,
        "/devices/meter-1/energy",
        &[("from", &from), ("bucket", "1h")],
    )
    .await;
    let bought = energy["kwh_bought"].as_f64();
    assert!(
        bought.is_some_and(|kwh| (kwh - 3.59).abs() < 0.011),
        "{energy}"
    );
}

/// The household's readings in hour batches, then late readings (a lone one
/// into a written hour), rewrites of written readings in a later batch, and
/// readings of the open hour; on one table as batches, on the other one at
/// a time through the stream functions.
fn deliveries(seed: u64) -> Vec<Vec<Reading>> {
    let readings = household(seed, 20);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut batches: Vec<Vec<Reading>> = Vec::new();
    for r in &readings {
        let hour = Span::Hour.start_of(r.timestamp);
        match batches.last_mut() {
            Some(b) if Span::Hour.start_of(b[0].timestamp) == hour => b.push(r.clone()),
            _ => batches.push(vec![r.clone()]),
        }
    }
    // Late: a reading held back from an hour, sent alone after it.
    let late_from = rng.usize(0..batches.len() - 1);
    let middle = batches[late_from].len() / 2;
    let late = batches[late_from].remove(middle);
    // Rewrites: some readings of one hour again, with other values.
    let again: Vec<Reading> = batches[rng.usize(0..batches.len())]
        .iter()
        .filter(|r| r.device_id.as_str() == "meter-main")
        .step_by(7)
        .map(|r| {
            let mut r = r.clone();
            r.measurement = Measurement::power(99_999.5, 1.0, 7.0).unwrap();
            r
        })
        .collect();
    // The open hour: a meter's readings up to now.
    let now = Span::Hour.start_of(Timestamp::now()).millis();
    let open: Vec<Reading> = (0..3)
        .map(|i| Reading {
            device_id: DeviceId::parse("meter-main").unwrap(),
            timestamp: Timestamp::from_millis(now + i * 1000).unwrap(),
            measurement: Measurement::power(99_999.9 + i as f64, 1.0, 5.0).unwrap(),
        })
        .collect();
    batches.push(vec![late]);
    batches.push(again);
    batches.push(open);
    batches.retain(|b| !b.is_empty());
    batches
}

/// Writes a batch as the ingest use case does, then runs the stream
/// functions over what it wrote as items, as the table's stream would.
async fn as_batch(store: &DynamoStore, cache: &RegistryCache, batch: &[Reading]) {
    let written = shared::ingest::write(store, cache, batch.to_vec()).await;
    assert!(written.unwritten.is_empty());
    let items: Vec<Reading> = batch_hours::split(batch, Timestamp::now(), Default::default())
        .items
        .into_iter()
        .map(|i| batch[i].clone())
        .collect();
    if !items.is_empty() {
        through_stream_functions(store, &items).await;
    }
}

async fn answers_alike(seed: u64, limit: usize) {
    let batches = deliveries(seed);
    let blocks = store("batch-blocks", true).await;
    let items = store("batch-items", false).await;
    assert!(blocks.capabilities().hour_blocks_from_batches);
    assert!(!items.capabilities().hour_blocks_from_batches);
    let cache = RegistryCache::unloaded(Duration::from_secs(30));
    for batch in &batches {
        as_batch(&blocks, &cache, batch).await;
        write_through_stream_functions(&items, batch).await;
    }
    // Most readings went as blocks.
    let kept = reading_items(&blocks, "meter-main").await;
    assert!(kept < 20, "{kept} meter items on the blocks table");
    let (a, b) = (&open_app(blocks).await, &open_app(items).await);
    let start = Span::Hour.start_of(Timestamp::now()).millis() - 22 * HOUR_MS;
    let at = |m: i64| {
        Timestamp::from_millis(start + m * 60_000)
            .unwrap()
            .to_string()
    };
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xb10c);
    let mut ranges = vec![(at(0), at(23 * 60))];
    for _ in 0..2 {
        let from = rng.i64(0..22 * 60);
        ranges.push((at(from), at(from + rng.i64(1..10 * 60))));
    }
    let limit = limit.to_string();
    for (from, to) in &ranges {
        for order in ["asc", "desc"] {
            let q = [
                ("from", from.as_str()),
                ("to", to.as_str()),
                ("order", order),
                ("limit", limit.as_str()),
            ];
            let mut paths: Vec<String> = DEVICES
                .iter()
                .map(|d| format!("/devices/{d}/readings"))
                .collect();
            paths.extend(["living", "study", "cellar"].map(|r| format!("/rooms/{r}/readings")));
            pages_alike(a, b, &paths, &q).await;
        }
        let aggregates = [
            "/devices/meter-main/stats",
            "/devices/a4:c1:38:0b:5e:7f/stats",
            "/rooms/living/stats",
            "/devices/meter-main/energy",
            "/devices/plug-washer/energy",
            "/devices/water-meter/energy",
        ];
        aggregates_alike(a, b, &aggregates, from, to).await;
    }
    for d in DEVICES {
        let path = format!("/devices/{d}/latest");
        let (x, y) = (get(a, &path, &[]).await, get(b, &path, &[]).await);
        assert_eq!(x.0, 200, "{path}: {}", x.1);
        assert_eq!(x, y, "{path}");
    }
    for path in ["/devices", "/rooms"] {
        let (x, y) = (get(a, path, &[]).await, get(b, path, &[]).await);
        assert_eq!(x.0, 200, "{path}: {}", x.1);
        assert_eq!(x, y, "{path}");
    }
}

#[tokio::test]
async fn answers_are_alike_whether_readings_came_in_batches_or_one_at_a_time() {
    for (seed, limit) in [(1, 1000), (2, 37), (3, 5)] {
        answers_alike(seed, limit).await;
    }
}

/// Two requests with readings of the same closed hours at once (a hub that
/// retries while its first post is still being written, or two hubs): the
/// hour puts are conditional, so the one that loses writes its readings as
/// items instead of over the other's block. Every reading is stored once,
/// and once the stream functions have folded the items, each hour's
/// rollup counts every reading.
#[tokio::test]
async fn two_batches_of_the_same_hours_at_once_lose_no_reading() {
    let store = store("batch-race", true).await;
    let cache = RegistryCache::unloaded(Duration::from_secs(30));
    let first = Span::Hour.start_of(Timestamp::now()).millis() - 6 * HOUR_MS;
    let meter = |minute: i64| Reading {
        device_id: DeviceId::parse("meter-1").unwrap(),
        timestamp: Timestamp::from_millis(first + minute * 60_000).unwrap(),
        measurement: Measurement::power(1000.0 + minute as f64 * 0.01, 0.0, 300.0).unwrap(),
    };
    // Four hours; one request the even minutes, the other the odd ones.
    let (even, odd): (Vec<Reading>, Vec<Reading>) = (0..4 * 60)
        .map(meter)
        .partition(|r| r.timestamp.millis() / 60_000 % 2 == 0);
    let (a, b) = tokio::join!(
        shared::ingest::write(&store, &cache, even.clone()),
        shared::ingest::write(&store, &cache, odd.clone()),
    );
    assert!(a.unwritten.is_empty() && b.unwritten.is_empty());
    let as_items = reading_items(&store, "meter-1").await;
    println!("readings the losing request wrote as items: {as_items}");
    let device = DeviceId::parse("meter-1").unwrap();
    let stored = integration_tests::every_reading(&store, &device).await;
    assert_eq!(stored.len(), 240, "every reading, once");
    // The stream functions fold what went as items into the blocks.
    let all: Vec<Reading> = even.iter().chain(&odd).cloned().collect();
    let event = stream_event_for(&all);
    let report = shared::stream::rollups::handle_batch(&store, &event).await;
    assert_eq!(report.failed, None);
    let app = open_app(store).await;
    let from = Timestamp::from_millis(first).unwrap().to_string();
    let to = Timestamp::from_millis(first + 4 * HOUR_MS)
        .unwrap()
        .to_string();
    let q = [
        ("from", from.as_str()),
        ("to", to.as_str()),
        ("bucket", "1h"),
    ];
    let (status, stats) = get(&app, "/devices/meter-1/stats", &q).await;
    assert_eq!(status, 200, "{stats}");
    let counts: Vec<i64> = stats["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_i64().unwrap_or(-1))
        .collect();
    assert_eq!(counts, vec![60; 4], "{stats}");
}

/// What reading the raw window with the hour blocks beside the items costs
/// (docs/batches.md): a day of a meter at one reading a minute, written as
/// items and folded into its hour blocks by the stream functions, read
/// whole with `BatchBlocks` on and off. The blocks add their 24 small items
/// to 1440 readings' items: at most a tenth more read units.
#[tokio::test]
async fn reading_the_raw_window_with_blocks_costs_at_most_a_tenth_more() {
    let table = store("batch-reads", false).await;
    let first = Span::Hour.start_of(Timestamp::now()).millis() - 25 * HOUR_MS;
    let day: Vec<Reading> = (0..1440)
        .map(|m| Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: Timestamp::from_millis(first + m * 60_000).unwrap(),
            measurement: Measurement::power(1000.0 + m as f64 * 0.01, 2.0, 450.0).unwrap(),
        })
        .collect();
    for hour in day.chunks(60) {
        write_through_stream_functions(&table, hour).await;
    }
    let from = Timestamp::from_millis(first).unwrap().to_string();
    let to = Timestamp::from_millis(first + 24 * HOUR_MS)
        .unwrap()
        .to_string();
    let mut units = Vec::new();
    for blocks in [false, true] {
        let app = open_app(table.clone().with_hour_blocks(blocks)).await;
        let q = [
            ("from", from.as_str()),
            ("to", to.as_str()),
            ("limit", "1000"),
        ];
        let (mut total, mut read, mut cursor) = (0.0, 0, None::<String>);
        loop {
            let mut q = q.to_vec();
            if let Some(c) = &cursor {
                q.push(("cursor", c));
            }
            let event = api_event("GET", "/devices/meter-1/readings", &q, None, &[]);
            let (status, body) = answer(&handle(&app, event).await);
            assert_eq!(status, 200, "{body}");
            total += body["read_units"].as_f64().unwrap();
            read += body["readings"].as_array().unwrap().len();
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(read, 1440, "every reading, once, blocks {blocks}");
        units.push(total);
    }
    println!("read units for a day, items alone and with blocks: {units:?}");
    assert!(units[1] > units[0], "the blocks were not read: {units:?}");
    assert!(units[1] <= 1.1 * units[0], "{units:?}");
}
