//! The `ingester-local` binary as a user runs it: `serve` over real HTTP on
//! 127.0.0.1 (embedded store, and a DynamoDB endpoint with its stream), a
//! restart that keeps the data, Ctrl-C, and `replay`.

use integration_tests::local_server::LocalServer;
use integration_tests::{climate, moto, power, table_name};
use serde_json::{json, Value};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

/// The server under test, with what these tests add: JSON answers, waiting for
/// the registry, and a Ctrl-C stop.
struct Server(LocalServer);

impl Server {
    /// Starts `serve` on a free port and waits for its "serving on" line.
    fn start(args: &[&str]) -> Server {
        Server(LocalServer::start(Path::new(BIN), args, "info"))
    }

    fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let (status, text) = self.0.request(method, path, body);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// GETs `path` until `done` holds for its answer (the registry is maintained asynchronously).
    fn eventually(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (status, body) = self.request("GET", path, None);
            if status == 200 && done(&body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "GET {path} never got there: {body}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Ctrl-C, and a clean exit.
    fn stop(mut self) {
        let child = &mut self.0.child;
        let ok = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status}");
                return;
            }
            assert!(Instant::now() < deadline, "did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn batch() -> String {
    json!([
        power("meter-1", "2026-11-21T10:00:00+09:00", 1234.5, 10.25, 350.0),
        climate(
            "sensor-bedroom",
            "bedroom",
            "2026-11-21T01:00:00Z",
            21.5,
            45.0
        ),
        climate(
            "sensor-kitchen",
            "kitchen",
            "2026-11-21T01:02:00Z",
            23.0,
            52.0
        ),
    ])
    .to_string()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ingester-local-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn device_ids(body: &Value) -> Vec<String> {
    body["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn serve_on_the_embedded_store_keeps_data_across_a_restart() {
    let dir = temp_dir("embedded");
    let db = dir.join("readings.db");
    let db_arg = db.to_str().unwrap();
    let server = Server::start(&["--db", db_arg]);
    assert_eq!(
        server.request("POST", "/readings", Some(&batch())),
        (200, json!({"written": 3}))
    );
    let devices = server.eventually("/devices", |b| {
        b["devices"].as_array().is_some_and(|d| d.len() == 3)
    });
    assert_eq!(
        device_ids(&devices),
        ["meter-1", "sensor-bedroom", "sensor-kitchen"]
    );
    let (status, range) = server.request(
        "GET",
        "/rooms/bedroom/readings?from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z",
        None,
    );
    assert_eq!(
        (status, range["readings"][0]["temperature"].clone()),
        (200, json!(21.5))
    );
    let (status, body) = server.request("POST", "/readings", Some("{\"device_id\": "));
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("invalid_json"))
    );
    server.stop();

    let again = Server::start(&["--db", db_arg]);
    let (status, devices) = again.request("GET", "/devices", None);
    assert_eq!(
        (status, device_ids(&devices)),
        (
            200,
            vec![
                "meter-1".to_owned(),
                "sensor-bedroom".into(),
                "sensor-kitchen".into()
            ]
        )
    );
    let (_, latest) = again.request("GET", "/devices/meter-1/latest", None);
    assert_eq!(latest["reading"]["timestamp"], "2026-11-21T01:00:00.000Z");
    again.stop();
}

#[test]
fn serve_on_moto_creates_the_table_and_follows_its_stream() {
    let dir = temp_dir("moto");
    let checkpoint = dir.join("stream.json");
    let table = table_name("local-serve");
    let server = Server::start(&[
        "--dynamodb-endpoint",
        &moto(),
        "--table",
        &table,
        "--create-table",
        "--stream-checkpoint",
        checkpoint.to_str().unwrap(),
    ]);
    assert_eq!(
        server.request("POST", "/readings", Some(&batch())),
        (200, json!({"written": 3}))
    );
    let rooms = server.eventually("/rooms", |b| {
        b["rooms"].as_array().is_some_and(|r| r.len() == 2)
    });
    assert_eq!(rooms["rooms"][0]["room_id"], "bedroom");
    // Lists read the registry from the table, so they show the rooms as
    // soon as the registry is written, before the poller has also kept the
    // rollups and saved its position: wait for that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !checkpoint.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stream position was never saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server.stop();
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).unwrap()).unwrap();
    assert!(
        !saved.as_object().unwrap().is_empty(),
        "the shard position was saved: {saved}"
    );
}

