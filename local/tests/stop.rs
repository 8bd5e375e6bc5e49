//! A stop signal at any moment (issue 39): `serve` on one file, many times
//! over, each time sent SIGTERM (or SIGINT) at a random moment of its
//! startup (opening the file, sealing the closed days the last run left as
//! segments, connecting to an MQTT broker) or of a running ingest. Every
//! run must exit with status 0 and close its store (no write-ahead log is
//! left behind); afterwards every reading that any run acknowledged is there.

use integration_tests::local_server::LocalServer;
use integration_tests::mosquitto::{free_port, Broker};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");
const DEVICES: [&str; 3] = ["meter-1", "meter-2", "sensor-1"];
/// The readings' first time: a few days back, so that what a run writes is
/// in closed days (segments, which the next start seals into blocks).
const FIRST_MS: i64 = 1_790_000_000_000;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ingester-stop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether the process handles (or holds back) SIGINT and SIGTERM yet: the
/// moment `main` has begun. Before it, a signal takes its default action
/// in any program (module docs of `local/src/stop.rs`).
fn signals_handled(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let both = (1u64 << (libc_signal::INT - 1)) | (1u64 << (libc_signal::TERM - 1));
    (mask("SigBlk:") | mask("SigCgt:")) & both == both
}

mod libc_signal {
    pub const INT: u32 = 2;
    pub const TERM: u32 = 15;
}

