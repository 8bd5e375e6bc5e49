//! The embedded store through the local server's HTTP API, against a plain
//! SQLite insert loop on the same machine in the same run.
//!
//! - Ingest: readings per second accepted in 1000-reading POSTs to
//!   `ingester-local serve --db FILE`, against rows per second of a loop that
//!   inserts the same readings' JSON into a `(pk, sk, item)` table, 1000 rows per
//!   transaction, with the same pragmas (WAL, synchronous=NORMAL).
//! - Reads: p50/p99 of reading one device's 10,000-reading range through the API
//!   (10 pages of 1000, following cursors), and of one 1000-reading page.
//!
//! `cargo bench -p system-benches --bench embedded_store` (release; build the
//! server first: `cargo build --release -p ingester-local`, as `scripts/bench`
//! does). Under `cargo test` it runs once, small, against the debug server.

use integration_tests::local_server::LocalServer;
use serde_json::{json, Value};
use shared::store::ReadingStore;
use std::path::Path;
use std::time::Instant;

const BASE_MS: i64 = 1_790_000_000_000; // 2026-09-21, inside the accepted window

fn timestamp(ms: i64) -> String {
    shared::model::Timestamp::from_millis(ms)
        .unwrap()
        .to_string()
}

/// Batch `b`: 1000 power readings from 10 meters, 10 s apart per meter; keys never repeat.
fn batch(b: usize) -> Vec<Value> {
    (0..1000)
        .map(|i| {
            let step = (b * 100 + i / 10) as i64;
            json!({"device_id": format!("meter-{}", i % 10), "type": "power",
                   "timestamp": timestamp(BASE_MS + step * 10_000),
                   "cumulative_kwh_p": 1000.0 + step as f64 * 0.01, "cumulative_kwh_n": 0.5,
                   "current_w": 350.0 + (i % 50) as f64})
        })
        .collect()
}

/// The baseline: the same readings as rows, inserted in a loop, 1000 per transaction.
fn sqlite_loop(db: &Path, batches: &[Vec<Value>]) -> f64 {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE items (pk TEXT NOT NULL, sk TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (pk, sk))",
    )
    .unwrap();
    let started = Instant::now();
    for batch in batches {
        let tx = conn.transaction().unwrap();
        {
            let mut insert = tx
                .prepare_cached("INSERT OR REPLACE INTO items (pk, sk, item) VALUES (?1, ?2, ?3)")
                .unwrap();
            for r in batch {
                insert
                    .execute(rusqlite::params![
                        r["device_id"].as_str().unwrap(),
                        format!("TS#{}", r["timestamp"].as_str().unwrap()),
                        r.to_string()
                    ])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    (batches.len() * 1000) as f64 / started.elapsed().as_secs_f64()
}

/// The embedded store's own write path, without HTTP, parsing or the server
/// (to tell the store's share of the cost from the rest).
fn store_direct(db: &Path, batches: &[Vec<Value>]) -> f64 {
    let readings: Vec<Vec<shared::model::Reading>> = batches
        .iter()
        .map(|b| {
            b.iter()
                .map(|v| {
                    shared::model::Reading::from_json(v, shared::model::Timestamp::now(), |_| None)
                        .unwrap()
                })
                .collect()
        })
        .collect();
    let store = shared::store::SqliteStore::open(db).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let started = Instant::now();
    for batch in &readings {
        assert!(rt
            .block_on(store.write_readings(batch))
            .unwritten
            .is_empty());
    }
    (batches.len() * 1000) as f64 / started.elapsed().as_secs_f64()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (batches, reads) = if full { (100, 50) } else { (11, 2) };
    let dir = std::env::temp_dir().join(format!("embedded-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bodies: Vec<Vec<Value>> = (0..batches).map(batch).collect();
    let texts: Vec<String> = bodies
        .iter()
        .map(|b| serde_json::to_string(b).unwrap())
        .collect();

    let baseline = sqlite_loop(&dir.join("baseline.db"), &bodies);
    let direct = store_direct(&dir.join("direct.db"), &bodies);

    let db = dir.join("served.db");
    let server = LocalServer::start(
        &integration_tests::local_server::built_binary(),
        &["--db", db.to_str().unwrap()],
        "warn,ingester_local=info",
    );
    let started = Instant::now();
    for text in &texts {
        let (status, body) = server.request("POST", "/readings", Some(text));
        assert_eq!(status, 200, "{body:.300}");
    }
    let ours = (batches * 1000) as f64 / started.elapsed().as_secs_f64();

    // meter-0 has batches * 100 readings, 10 s apart; read its first 10,000 (fewer in the smoke run).
    let wanted = (batches * 100).min(10_000);
    let from = timestamp(BASE_MS);
    let to = timestamp(BASE_MS + wanted as i64 * 10_000);
    let (mut whole, mut pages) = (Vec::new(), Vec::new());
    for _ in 0..reads {
        let started = Instant::now();
        let (mut got, mut cursor) = (0, None::<String>);
        loop {
            let mut path = format!("/devices/meter-0/readings?from={from}&to={to}&limit=1000");
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let page_started = Instant::now();
            let (status, body) = server.request("GET", &path, None);
            pages.push(page_started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, 200, "{body:.300}");
            let body: Value = serde_json::from_str(&body).unwrap();
            got += body["readings"].as_array().unwrap().len();
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(got, wanted, "the range holds every reading of meter-0");
        whole.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    whole.sort_by(|a, b| a.partial_cmp(b).unwrap());
    pages.sort_by(|a, b| a.partial_cmp(b).unwrap());

    println!("embedded store, {batches} POSTs of 1000 readings to a file db:");
    println!("| | readings/s | ÷ plain SQLite loop |");
    println!("|---|---|---|");
    println!("| plain SQLite insert loop (baseline) | {baseline:.0} | 1.00 |");
    println!(
        "| SqliteStore::write_readings, in process | {direct:.0} | {:.2} |",
        direct / baseline
    );
    println!(
        "| ingester-local over HTTP | {ours:.0} | {:.2} (goal ≥ 0.50) |",
        ours / baseline
    );
    println!(
        "range of {wanted} readings of one device, {reads} reads: whole range p50 {:.1} ms, p99 {:.1} ms; one 1000-reading page p50 {:.1} ms, p99 {:.1} ms",
        percentile(&whole, 0.5),
        percentile(&whole, 0.99),
        percentile(&pages, 0.5),
        percentile(&pages, 0.99)
    );
}