fn events(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../events")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn replay_of_every_event_file_prints_the_expected_answers() {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../events"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
    files.sort(); // as the shell expands events/*.json
    let out = Command::new(BIN)
        .args(["replay", "--memory"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<Value> = lines
        .iter()
        .map(|l| l["response"]["statusCode"].clone())
        .collect();
    let ok = json!(200);
    assert_eq!(
        statuses,
        vec![
            ok.clone(),
            ok.clone(),
            json!(400),
            Value::Null,
            ok.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
            ok.clone(),
            Value::Null,
            Value::Null,
            ok.clone(),
            ok.clone(),
            ok.clone()
        ]
    );
    // The IoT Core rule messages, stored.
    assert_eq!(lines[12]["response"]["written"], json!(1));
    assert_eq!(lines[13]["response"]["written"], json!(1));
    let body = |i: usize| -> Value {
        serde_json::from_str(lines[i]["response"]["body"].as_str().unwrap()).unwrap()
    };
    assert_eq!(body(0), json!({"written": 1}));
    assert_eq!(body(1), json!({"written": 4}));
    // device_id, timestamp, temprature, room, humidity (no quantity is required).
    assert_eq!(body(2)["error"]["details"].as_array().unwrap().len(), 5);
    assert_eq!(lines[3]["response"], json!({"batchItemFailures": []}));
    assert_eq!(
        device_ids(&body(4)),
        ["meter-1", "sensor-bedroom", "sensor-kitchen"]
    );
    assert_eq!(body(5)["device"]["latest"]["current_w"], json!(-120.0));
    assert_eq!(
        body(6)["readings"][0]["timestamp"],
        "2026-11-21T01:00:00.000Z"
    );
    assert_eq!(body(7)["reading"]["timestamp"], "2026-11-21T01:05:00.000Z");
    assert_eq!(body(8)["rooms"].as_array().unwrap().len(), 2);
    assert_eq!(body(9)["room"]["latest"]["temperature"], json!(21.7));
    let temps: Vec<f64> = body(10)["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(temps, vec![21.7, 21.5]);
    // The embedded store answers stats from its hour rollups.
    assert_eq!(
        (
            body(11)["source"].clone(),
            body(11)["buckets"][0]["count"].clone()
        ),
        (json!("rollups"), json!(2))
    );
    // Grafana's InfluxQL: the bedroom's hourly means, the empty hour null.
    let influx = &body(14)["results"][0]["series"][0]["values"];
    assert_eq!(influx[0], json!([1_795_219_200_000i64, null, 0]));
    assert_eq!(influx[1][2], json!(2));
    // A plug that reports its bought counter alone: its hourly energy.
    assert_eq!(body(15), json!({"written": 4}));
    let energy: Vec<f64> = body(16)["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kwh_bought"].as_f64().unwrap())
        .collect();
    assert_eq!(energy, vec![1.25, 0.75]);
}

#[test]
fn replay_names_a_bad_file_and_exits_non_zero() {
    let dir = temp_dir("replay");
    let bad = dir.join("not-an-event.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{\"Records\": [{\"dynamodb\": 5}]}").unwrap();
    let out = Command::new(BIN)
        .args(["replay", "--memory", &events("09-get-rooms.json")])
        .args([&bad, &broken])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not-an-event.json: neither an API Gateway"),
        "{stderr}"
    );
    assert!(
        stderr.contains("broken.json: malformed DynamoDB Streams event"),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1,
        "the good file still ran"
    );
}

#[test]
fn rollups_rebuild_writes_each_device_days_and_answers_stay_the_same() {
    let dir = temp_dir("rollups");
    let db = dir.join("readings.db");
    let db_arg = db.to_str().unwrap();
    let readings = json!([
        power("meter-1", "2026-11-21T00:10:00Z", 100.0, 1.0, 300.0),
        power("meter-1", "2026-11-21T00:50:00Z", 101.0, 1.0, 300.0),
        power("meter-1", "2026-11-21T02:10:00Z", 103.0, 1.5, 300.0),
        power("meter-1", "2026-11-22T05:00:00Z", 110.0, 2.0, 300.0),
        climate("sensor-1", "bedroom", "2026-11-21T00:30:00Z", 20.5, 40.0),
    ]);
    let stats =
        "/devices/meter-1/stats?from=2026-11-21T00:00:00Z&to=2026-11-23T00:00:00Z&bucket=1d";
    let energy =
        "/devices/meter-1/energy?from=2026-11-21T00:00:00Z&to=2026-11-23T00:00:00Z&bucket=1h";
    let server = Server::start(&["--db", db_arg]);
    assert_eq!(
        server
            .request("POST", "/readings", Some(&readings.to_string()))
            .0,
        200
    );
    let (_, before_stats) = server.request("GET", stats, None);
    let (_, before_energy) = server.request("GET", energy, None);
    assert_eq!(before_stats["source"], "rollups", "{before_stats}");
    server.stop();

    let rebuild = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["rollups", "rebuild", "--db", db_arg])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Meter: 2 days; sensor: 1 day (the embedded store keeps day rollups
    // only; hours are computed from the day's readings).
    let (ok, out, err) = rebuild(&[]);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(summary, json!({"devices": 2, "rollups_written": 3}));
    let (ok, out, _) = rebuild(&["--device", "meter-1", "--from", "2026-11-22T00:00:00Z"]);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(out.trim()).unwrap(),
        json!({"devices": 1, "rollups_written": 1})
    );
    let (ok, _, err) = rebuild(&["--device", "nobody"]);
    assert!(!ok && err.contains("--device"), "{err}");
    let (ok, _, err) = rebuild(&["--from", "yesterday"]);
    assert!(!ok && err.contains("--from"), "{err}");

    let again = Server::start(&["--db", db_arg]);
    assert_eq!(again.request("GET", stats, None).1, before_stats);
    assert_eq!(again.request("GET", energy, None).1, before_energy);
    again.stop();
}