/// One POST on its own connection; `None` when the server is not there or
/// went away before answering (then the batch is not acknowledged).
fn post(addr: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    write!(
        stream,
        "POST /readings HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).ok()?;
    let status = raw.split_whitespace().nth(1)?.parse().ok()?;
    let text = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Some((status, text.to_owned()))
}

/// A batch of `n` readings of one device at the next free times.
fn batch(device: &str, next_second: &AtomicI64, n: i64) -> (Vec<i64>, String) {
    let first = next_second.fetch_add(n, Ordering::SeqCst);
    let times: Vec<i64> = (first..first + n).map(|s| FIRST_MS + s * 1000).collect();
    let readings: Vec<Value> = times
        .iter()
        .map(|&ms| {
            let ts = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let kwh = 1000.0 + (ms - FIRST_MS) as f64 / 3.6e6;
            json!({"device_id": device, "timestamp": ts, "type": "power",
                   "cumulative_kwh_p": kwh, "current_w": 1000.0})
        })
        .collect();
    (times, Value::Array(readings).to_string())
}

/// The batches acknowledged: each one's device and reading times.
type Acknowledged = Arc<Mutex<Vec<(String, Vec<i64>)>>>;

/// What one run did: how long after it could take a signal it got one,
/// whether it was serving by then, the batches acknowledged.
struct Run {
    delay: Duration,
    served: bool,
    acknowledged: usize,
}

/// Starts `serve` on `db`, posts batches as soon as it serves, sends
/// `signal` `delay` after the process can take it, and asserts a clean exit.
fn run_once(
    db: &Path,
    extra: &[String],
    signal: &str,
    delay: Duration,
    next_second: &Arc<AtomicI64>,
    acknowledged: &Acknowledged,
) -> Run {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(["--addr", "127.0.0.1:0", "--db", db.to_str().unwrap()])
        .args(extra)
        .env("RUST_LOG", "info")
        .env_remove("INGEST_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (addr_tx, addr_rx) = mpsc::channel::<String>();
    let reader = {
        let (stderr, log) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("serving on http://") {
                    let _ = addr_tx.send(line[i + "serving on http://".len()..].trim().to_owned());
                }
                log.lock().unwrap().push(line);
            }
        })
    };
    let done = Arc::new(AtomicBool::new(false));
    let loader = {
        let (done, next_second, acknowledged) =
            (done.clone(), next_second.clone(), acknowledged.clone());
        std::thread::spawn(move || {
            let Ok(addr) = addr_rx.recv() else {
                return (false, 0);
            };
            let mut acked = 0;
            let mut turn = 0;
            while !done.load(Ordering::SeqCst) {
                let device = DEVICES[turn % DEVICES.len()];
                turn += 1;
                let (times, body) = batch(device, &next_second, 20);
                match post(&addr, &body) {
                    Some((200, text)) => {
                        assert_eq!(text, r#"{"written":20}"#);
                        acknowledged
                            .lock()
                            .unwrap()
                            .push((device.to_owned(), times));
                        acked += 1;
                    }
                    // Refused or cut off: the server is stopping.
                    None => break,
                    Some((status, text)) => panic!("a batch got {status}: {text}"),
                }
            }
            (true, acked)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !signals_handled(pid) {
        assert!(Instant::now() < deadline, "the signals were never handled");
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(delay);
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "{signal} {delay:?} after start: no exit in 30 s; log:\n{}",
                log.lock().unwrap().join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    done.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    let (served, acked) = loader.join().unwrap();
    assert!(
        status.success(),
        "{signal} {delay:?} after start: exit {status}; log:\n{}",
        log.lock().unwrap().join("\n")
    );
    // The store was closed: its last connection removes the write-ahead log.
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    assert!(
        !wal.exists(),
        "{signal} {delay:?} after start: {} is left, the store was not closed; log:\n{}",
        wal.display(),
        log.lock().unwrap().join("\n")
    );
    Run {
        delay,
        served,
        acknowledged: acked,
    }
}

/// Every time of `device` that the store holds, read a page at a time.
fn stored_times(server: &LocalServer, device: &str) -> BTreeSet<i64> {
    let mut times = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!(
            "/devices/{device}/readings?from=2026-09-01T00:00:00Z&to=2026-12-01T00:00:00Z&format=columns&limit=10000"
        );
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (status, text) = server.request("GET", &path, None);
        assert_eq!(status, 200, "{text}");
        let page: Value = serde_json::from_str(&text).unwrap();
        let column = page["columns"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c == "timestamp")
            .unwrap();
        for row in page["values"].as_array().unwrap() {
            // Epoch milliseconds in this format.
            times.insert(row[column].as_i64().unwrap());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return times,
        }
    }
}

#[test]
fn a_stop_signal_at_any_moment_exits_0_and_loses_no_acknowledged_reading() {
    let rounds: usize = std::env::var("STOP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = temp_dir("any-moment");
    let db = dir.join("ingester.db");
    let broker_dir = dir.join("broker");
    std::fs::create_dir_all(&broker_dir).unwrap();
    let broker = Broker::start(&broker_dir, free_port());
    let next_second = Arc::new(AtomicI64::new(0));
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let mut runs = Vec::new();
    for round in 0..rounds {
        // SIGTERM as systemd sends it; every fifth a Ctrl-C.
        let signal = if round % 5 == 4 { "-INT" } else { "-TERM" };
        // Every third run subscribes to the broker too.
        let extra: Vec<String> = if round % 3 == 0 {
            vec![
                "--mqtt".into(),
                broker.url(),
                "--mqtt-client-id".into(),
                "stop-test".into(),
            ]
        } else {
            Vec::new()
        };
        // Half within the first 6 ms (the start: opening, sealing,
        // connecting; a few milliseconds in a debug build), half over an
        // ingest.
        let delay = Duration::from_micros(if round % 2 == 0 {
            fastrand::u64(0..6_000)
        } else {
            fastrand::u64(6_000..120_000)
        });
        runs.push(run_once(
            &db,
            &extra,
            signal,
            delay,
            &next_second,
            &acknowledged,
        ));
    }
    // Both kinds of moment were hit: before serving, and during an ingest.
    let before = runs.iter().filter(|r| !r.served).count();
    let during = runs.iter().filter(|r| r.acknowledged > 0).count();
    assert!(
        before >= rounds / 20 && during >= rounds / 4,
        "{before} runs stopped before serving, {during} during an ingest, of {rounds}: the moments are not spread; delays {:?}",
        runs.iter().map(|r| r.delay).collect::<Vec<_>>()
    );
    let server = LocalServer::start(Path::new(BIN), &["--db", db.to_str().unwrap()], "info");
    let acknowledged = acknowledged.lock().unwrap();
    for device in DEVICES {
        let stored = stored_times(&server, device);
        let acked: BTreeSet<i64> = acknowledged
            .iter()
            .filter(|(d, _)| d == device)
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        let lost: Vec<_> = acked.difference(&stored).take(5).collect();
        assert!(
            lost.is_empty(),
            "{device}: {} acknowledged readings lost, e.g. {lost:?}",
            acked.difference(&stored).count()
        );
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
