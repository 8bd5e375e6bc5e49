//! `ingester-local serve --mqtt` against Debian's mosquitto on 127.0.0.1
//! (issue 26), with publishes from `mosquitto_pub` at QoS 1: every payload
//! shape stored and read back through the HTTP API; a bad message followed
//! by good ones, counted in `/health`; messages published while the server
//! is stopped, all stored once it is back; a server killed (SIGKILL) while
//! messages pour in loses none; parts of a reading published back to back
//! each stored; a broker restart, reconnected;
//! a broker with a password, and one over TLS verified against a CA.

use integration_tests::local_server::LocalServer;
use integration_tests::mosquitto::{free_port, Broker};
use serde_json::Value;
use shared::store::ReadingStore;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mqtt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn serve(db: &Path, broker: &Broker) -> LocalServer {
    LocalServer::start(
        Path::new(BIN),
        &["--db", db.to_str().unwrap(), "--mqtt", &broker.url()],
        "info",
    )
}

fn get(server: &LocalServer, path: &str) -> (u16, Value) {
    let (status, text) = server.request("GET", path, None);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// GETs `path` until `done` holds for a 200 answer.
fn eventually(server: &LocalServer, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = get(server, path);
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

fn subscription(server: &LocalServer) -> Value {
    let (_, health) = get(server, "/health");
    health["checks"][0]["subscription"].clone()
}

fn connected(server: &LocalServer) {
    eventually(server, "/health", |h| {
        h["checks"][0]["subscription"]["connected"] == Value::Bool(true)
    });
}

fn stop(mut server: LocalServer) {
    let _ = Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status();
    let _ = server.child.wait();
}

#[test]
fn every_shape_is_stored_and_a_bad_message_does_not_stop_the_good_ones() {
    let dir = temp_dir("shapes");
    let broker = Broker::start(&dir, free_port());
    let server = serve(&dir.join("ingester.db"), &broker);
    connected(&server);
    broker.publish("zigbee2mqtt/hall sensor", r#"{"temperature":"warm"}"#);
    broker.publish("tele/plug/SENSOR", "not json");
    let cases = [
        (
            "readings/meter-9",
            r#"{"cumulative_kwh_p":12.5,"current_w":300}"#,
            "meter-9",
            "current_w",
            300.0,
        ),
        (
            "readings/th",
            "climate,device=th-1,room=hall temperature=19.5,humidity=51\n",
            "th-1",
            "temperature",
            19.5,
        ),
        (
            "tele/pow-1/SENSOR",
            r#"{"Time":"2026-11-23T10:00:00","ENERGY":{"Total":123.456,"Power":150},"AM2301":{"Temperature":21.4,"Humidity":45.6},"TempUnit":"C"}"#,
            "pow-1",
            "cumulative_kwh_p",
            123.456,
        ),
        (
            "zigbee2mqtt/hall sensor",
            r#"{"temperature":21.37,"humidity":48.3,"linkquality":102,"battery":87}"#,
            "hall-sensor",
            "battery_pct",
            87.0,
        ),
        (
            "shellyplus1pm-c1/status/switch:0",
            r#"{"id":0,"apower":8.9,"aenergy":{"total":6532.1}}"#,
            "shellyplus1pm-c1",
            "cumulative_kwh_p",
            6.5321,
        ),
        (
            "tele/hichi/SENSOR",
            r#"{"Time":"2026-11-23T10:00:00","SML":{"Total_in":12345.6789,"Total_out":4321.0987,"Power_cur":-512}}"#,
            "hichi",
            "cumulative_kwh_n",
            4321.0987,
        ),
        (
            "shellypro3em-c8f09e/status/emdata:0",
            r#"{"id":0,"total_act":6000.75,"total_act_ret":60.5}"#,
            "shellypro3em-c8f09e",
            "cumulative_kwh_n",
            0.0605,
        ),
        (
            "dsmr/json",
            r#"{"id":1,"timestamp":"2026-11-23T10:00:01Z","electricity_delivered_1":"4021.117","electricity_delivered_2":"3817.250","electricity_returned_1":"1102.500","electricity_returned_2":"2310.016","electricity_currently_delivered":"0.000","electricity_currently_returned":"1.212","extra_device_delivered":"2210.371"}"#,
            "dsmr",
            "cumulative_kwh_p",
            7838.367,
        ),
    ];
    // DSMR-reader's topics of one field: ignored, and `/health` says why.
    broker.publish("dsmr/reading/electricity_delivered_1", "4021.117");
    // A Shelly's components without a reading are acknowledged and counted
    // as ignored, neither stored nor rejected.
    broker.publish("shellypro3em-c8f09e/status/sys", r#"{"uptime":28980}"#);
    // A meter script with names of its own: ignored, and `/health` says
    // which names to give.
    broker.publish("tele/hichi-2/SENSOR", r#"{"SML":{"E_in":1.5,"E_out":0.5}}"#);
    for (topic, payload, _, _, _) in cases {
        broker.publish(topic, payload);
    }
    for (topic, _, device, quantity, value) in cases {
        let body = eventually(&server, &format!("/devices/{device}/latest"), |_| true);
        assert_eq!(
            body["reading"][quantity].as_f64(),
            Some(value),
            "{topic}: {body}"
        );
    }
    // Counted once its batch is handled, a moment after its readings are
    // visible: waited for, not read once.
    let health = eventually(&server, "/health", |h| {
        let s = &h["checks"][0]["subscription"];
        s["stored"] == 8 && s["rejected"] == 2 && s["ignored"] == 3
    });
    let s = &health["checks"][0]["subscription"];
    let last = s["last_ignored"].as_str().unwrap();
    assert!(
        last.starts_with("tele/hichi-2/SENSOR: ")
            && last.contains("Total_in, Total_out, Power_cur:"),
        "{s}"
    );
    stop(server);
}

/// Devices that publish a reading in parts, a message each, send them back
/// to back: a Shelly Pro 3EM its watts and its totals, an H&T its
/// temperature and humidity, a Gen1 3EM a value a topic. Each part is a reading at the time it was
/// received, and none replaces another: 200 time-less messages of one
/// device published in a burst (most within a millisecond of another) are
/// 200 readings.
#[test]
fn parts_published_back_to_back_are_each_a_reading() {
    let dir = temp_dir("parts");
    let broker = Broker::start(&dir, free_port());
    let server = serve(&dir.join("ingester.db"), &broker);
    connected(&server);
    let lines: Vec<String> = (0..200)
        .map(|i| format!(r#"{{"current_w":{i}}}"#))
        .collect();
    broker.publish_lines("readings/burst-1", &lines);
    broker.publish(
        "shellypro3em-c8f09e/status/em:0",
        r#"{"id":0,"a_act_power":-250.5,"total_act_power":-100.25}"#,
    );
    broker.publish(
        "shellypro3em-c8f09e/status/emdata:0",
        r#"{"id":0,"total_act":6000.75,"total_act_ret":60.5}"#,
    );
    broker.publish(
        "shellyhtg3-1/status/temperature:0",
        r#"{"id":0,"tC":21.6,"tF":70.9}"#,
    );
    broker.publish("shellyhtg3-1/status/humidity:0", r#"{"id":0,"rh":51.2}"#);
    // A Shelly Gen1 3EM's phase: a value a topic, as plain text; and what
    // carries no reading.
    for (topic, value) in [
        ("emeter/0/power", "-250.5"),
        ("emeter/0/total", "6000.75"),
        ("emeter/0/total_returned", "60.5"),
        ("online", "true"),
    ] {
        broker.publish(&format!("shellies/shellyem3-c45bbe/{topic}"), value);
    }
    eventually(&server, "/health", |h| {
        let s = &h["checks"][0]["subscription"];
        s["stored"] == 207 && s["ignored"] == 1
    });
    let now = chrono::Utc::now();
    let range = format!(
        "from={}&to={}&limit=1000",
        (now - chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ"),
        (now + chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ")
    );
    let (status, body) = get(&server, &format!("/devices/burst-1/readings?{range}"));
    assert_eq!(status, 200, "{body}");
    let mut watts: Vec<f64> = body["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["current_w"].as_f64().unwrap())
        .collect();
    watts.sort_by(f64::total_cmp);
    assert_eq!(watts, (0..200).map(f64::from).collect::<Vec<_>>());
    for (device, parts) in [
        (
            "shellypro3em-c8f09e",
            [("current_w", -100.25), ("cumulative_kwh_p", 6.00075)].to_vec(),
        ),
        (
            "shellyhtg3-1",
            [("temperature", 21.6), ("humidity", 51.2)].to_vec(),
        ),
        (
            "shellyem3-c45bbe",
            [
                ("current_w", -250.5),
                ("cumulative_kwh_p", 6.00075),
                ("cumulative_kwh_n", 0.0605),
            ]
            .to_vec(),
        ),
    ] {
        let (status, body) = get(&server, &format!("/devices/{device}/readings?{range}"));
        assert_eq!(status, 200, "{body}");
        let readings = body["readings"].as_array().unwrap();
        assert_eq!(readings.len(), parts.len(), "{device}: {body}");
        for (quantity, value) in parts {
            assert!(
                readings.iter().any(|r| r[quantity].as_f64() == Some(value)),
                "{device} {quantity}: {body}"
            );
        }
    }
    stop(server);
}

#[test]
fn messages_published_while_the_server_is_down_arrive_after_it_restarts() {
    let dir = temp_dir("down");
    let db = dir.join("ingester.db");
    let broker = Broker::start(&dir, free_port());
    // The first run makes the broker's persistent session and subscriptions.
    let server = serve(&db, &broker);
    connected(&server);
    stop(server);
    for i in 0..20 {
        broker.publish(
            "readings/offline-meter",
            &format!(
                r#"{{"timestamp":{},"current_w":{i}}}"#,
                1_795_219_200 + i * 60
            ),
        );
    }
    let server = serve(&db, &broker);
    let page = eventually(
        &server,
        "/devices/offline-meter/readings?from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z&limit=100",
        |b| b["readings"].as_array().is_some_and(|r| r.len() == 20),
    );
    let watts: Vec<f64> = page["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["current_w"].as_f64().unwrap())
        .collect();
    assert_eq!(watts, (0..20).map(f64::from).collect::<Vec<_>>());
    stop(server);
}

/// The readings of `device` the server holds, counted from its stats.
fn count_of(server: &LocalServer, device: &str) -> u64 {
    let (_, stats) = get(
        server,
        &format!(
            "/devices/{device}/stats?from=2026-11-01T00:00:00Z&to=2026-11-10T00:00:00Z&bucket=1d"
        ),
    );
    stats["buckets"]
        .as_array()
        .map(|b| {
            b.iter()
                .map(|b| b["fields"]["current_w"]["count"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

/// The messages in flight are stored in one write and acknowledged after
/// it (issue 44): a server killed with SIGKILL while thousands of messages
/// pour in has acknowledged none it had not stored, so once it is back the
/// broker's redeliveries leave every message stored, once.
#[test]
fn a_server_killed_mid_stream_loses_no_message() {
    let dir = temp_dir("killed");
    let db = dir.join("ingester.db");
    let broker = Broker::start(&dir, free_port());
    let mut server = serve(&db, &broker);
    connected(&server);
    let n: u64 = 10_000;
    let lines: Vec<String> = (0..n)
        // A minute apart from 2026-11-01: a week, all in the past.
        .map(|i| {
            format!(
                r#"{{"timestamp":{},"current_w":{i}}}"#,
                1_793_491_200 + i * 60
            )
        })
        .collect();
    let publisher = {
        let port = broker.port;
        std::thread::spawn(move || {
            integration_tests::mosquitto::publish_lines(port, "readings/killed-meter", &lines)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let stored = subscription(&server)["stored"].as_u64().unwrap_or(0);
        if stored >= 1000 {
            break stored;
        }
        assert!(Instant::now() < deadline, "stored {stored} of {n}");
        std::thread::sleep(Duration::from_millis(2));
    };
    server.child.kill().unwrap();
    let _ = server.child.wait();
    assert!(
        at_kill < n,
        "killed after all {n} were stored: nothing was in flight"
    );
    publisher.join().unwrap();

    let server = serve(&db, &broker);
    let deadline = Instant::now() + Duration::from_secs(60);
    while count_of(&server, "killed-meter") < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} readings stored after the restart ({at_kill} when killed; {})",
            count_of(&server, "killed-meter"),
            subscription(&server)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(count_of(&server, "killed-meter"), n);
    assert_eq!(subscription(&server)["rejected"], 0);
    stop(server);
}

#[test]
fn a_broker_restart_is_reconnected_to() {
    let dir = temp_dir("restart");
    let broker = Broker::start(&dir, free_port());
    let server = serve(&dir.join("ingester.db"), &broker);
    connected(&server);
    let broker = broker.restart();
    connected(&server);
    broker.publish("readings/after", r#"{"current_w":5}"#);
    let body = eventually(&server, "/devices/after/latest", |_| true);
    assert_eq!(body["reading"]["current_w"], 5.0);
    let s = subscription(&server);
    assert!(s["disconnects"].as_u64() >= Some(1), "{s}");
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_fails_loses_nothing_once_it_recovers() {
    use shared::model::{DeviceId, Timestamp};
    use shared::mqtt::subscription::SubscriptionHealth;
    use shared::store::SqliteStore;
    let dir = temp_dir("full");
    let broker = Broker::start(&dir, free_port());
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let registry = shared::registry::RegistryCache::load(&store, Duration::from_secs(1))
        .await
        .unwrap();
    let health = std::sync::Arc::new(SubscriptionHealth::default());
    let settings = ingester_local::mqtt::Settings {
        url: broker.url(),
        username: None,
        password: None,
        ca_file: None,
        topics: vec!["readings/#".into()],
        client_id: "full-disk-test".into(),
        dead_letter: None,
    };
    let task = tokio::spawn(ingester_local::mqtt::run(
        settings,
        store.clone(),
        registry,
        health.clone(),
    ));
    let wait = |what: &'static str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(
                Instant::now() < deadline,
                "never {what}: {:?}",
                health.report()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The disk is full: a gateway's backlog (3 batches of 1000 readings)
    // needs pages the file may not grow by.
    store.cap_file_for_tests(true).unwrap();
    let now = Timestamp::now().millis();
    let batches: Vec<String> = (0..3i64)
        .map(|b| {
            let readings: Vec<Value> = (0..1000i64)
                .map(|i| {
                    let at = now - (3000 - (b * 1000 + i)) * 1000;
                    serde_json::json!({"timestamp": at, "current_w": b * 1000 + i})
                })
                .collect();
            Value::Array(readings).to_string()
        })
        .collect();
    let publisher = {
        let port = broker.port;
        let batches = batches.clone();
        std::thread::spawn(move || {
            for b in batches {
                let ok = Command::new("mosquitto_pub")
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q", "1"])
                    .args(["-t", "readings/gateway", "-m", &b])
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
        })
    };
    tokio::task::block_in_place(|| {
        wait("deferred", &|| health.report().deferred >= 1);
    });
    assert_eq!(health.report().stored, 0);
    store.cap_file_for_tests(false).unwrap();
    tokio::task::block_in_place(|| {
        publisher.join().unwrap();
        wait("stored every batch", &|| health.report().stored >= 3);
    });
    let device = DeviceId::parse("gateway").unwrap();
    let range = shared::model::TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
    let page = store
        .device_readings(
            &device,
            &shared::store::RangeRequest {
                range,
                order: shared::store::Order::Asc,
                limit: 5000,
                after: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.readings.len(), 3000, "{:?}", health.report());
    task.abort();
}

#[test]
fn a_message_that_can_never_be_stored_goes_to_the_dead_letter_topic() {
    let dir = temp_dir("dead-letter");
    let broker = Broker::start(&dir, free_port());
    let server = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            dir.join("ingester.db").to_str().unwrap(),
            "--mqtt",
            &broker.url(),
            "--mqtt-dead-letter",
            "ingester/dead",
        ],
        "info",
    );
    connected(&server);
    // A real subscriber to the dead-letter topic, for one message.
    let sub = Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &broker.port.to_string(), "-q", "1"])
        .args(["-t", "ingester/dead", "-C", "1", "-W", "20"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    broker.publish("zigbee2mqtt/s9", r#"{"temperature":900}"#);
    let out = sub.wait_with_output().unwrap();
    assert!(out.status.success(), "no dead letter within 20 s");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"temperature":900}"#,
        "the message as it came"
    );
    let s = subscription(&server);
    assert_eq!(s["rejected"], 1, "{s}");
    assert!(
        s["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("temperature"),
        "{s}"
    );
    stop(server);
}

/// Publishes one message at QoS 1 with extra `mosquitto_pub` arguments
/// (credentials, TLS).
fn publish_with(broker: &Broker, extra: &[&str], topic: &str, payload: &str) {
    let ok = Command::new("mosquitto_pub")
        .args(["-h", "127.0.0.1", "-p", &broker.port.to_string(), "-q", "1"])
        .args(extra)
        .args(["-t", topic, "-m", payload])
        .status()
        .unwrap();
    assert!(ok.success(), "mosquitto_pub {topic} {extra:?}");
}

#[test]
fn a_broker_that_needs_a_password_takes_ours_and_refuses_a_wrong_one() {
    let dir = temp_dir("password");
    let passwd = dir.join("passwd");
    let made = Command::new("mosquitto_passwd")
        .args(["-c", "-b", passwd.to_str().unwrap(), "ingester", "s3cret"])
        .status()
        .unwrap();
    assert!(made.success());
    let broker = Broker::start_with(
        &dir,
        free_port(),
        &format!(
            "allow_anonymous false\npassword_file {}\n",
            passwd.display()
        ),
    );
    let url = broker.url();
    let with = |password: &str, db: &str| {
        LocalServer::start(
            Path::new(BIN),
            &[
                "--db",
                dir.join(db).to_str().unwrap(),
                "--mqtt",
                &url,
                "--mqtt-username",
                "ingester",
                "--mqtt-password",
                password,
                "--mqtt-client-id",
                db,
            ],
            "info",
        )
    };
    let server = with("s3cret", "good.db");
    connected(&server);
    publish_with(
        &broker,
        &["-u", "ingester", "-P", "s3cret"],
        "readings/pw-1",
        r#"{"current_w":42}"#,
    );
    let body = eventually(&server, "/devices/pw-1/latest", |_| true);
    assert_eq!(body["reading"]["current_w"], 42.0);
    // A wrong password: never connected, and /health says why.
    let refused = with("wrong", "bad.db");
    std::thread::sleep(Duration::from_secs(2));
    let s = subscription(&refused);
    assert_eq!(s["connected"], false, "{s}");
    assert!(
        s["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("NotAuthorized"),
        "{s}"
    );
    stop(refused);
    stop(server);
}

/// A CA and a server certificate for 127.0.0.1, made with openssl.
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=ingester test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    // mosquitto started as root reads them as the `mosquitto` user.
    for f in ["ca.pem", "server.pem", "server.key"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

#[test]
fn an_mqtts_broker_is_verified_against_the_ca_given() {
    let dir = temp_dir("tls");
    let (ca, cert, key) = certificates(&dir);
    let port = free_port();
    let broker = Broker::start_with(
        &dir,
        port,
        &format!(
            "allow_anonymous true\ncafile {}\ncertfile {}\nkeyfile {}\n",
            ca.display(),
            cert.display(),
            key.display()
        ),
    );
    let server = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            dir.join("ingester.db").to_str().unwrap(),
            "--mqtt",
            &format!("mqtts://127.0.0.1:{port}"),
            "--mqtt-ca",
            ca.to_str().unwrap(),
        ],
        "info",
    );
    connected(&server);
    publish_with(
        &broker,
        &["--cafile", ca.to_str().unwrap()],
        "readings/tls-1",
        r#"{"current_w":7}"#,
    );
    let body = eventually(&server, "/devices/tls-1/latest", |_| true);
    assert_eq!(body["reading"]["current_w"], 7.0);
    stop(server);
    // Another CA's certificate is refused: never connected.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (other_ca, _, _) = certificates(&other);
    let doubting = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            dir.join("other.db").to_str().unwrap(),
            "--mqtt",
            &format!("mqtts://127.0.0.1:{port}"),
            "--mqtt-ca",
            other_ca.to_str().unwrap(),
            "--mqtt-client-id",
            "doubting",
        ],
        "info",
    );
    std::thread::sleep(Duration::from_secs(2));
    let s = subscription(&doubting);
    assert_eq!(s["connected"], false, "{s}");
    stop(doubting);
}

/// A TCP proxy between the server and the broker: once `armed`, it drops
/// the connection at the next PUBACK the server sends (the acknowledgement
/// of a message it stored never reaches the broker), and disarms.
fn proxy_dropping_a_puback(broker_port: u16, armed: Arc<AtomicBool>) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut broker) = TcpStream::connect(("127.0.0.1", broker_port)) else {
                return;
            };
            let (mut from_broker, mut to_client) =
                (broker.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_broker, &mut to_client);
                let _ = to_client.shutdown(Shutdown::Both);
            });
            let armed = armed.clone();
            std::thread::spawn(move || {
                // Packet by packet: the fixed header's type and remaining length.
                loop {
                    let mut head = [0u8; 1];
                    if client.read_exact(&mut head).is_err() {
                        break;
                    }
                    let (mut len, mut shift, mut header) = (0usize, 0, vec![head[0]]);
                    loop {
                        let mut b = [0u8; 1];
                        if client.read_exact(&mut b).is_err() {
                            return;
                        }
                        header.push(b[0]);
                        len |= ((b[0] & 0x7f) as usize) << shift;
                        shift += 7;
                        if b[0] & 0x80 == 0 {
                            break;
                        }
                    }
                    let mut body = vec![0u8; len];
                    if client.read_exact(&mut body).is_err() {
                        break;
                    }
                    if head[0] >> 4 == 4 && armed.swap(false, Ordering::SeqCst) {
                        let _ = client.shutdown(Shutdown::Both);
                        let _ = broker.shutdown(Shutdown::Both);
                        return;
                    }
                    if broker
                        .write_all(&header)
                        .and_then(|_| broker.write_all(&body))
                        .is_err()
                    {
                        break;
                    }
                }
                let _ = broker.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

/// QoS 1's redelivery (issue 79): the server stores a message without a
/// time of its own, and the connection drops between its PUBLISH and our
/// PUBACK; the broker delivers it again (DUP) once we are back. It is one
/// reading: the redelivery keeps its first delivery's time.
#[test]
fn a_message_delivered_again_after_a_lost_acknowledgement_is_one_reading() {
    let dir = temp_dir("redelivered");
    let broker = Broker::start(&dir, free_port());
    let armed = Arc::new(AtomicBool::new(false));
    let broker_port = broker.url().rsplit(':').next().unwrap().parse().unwrap();
    let port = proxy_dropping_a_puback(broker_port, armed.clone());
    let server = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            dir.join("ingester.db").to_str().unwrap(),
            "--mqtt",
            &format!("mqtt://127.0.0.1:{port}"),
        ],
        "info",
    );
    connected(&server);
    // Subscribed once a message comes through.
    let deadline = Instant::now() + Duration::from_secs(20);
    while subscription(&server)["stored"] == 0 {
        assert!(Instant::now() < deadline, "never subscribed");
        broker.publish("readings/warm-up", r#"{"current_w":1}"#);
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = subscription(&server)["stored"].as_u64().unwrap();
    armed.store(true, Ordering::SeqCst);
    broker.publish(
        "readings/th-dup",
        r#"{"current_w":7,"cumulative_kwh_p":1.5}"#,
    );
    // Stored, the acknowledgement lost, reconnected, delivered again, and
    // handled again (stored counts each message the server took).
    eventually(&server, "/health", |h| {
        h["checks"][0]["subscription"]["stored"].as_u64() >= Some(before + 2)
    });
    assert!(
        !armed.load(Ordering::SeqCst),
        "the acknowledgement was dropped"
    );
    let (_, page) = get(
        &server,
        "/devices/th-dup/readings?from=2026-01-01T00:00:00Z&limit=10",
    );
    let readings = page["readings"].as_array().unwrap();
    assert_eq!(readings.len(), 1, "one reading, not one a delivery: {page}");
    // A new publish of the same payload is a new reading.
    broker.publish(
        "readings/th-dup",
        r#"{"current_w":7,"cumulative_kwh_p":1.5}"#,
    );
    eventually(
        &server,
        "/devices/th-dup/readings?from=2026-01-01T00:00:00Z&limit=10",
        |p| p["readings"].as_array().map(Vec::len) == Some(2),
    );
    stop(server);
}
