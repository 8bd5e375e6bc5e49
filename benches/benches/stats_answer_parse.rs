//! What a client pays to parse a year of daily stats as objects (the
//! default `/stats` answer), and what trimming its shape would save: the
//! bound of `versus_victoriametrics`' "as objects" row (issue 44).
//!
//! Each shape is a year of a room sensor's days (two quantities), written
//! as the server writes it, and parsed into a `serde_json::Value`, as the
//! bench's client does; `format=columns` for comparison. The trims are
//! breaking changes, measured only to show how little they would save: the
//! parse goes to the maps and their keys, not the bytes.
//!
//! `cargo bench -p system-benches --bench stats_answer_parse`; under
//! `cargo test` each shape is parsed once.

use serde_json::Value;
use std::fmt::Write;
use std::time::Instant;

/// What a shape keeps of the default answer.
#[derive(Clone, Copy)]
struct Shape {
    name: &'static str,
    /// Decimals of a mean (the server writes up to six).
    mean_decimals: usize,
    /// A bucket's `end` (its start plus the width).
    end: bool,
    /// A field's own count (the bucket's, for a sensor that sends both).
    field_count: bool,
}

const SHAPES: [Shape; 4] = [
    Shape {
        name: "as served (objects)",
        mean_decimals: 6,
        end: true,
        field_count: true,
    },
    Shape {
        name: "without `end`",
        mean_decimals: 6,
        end: false,
        field_count: true,
    },
    Shape {
        name: "without a field's count",
        mean_decimals: 6,
        end: true,
        field_count: false,
    },
    Shape {
        name: "all three trims, means to 3 decimals",
        mean_decimals: 3,
        end: false,
        field_count: false,
    },
];

const DAY_MS: i64 = 86_400_000;
const START_MS: i64 = 1_735_689_600_000; // 2025-01-01

fn iso(ms: i64) -> String {
    shared::model::Timestamp::from_millis(ms)
        .unwrap()
        .to_string()
}

/// A day's (min, mean, max) of each quantity: a random walk's.
fn days() -> Vec<[(f64, f64, f64); 2]> {
    let mut rng = fastrand::Rng::with_seed(44);
    let (mut t, mut h) = (21.0, 45.0);
    (0..365)
        .map(|_| {
            t += rng.f64() - 0.5;
            h += rng.f64() * 2.0 - 1.0;
            [h, t].map(|m| {
                let mean = m + rng.f64() / 3.0;
                let spread = 1.0 + rng.f64() * 3.0;
                (
                    ((mean - spread) * 10.0).round() / 10.0,
                    mean,
                    ((mean + spread) * 10.0).round() / 10.0,
                )
            })
        })
        .collect()
}

fn objects(shape: Shape, days: &[[(f64, f64, f64); 2]]) -> String {
    let mut s = String::from("{\"bucket\":\"1d\",\"buckets\":[");
    for (i, fields) in days.iter().enumerate() {
        let start = START_MS + i as i64 * DAY_MS;
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"count\":1440,");
        if shape.end {
            write!(s, "\"end\":\"{}\",", iso(start + DAY_MS)).unwrap();
        }
        s.push_str("\"fields\":{");
        for (j, (name, (min, mean, max))) in
            ["humidity", "temperature"].iter().zip(fields).enumerate()
        {
            if j > 0 {
                s.push(',');
            }
            write!(s, "\"{name}\":{{").unwrap();
            if shape.field_count {
                s.push_str("\"count\":1440,");
            }
            write!(
                s,
                "\"max\":{max:.1},\"mean\":{mean:.*},\"min\":{min:.1}}}",
                shape.mean_decimals
            )
            .unwrap();
        }
        write!(s, "}},\"start\":\"{}\"}}", iso(start)).unwrap();
    }
    write!(s, "],\"device_id\":\"year-sensor\",\"empty_buckets\":\"omitted\",\"from\":\"{}\",\"items_read\":365,\"source\":\"rollups\",\"to\":\"{}\",\"tz\":\"UTC\",\"read_units\":0.5}}", iso(START_MS), iso(START_MS + 365 * DAY_MS)).unwrap();
    s
}

fn columns(days: &[[(f64, f64, f64); 2]]) -> String {
    let mut s = String::from("{\"bucket\":\"1d\",\"columns\":[\"start\",\"end\",\"count\",\"humidity_count\",\"humidity_min\",\"humidity_max\",\"humidity_mean\",\"temperature_count\",\"temperature_min\",\"temperature_max\",\"temperature_mean\"],\"device_id\":\"year-sensor\",\"values\":[");
    for (i, fields) in days.iter().enumerate() {
        let start = START_MS + i as i64 * DAY_MS;
        if i > 0 {
            s.push(',');
        }
        write!(s, "[{start},{},1440", start + DAY_MS).unwrap();
        for (min, mean, max) in fields {
            write!(s, ",1440,{min:.1},{max:.1},{mean:.6}").unwrap();
        }
        s.push(']');
    }
    s.push_str("],\"read_units\":0.5}");
    s
}

/// The median of `rounds` rounds' mean parse time, in ms.
fn parse_ms(text: &str, rounds: usize, per_round: usize) -> f64 {
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_round {
                std::hint::black_box(serde_json::from_str::<Value>(text).unwrap());
            }
            t.elapsed().as_secs_f64() * 1e3 / per_round as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, per_round) = if bench { (15, 40) } else { (1, 1) };
    let days = days();
    println!("| a year of daily stats, two quantities | bytes | parse | ÷ as served |");
    println!("|---|---|---|---|");
    let mut rows: Vec<(String, String)> = SHAPES
        .iter()
        .map(|s| (s.name.to_string(), objects(*s, &days)))
        .collect();
    rows.push(("`format=columns`".into(), columns(&days)));
    let mut served = None;
    for (name, text) in rows {
        let v: Value = serde_json::from_str(&text).unwrap();
        let buckets = v["buckets"].as_array().or(v["values"].as_array());
        assert_eq!(buckets.map(Vec::len), Some(365), "{name}");
        let ms = parse_ms(&text, rounds, per_round);
        let served = *served.get_or_insert(ms);
        println!(
            "| {name} | {} | {ms:.3} ms | {:.2} |",
            text.len(),
            ms / served
        );
    }
}
