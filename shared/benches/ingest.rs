//! CPU per reading in ingest: parse + validate a `POST /readings` body and build
//! the DynamoDB items, for batches of 1, 100 and 1000, against the baseline of
//! `serde_json` parsing the same body into a `serde_json::Value`, in the same run.
//! The same readings as line protocol go through `ingest::line_protocol` against
//! the same baseline. Run: `cargo bench -p shared --bench ingest`; CI runs it once as a test.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shared::model::Timestamp;
use shared::store::dynamodb::item::ReadingItem;
use std::hint::black_box;

fn body(n: usize) -> Vec<u8> {
    let readings: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let ts = Timestamp::from_millis(1_795_219_200_000 + i as i64 * 60_000).unwrap().to_string();
            if i % 2 == 0 {
                serde_json::json!({"device_id": "meter-1", "timestamp": ts, "type": "power",
                    "cumulative_kwh_p": 5210.125 + i as f64 * 0.01, "cumulative_kwh_n": 812.5, "current_w": 350.0 + i as f64})
            } else {
                serde_json::json!({"device_id": "sensor-bedroom", "timestamp": ts, "type": "climate",
                    "room": "bedroom", "temperature": 21.25, "humidity": 45.5})
            }
        })
        .collect();
    serde_json::to_vec(&readings).unwrap()
}

/// The same readings as `body(n)`, as a line-protocol body (nanoseconds).
fn line_body(n: usize) -> String {
    (0..n)
        .map(|i| {
            let ns = (1_795_219_200_000 + i as i64 * 60_000) * 1_000_000;
            if i % 2 == 0 {
                format!(
                    "power,device=meter-1 cumulative_kwh_p={},cumulative_kwh_n=812.5,current_w={} {ns}\n",
                    5210.125 + i as f64 * 0.01,
                    350.0 + i as f64
                )
            } else {
                format!("climate,device=sensor-bedroom,room=bedroom temperature=21.25,humidity=45.5 {ns}\n")
            }
        })
        .collect()
}

/// What the DynamoDB adapter does for each reading before BatchWriteItem.
fn items(readings: &[shared::model::Reading]) -> Vec<impl Sized> {
    readings
        .iter()
        .map(|r| {
            shared::store::dynamodb::reading_item(
                r,
                &shared::store::Expiry::NEVER,
                shared::keys::DEFAULT_SHARDS,
                shared::store::Indexes::ALL,
            )
        })
        .collect()
}

fn ingest_cpu(c: &mut Criterion) {
    let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
    let registry = shared::registry::KnownRooms::default();
    let mut group = c.benchmark_group("ingest_cpu");
    for n in [1usize, 100, 1000] {
        let body = body(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(
            BenchmarkId::new("baseline_serde_json_value", n),
            &body,
            |b, body| {
                b.iter(|| {
                    black_box(serde_json::from_slice::<serde_json::Value>(black_box(body)).unwrap())
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("parse_validate", n), &body, |b, body| {
            b.iter(|| {
                black_box(
                    shared::ingest::json::parse_batch(black_box(body), now, &registry).unwrap(),
                )
            })
        });
        group.bench_with_input(
            BenchmarkId::new("parse_validate_build_items_via_serde_dynamo", n),
            &body,
            |b, body| {
                b.iter(|| {
                    let readings =
                        shared::ingest::json::parse_batch(black_box(body), now, &registry).unwrap();
                    let items: Vec<
                        std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
                    > = readings
                        .iter()
                        .map(|r| serde_dynamo::to_item(ReadingItem::from_reading(r)).unwrap())
                        .collect();
                    black_box(items)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("parse_validate_build_items", n),
            &body,
            |b, body| {
                b.iter(|| {
                    let readings =
                        shared::ingest::json::parse_batch(black_box(body), now, &registry).unwrap();
                    // What the DynamoDB adapter does for each reading before BatchWriteItem.
                    black_box(items(&readings))
                })
            },
        );
        let lines = line_body(n);
        // The part both routes share: building the items of parsed readings.
        let parsed = shared::ingest::json::parse_batch(&body, now, &registry).unwrap();
        group.bench_with_input(
            BenchmarkId::new("build_items_only", n),
            &parsed,
            |b, parsed| b.iter(|| black_box(items(black_box(parsed)))),
        );
        // Lines with a quoted string field (as Home Assistant writes) are not
        // plain: the crate's parser reads them.
        let quoted: String = lines
            .lines()
            .map(|l| {
                let (head, ts) = l.rsplit_once(' ').unwrap();
                format!("{head},friendly_name_str=\"Meter\" {ts}\n")
            })
            .collect();
        // Every reading of a line-protocol body, as `/write` parses it.
        let parse = |lines: &str| {
            let parsed = shared::ingest::line_protocol::parse(
                black_box(lines),
                shared::ingest::line_protocol::Precision::Nanoseconds,
                now,
                |_| None,
            )
            .unwrap();
            assert_eq!(parsed.readings.len(), n);
            parsed
        };
        // Line protocol alone: what `/write` spends before the store.
        group.bench_with_input(
            BenchmarkId::new("line_protocol_parse_validate", n),
            &lines,
            |b, lines| b.iter(|| black_box(parse(lines))),
        );
        for (name, body) in [
            ("line_protocol_parse_validate_build_items", &lines),
            ("line_protocol_quoted_parse_validate_build_items", &quoted),
        ] {
            group.bench_with_input(BenchmarkId::new(name, n), body, |b, lines| {
                b.iter(|| black_box(items(&parse(lines).readings)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, ingest_cpu);
criterion_main!(benches);
