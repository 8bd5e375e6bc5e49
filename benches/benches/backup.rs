//! A backup of the embedded store while it takes readings (issue 41),
//! against copying the same file with `cp` and against `vmbackup` of
//! VictoriaMetrics holding the same readings, in the same run:
//!
//! - the store: a year of a meter and three room sensors at one reading a
//!   minute (2,102,400 readings), posted to `ingester-local serve` as line
//!   protocol in batches of 1000;
//! - then a steady ingest of four other devices (batches of 1000 lines, one
//!   writer), its rate measured over five seconds before the backup and over
//!   the backup's whole run (`ingester-local backup`, a separate process, as
//!   a user or the schedule runs it);
//! - `cp` of the same file, after the backup (the page cache warm for both);
//! - VictoriaMetrics given the same year on `/write`, flushed, then
//!   `vmbackup` to a local folder (its own snapshot, as its docs say).
//!
//! `cargo bench -p system-benches --bench backup` after `cargo build
//! --release -p ingester-local` (`scripts/bench` does both). Under `cargo
//! test` it runs two days against the debug server, VictoriaMetrics if
//! installed.

mod common;

use common::*;
use integration_tests::local_server::{built_binary, LocalServer};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn post_all(server: &LocalServer, samples: &[Sample]) {
    for batch in samples.chunks(1000) {
        let (status, text) = ours(
            server,
            "POST",
            "/write?precision=ms",
            Some(&line_body(batch)),
        );
        assert_eq!(status, 204, "{text}");
    }
}

/// Batches of 1000 readings of four devices at the present, one after the
/// other, until told to stop; counts the readings acknowledged.
fn steady_writer(server: &LocalServer, count: &AtomicU64, stop: &AtomicBool) {
    let mut ms = shared::model::Timestamp::now().millis() - 3_600_000;
    while !stop.load(Ordering::Relaxed) {
        let batch: Vec<Sample> = (0..250)
            .flat_map(|i| {
                let at = ms + i * 1000;
                (5..9).map(move |d| climate(&format!("live-{d}"), "lab", at, i as f64, d as f64))
            })
            .collect();
        ms += 250 * 1000;
        let (status, text) = ours(
            server,
            "POST",
            "/write?precision=ms",
            Some(&line_body(&batch)),
        );
        assert_eq!(status, 204, "{text}");
        count.fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let days = if full { 365 } else { 2 };
    let dir = std::env::temp_dir().join(format!("backup-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let now_ms = shared::model::Timestamp::now().millis();
    let end = now_ms - now_ms.rem_euclid(DAY_MS) - 2 * DAY_MS;
    let samples = household(days, end - days * DAY_MS);
    let db = dir.join("ingester.db");
    let server = LocalServer::start(
        &built_binary(),
        &["--db", db.to_str().unwrap(), "--open-reads"],
        "info",
    );
    post_all(&server, &samples);

    let count = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (before, during, backup_secs, out, copy) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| steady_writer(&server, &count, &stop));
        std::thread::sleep(Duration::from_secs(1));
        let rate = |secs: f64, from: u64| (count.load(Ordering::Relaxed) - from) as f64 / secs;
        let (t, c) = (Instant::now(), count.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_secs(5));
        let before = rate(t.elapsed().as_secs_f64(), c);
        let copy = dir.join("backup.db");
        let (t, c) = (Instant::now(), count.load(Ordering::Relaxed));
        let out = Command::new(built_binary())
            .args(["backup", "--db"])
            .arg(&db)
            .arg("--to")
            .arg(&copy)
            .output()
            .unwrap();
        let backup_secs = t.elapsed().as_secs_f64();
        let during = rate(backup_secs, c);
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        (before, during, backup_secs, out, copy)
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(copy.exists());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = std::fs::metadata(&db).unwrap().len();
    let t = Instant::now();
    assert!(Command::new("cp")
        .arg(&db)
        .arg(dir.join("cp.db"))
        .status()
        .unwrap()
        .success());
    let cp_secs = t.elapsed().as_secs_f64();

    println!(
        "| backup during ingest: {days} days of 4 devices, {} readings; the file {:.1} MB | figure |\n|---|---|",
        samples.len(),
        bytes as f64 / 1e6
    );
    println!("| ingest before the backup | {before:.0} readings/s |");
    println!(
        "| ingest during the backup | {during:.0} readings/s ({:.2} of before; the bound is ≥ 0.5) |",
        during / before
    );
    println!(
        "| `ingester-local backup` (a checked, synced copy of {} readings, {:.1} MB) | {backup_secs:.2} s |",
        report["readings"],
        report["bytes"].as_f64().unwrap_or(0.0) / 1e6
    );
    println!(
        "| of which: copy (`VACUUM INTO`), check (integrity, count), sync | {:.2} s, {:.2} s, {:.2} s |",
        report["copy_seconds"].as_f64().unwrap_or(0.0),
        report["check_seconds"].as_f64().unwrap_or(0.0),
        report["sync_seconds"].as_f64().unwrap_or(0.0)
    );
    println!(
        "| `cp` of the same file | {cp_secs:.2} s (backup ÷ cp {:.2}; the bound is ≤ 3) |",
        backup_secs / cp_secs
    );
    drop(server);

    match (
        integration_tests::victoria::Victoria::start(&dir),
        std::path::Path::new("/usr/bin/vmbackup").exists(),
    ) {
        (Some(vm), true) => {
            for batch in samples.chunks(10_000) {
                let status = agent()
                    .post(&format!("{}/write?precision=ms", vm.url))
                    .send_string(&line_body(batch))
                    .unwrap()
                    .status();
                assert_eq!(status, 204);
            }
            agent()
                .get(&format!("{}/internal/force_flush", vm.url))
                .call()
                .unwrap();
            let t = Instant::now();
            let out = Command::new("/usr/bin/vmbackup")
                .arg(format!("-storageDataPath={}", vm.dir.display()))
                .arg(format!("-snapshot.createURL={}/snapshot/create", vm.url))
                .arg(format!("-dst=fs://{}", dir.join("vmbackup").display()))
                .arg("-loggerLevel=ERROR")
                .output()
                .unwrap();
            let vm_secs = t.elapsed().as_secs_f64();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            println!(
                "| `vmbackup` of VictoriaMetrics holding the same readings ({:.1} MB backed up) | {vm_secs:.2} s |",
                dir_size(&dir.join("vmbackup")) as f64 / 1e6
            );
        }
        _ => {
            assert!(!full, "victoria-metrics and vmbackup are missing: `apt-get install victoria-metrics` (scripts/bench does)");
            println!("(victoria-metrics is not installed: no vmbackup figure)");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
