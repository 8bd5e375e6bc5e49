//! Bytes on disk per reading on each noise model (`common/noise.rs`): ours,
//! VictoriaMetrics' (Debian's `victoria-metrics`) holding the same readings,
//! and the model's entropy, in one run (issue 44).
//!
//! Each model's readings are posted as line protocol in batches of 1000 to
//! a fresh server of ours and a fresh VictoriaMetrics, taking turns batch by
//! batch; then ours stops cleanly (its file and WAL measured) and theirs is
//! flushed, merged and stopped (its folder measured). With `--bench`: a
//! year of each model at a reading a minute or slower, 30 days of the fast
//! sensors (a year of them is 12.6 million readings). Under `cargo test`:
//! two days against the debug server, VictoriaMetrics if installed.
//!
//! `cargo bench -p system-benches --bench noise_models` after `cargo build
//! --release -p ingester-local`. `NOISE_ONLY=N` runs the Nth model alone,
//! `NOISE_KEEP=1` keeps the files to look into.

mod common;

use common::noise::models;
use common::*;

/// Bytes a reading of `samples`' block bodies when each device's readings
/// are cut into blocks of 1, 7 and 30 UTC days.
fn blocks_by_span(samples: &[Sample]) -> [f64; 3] {
    use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
    let mut by_device: std::collections::BTreeMap<&str, Vec<Reading>> = Default::default();
    for s in samples {
        let values = s
            .values
            .iter()
            .map(|(name, v)| (Quantity::parse(name).unwrap(), *v))
            .collect();
        let room = s.room.as_deref().map(|r| RoomId::parse(r).unwrap());
        by_device.entry(&s.device).or_default().push(Reading {
            device_id: DeviceId::parse(&s.device).unwrap(),
            timestamp: Timestamp::from_millis(s.ms).unwrap(),
            measurement: Measurement::new(room, values).unwrap(),
        });
    }
    [1, 7, 30].map(|days| {
        let bytes: usize = by_device
            .values()
            .flat_map(|readings| {
                readings.chunk_by(|a, b| {
                    a.timestamp.millis().div_euclid(days * DAY_MS)
                        == b.timestamp.millis().div_euclid(days * DAY_MS)
                })
            })
            .map(|block| shared::domain::block::encode(block).unwrap().len())
            .sum();
        bytes as f64 / samples.len() as f64
    })
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let now_ms = shared::model::Timestamp::now().millis();
    // Days that closed a day ago: sealed at once on our side.
    let end = now_ms - now_ms.rem_euclid(DAY_MS) - DAY_MS;
    let root = std::env::temp_dir().join(format!("noise-models-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "| model | days | readings | ours B/reading | VictoriaMetrics B/reading | entropy B/reading | ours ÷ VictoriaMetrics | ours ÷ entropy |\n|---|---|---|---|---|---|---|---|"
    );
    // NOISE_ONLY=N runs the Nth model alone; NOISE_KEEP=1 keeps the files.
    let only = std::env::var("NOISE_ONLY")
        .ok()
        .map(|n| n.parse::<usize>().unwrap());
    let keep = std::env::var_os("NOISE_KEEP").is_some();
    let mut spans = Vec::new();
    for (i, model) in models().into_iter().enumerate() {
        if only.is_some_and(|n| n != i) {
            continue;
        }
        // A year of the readings that come every few seconds is millions.
        let days = match (
            full,
            model.name.contains("10 s") || model.name.contains("5-20 s"),
        ) {
            (false, _) => 2,
            (true, true) => 30,
            (true, false) => 365,
        };
        let samples = (model.make)(days, end - days * DAY_MS);
        assert!(!samples.is_empty(), "{}", model.name);
        let dir = root.join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let (server, db) = start_ours(&dir);
        let vm = integration_tests::victoria::Victoria::start(&dir);
        assert!(
            vm.is_some() || !full,
            "victoria-metrics is missing: `apt-get install victoria-metrics` (scripts/bench does)"
        );
        for batch in samples.chunks(1000) {
            let lines = line_body(batch);
            let (status, text) = ours(&server, "POST", "/write?precision=ms", Some(&lines));
            assert_eq!(status, 204, "{text}");
            if let Some(v) = &vm {
                let resp = agent()
                    .post(&format!("{}/write?precision=ms", v.url))
                    .send_string(&lines)
                    .unwrap();
                assert_eq!(resp.status(), 204);
            }
        }
        // Every reading is there before anything is measured.
        let devices: std::collections::BTreeSet<&str> =
            samples.iter().map(|s| s.device.as_str()).collect();
        let counted: u64 = devices
            .iter()
            .map(|d| {
                let stats = ours_get(
                    &server,
                    &format!(
                        "/devices/{d}/stats?from={}&to={}&bucket=1mo",
                        iso(end - days * DAY_MS),
                        iso(end)
                    ),
                );
                stats["buckets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b["count"].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(counted, samples.len() as u64, "{}", model.name);
        let ours_bytes = stop_ours(server, &db);
        let theirs_bytes = vm.map(integration_tests::victoria::Victoria::stop_merged);
        let per = |bytes: u64| bytes as f64 / samples.len() as f64;
        let entropy = model.bits_per_reading / 8.0;
        let theirs = theirs_bytes.map(per);
        println!(
            "| {} | {days} | {} | {:.3} | {} | {entropy:.3} | {} | {:.2} |",
            model.name,
            samples.len(),
            per(ours_bytes),
            theirs.map_or("(not installed)".into(), |t| format!("{t:.3}")),
            theirs.map_or(String::new(), |t| format!("{:.2}", per(ours_bytes) / t)),
            per(ours_bytes) / entropy,
        );
        spans.push((model.name, blocks_by_span(&samples)));
        if !keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    // The codec alone (`domain::block`), each device's readings in blocks
    // of one, seven or thirty days: what a block that holds several days
    // would save of a slow series' headers (docs/embedded-store.md, "Where
    // a slow sensor's bytes go"). No page, key or rollup counted.
    println!(
        "\n| model | block bodies, B/reading: a day a block | 7 days | 30 days |\n|---|---|---|---|"
    );
    for (name, bytes) in spans {
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} |",
            bytes[0], bytes[1], bytes[2]
        );
    }
    if keep {
        println!("(kept: {})", root.display());
    } else {
        let _ = std::fs::remove_dir_all(&root);
    }
}
