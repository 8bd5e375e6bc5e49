//! MQTT into the embedded store (issue 26): messages a second through
//! Debian's mosquitto into `ingester-local serve --mqtt`, one reading a
//! message and 100 a message, against `mosquitto_pub`'s own rate to a topic
//! nobody subscribes to, in the same run (the broker and the publisher are
//! the baseline: we cannot be faster than they deliver).
//!
//! `cargo bench -p system-benches --bench mqtt` after `cargo build --release
//! -p ingester-local`; under `cargo test` it runs once, small, as a smoke test.

use integration_tests::local_server::{built_binary, LocalServer};
use integration_tests::mosquitto::{free_port, Broker};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

fn stored(server: &LocalServer) -> u64 {
    let (_, text) = server.request("GET", "/health", None);
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    v["checks"][0]["subscription"]["stored"]
        .as_u64()
        .unwrap_or(0)
}

fn until_stored(server: &LocalServer, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while stored(server) < n {
        assert!(
            Instant::now() < deadline,
            "stored {} of {n}",
            stored(server)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n: i64 = if full { 20_000 } else { 200 };
    let dir = std::env::temp_dir().join(format!("bench-mqtt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir, free_port());
    let db = dir.join("ours.db");
    let server = LocalServer::start(
        &built_binary(),
        &["--db", db.to_str().unwrap(), "--mqtt", &broker.url()],
        "warn,ingester_local=info",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, text) = server.request("GET", "/health", None);
        if text.contains("\"connected\":true") {
            break;
        }
        assert!(Instant::now() < deadline, "never connected: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let now = shared::model::Timestamp::now().millis();
    let one: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"timestamp":{},"current_w":{i}}}"#,
                now - (n - i) * 1000
            )
        })
        .collect();
    let per = 100;
    let batches: Vec<String> = (0..n / per)
        .map(|b| {
            let rs: Vec<String> = (0..per)
                .map(|i| {
                    let k = b * per + i;
                    format!(
                        r#"{{"timestamp":{},"current_w":{k}}}"#,
                        now - (n - k) * 1000
                    )
                })
                .collect();
            format!("[{}]", rs.join(","))
        })
        .collect();

    // Taking turns: the baseline, then ours, twice.
    for round in 1..=2 {
        let started = Instant::now();
        broker.publish_lines("bench/nobody", &one);
        let baseline = started.elapsed();

        let before = stored(&server);
        let started = Instant::now();
        broker.publish_lines(&format!("readings/single-{round}"), &one);
        until_stored(&server, before + n as u64);
        let single = started.elapsed();

        let before = stored(&server);
        let started = Instant::now();
        broker.publish_lines(&format!("readings/batch-{round}"), &batches);
        until_stored(&server, before + batches.len() as u64);
        let batched = started.elapsed();

        let rate = |count: i64, d: Duration| count as f64 / d.as_secs_f64();
        println!(
            "round {round}: mosquitto_pub alone {:.0} messages/s; ours, one reading a message {:.0} messages/s ({:.2}x of the baseline); \
             ours, {per} readings a message {:.0} messages/s = {:.0} readings/s",
            rate(n, baseline),
            rate(n, single),
            rate(n, single) / rate(n, baseline),
            rate(n / per, batched),
            rate(n, batched),
        );
    }
    let mut server = server;
    let _ = Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status();
    let _ = server.child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
