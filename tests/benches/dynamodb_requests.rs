//! Requests to DynamoDB per 1000 readings, counted against moto through a
//! pass-through proxy, and the wall-time ratio of our batched, concurrent write
//! against a naive one-PutItem-per-reading loop on the same server, same run.
//! `cargo bench -p integration-tests --bench dynamodb_requests` (needs MOTO_ENDPOINT,
//! as `scripts/test` sets it); under `cargo test` it runs once, small, as a smoke test.

use integration_tests::fault_proxy::{Fault, FaultProxy};
use integration_tests::{client, moto, table_name};
use shared::model::{DeviceId, Measurement, Reading, Timestamp};
use shared::store::DynamoStore;
use shared::store::ReadingStore;
use std::time::Instant;

fn readings(n: usize, offset: i64) -> Vec<Reading> {
    (0..n)
        .map(|i| Reading {
            device_id: DeviceId::parse(&format!("meter-{}", i % 10)).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + (offset + i as i64) * 60_000)
                .unwrap(),
            measurement: Measurement::power(1000.0 + i as f64, 0.0, 300.0).unwrap(),
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, reps) = if full { (1000, 5) } else { (100, 1) };
    let table = table_name("bench-requests");
    DynamoStore::new(client(&moto()), &table)
        .create_table()
        .await
        .unwrap();
    let proxy = FaultProxy::start(&moto(), Fault::HoldBack(|_| false)).await;
    let ours = DynamoStore::new(client(&proxy.url), &table);
    let naive = client(&moto());

    let (mut ours_total, mut naive_total) = (0.0, 0.0);
    for rep in 0..reps {
        let batch = readings(n, (rep * 2 * n) as i64);
        let before = proxy.seen.lock().unwrap().batch_calls;
        let started = Instant::now();
        let report = ours.write_readings(&batch).await;
        ours_total += started.elapsed().as_secs_f64();
        assert!(report.unwritten.is_empty());
        let calls = proxy.seen.lock().unwrap().batch_calls - before;
        assert!(
            calls <= n.div_ceil(25),
            "{calls} BatchWriteItem calls for {n} readings"
        );
        if rep == 0 {
            println!(
                "requests per {n} readings: {calls} BatchWriteItem (goal: at most {})",
                n.div_ceil(25)
            );
        }

        let other = readings(n, (rep * 2 * n + n) as i64);
        let started = Instant::now();
        for r in &other {
            let item = shared::store::dynamodb::reading_item(
                r,
                &shared::store::Expiry::NEVER,
                shared::keys::DEFAULT_SHARDS,
                shared::store::Indexes::ALL,
            );
            naive
                .put_item()
                .table_name(&table)
                .set_item(Some(item))
                .send()
                .await
                .unwrap();
        }
        naive_total += started.elapsed().as_secs_f64();
    }
    // Registry writes for one stream batch of 100 records from 10 devices in 3 rooms.
    let records: Vec<Reading> = (0..100)
        .map(|i| Reading {
            device_id: DeviceId::parse(&format!("sensor-{}", i % 10)).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + i as i64 * 60_000).unwrap(),
            measurement: Measurement::climate(
                shared::model::RoomId::parse(&format!("room-{}", (i % 10) % 3)).unwrap(),
                20.0,
                50.0,
            )
            .unwrap(),
        })
        .collect();
    let before = proxy
        .seen
        .lock()
        .unwrap()
        .calls
        .get("UpdateItem")
        .copied()
        .unwrap_or(0);
    let response =
        shared::stream::handle(&ours, integration_tests::stream_event_for(&records)).await;
    assert!(response.batch_item_failures.is_empty());
    let writes = proxy
        .seen
        .lock()
        .unwrap()
        .calls
        .get("UpdateItem")
        .copied()
        .unwrap_or(0)
        - before;
    assert!(writes <= 13, "{writes} registry writes");
    println!("registry writes for 100 stream records (10 devices, 3 rooms): {writes} UpdateItem (goal: at most 13; naive: 200)");
    println!(
        "write {n} readings x {reps}: ours {:.1} ms, naive PutItem loop {:.1} ms (mean); naive / ours = {:.1}x",
        ours_total * 1000.0 / reps as f64,
        naive_total * 1000.0 / reps as f64,
        naive_total / ours_total
    );
}