/// No open door (issue 23): `serve` on an address other than loopback
/// without a token refuses to start, naming `--token` and `--insecure-open`,
/// before it listens anywhere. (Starting with a token or with the flag is
/// `door_check`'s unit test: this test binds nothing beyond loopback.)
#[test]
fn serve_refuses_a_network_address_without_a_token() {
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:3000"] {
        let out = Command::new(BIN)
            .args(["serve", "--memory", "--addr", addr])
            .env_remove("INGEST_TOKEN")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{addr}: started: {stderr}");
        assert!(
            stderr.contains("--token") && stderr.contains("--insecure-open"),
            "{addr}: {stderr}"
        );
        assert!(!stderr.contains("serving on"), "{addr}: {stderr}");
    }
}

/// Loopback without a token stays as it was: it serves, and writes work.
#[test]
fn serve_on_loopback_without_a_token_still_serves() {
    let server = Server::start(&["--memory"]);
    let (status, body) = server.request(
        "POST",
        "/readings",
        Some(&power("meter-1", "2026-11-21T00:00:00Z", 1.0, 0.0, 5.0).to_string()),
    );
    assert_eq!((status, body), (200, json!({"written": 1})));
    server.stop();
}

/// The server turns transparent huge pages off for its process (mimalloc
/// would ask for them, and the kernel cleared a 2 MiB page at each first
/// touch: docs/BENCHMARKS.md, "Eighth session"). The kernel shows the
/// process's setting in `/proc/PID/status`.
#[cfg(target_os = "linux")]
#[test]
fn serve_runs_without_transparent_huge_pages() {
    let server = Server::start(&["--memory"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.0.child.id())).unwrap();
    let thp = status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(str::trim);
    // Off from before `main`: not one huge page was taken, the allocator's
    // first included.
    let rollup =
        std::fs::read_to_string(format!("/proc/{}/smaps_rollup", server.0.child.id())).unwrap();
    let huge = rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .map(str::trim);
    server.stop();
    assert_eq!(thp, Some("0"), "{status}");
    assert_eq!(huge, Some("0 kB"), "{rollup}");
}

/// `cost` plans a fleet's bill as an operator asks for it (issue 78): ten
/// thousand room sensors at one reading a minute cost under $1,000 a year
/// sending an hour at a time, more than ten times that a reading a request;
/// a path it does not know is refused with the ones it does.
#[test]
fn cost_prints_a_fleet_s_year_by_how_readings_arrive() {
    let run = |path: &str| {
        let out = Command::new(BIN)
            .args([
                "cost",
                "--devices",
                "10000",
                "--every",
                "1m",
                "--path",
                path,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let hour = run("http-hour");
    let each = run("http-each");
    // IoT Core's batching path: at most $3,000 (issue 78), its stream priced.
    let batched = run("iot-batched");
    assert_eq!(hour["readings_a_year"], json!(5_256_000_000.0));
    let total = |v: &Value| v["dollars_a_year"]["total"].as_f64().unwrap();
    assert!(total(&hour) <= 1_000.0, "{hour}");
    assert!(total(&each) > 10.0 * total(&hour), "{each} {hour}");
    assert!(hour["prices"].as_str().unwrap().contains("us-east-1"));
    assert!(total(&batched) <= 3_000.0, "{batched}");
    assert!(
        batched["dollars_a_year"]["kinesis"].as_f64().unwrap() > 0.0,
        "{batched}"
    );
    for bill in [&hour, &batched] {
        let parts: f64 = [
            "dynamodb_writes",
            "api_gateway",
            "iot_core",
            "kinesis",
            "lambda_requests",
        ]
        .iter()
        .map(|k| bill["dollars_a_year"][k].as_f64().unwrap())
        .sum();
        assert!((parts - total(bill)).abs() < 0.05, "{bill}");
    }
    let wrong = Command::new(BIN)
        .args(["cost", "--devices", "10", "--path", "pigeon"])
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("http-hour"));
}
