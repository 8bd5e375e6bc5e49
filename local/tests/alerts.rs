//! `serve --alert-rules` (issue 42, docs/alerts.md): the file's rules go
//! into the store at start and are evaluated on schedule; a bedroom that
//! turns cold fires its rule, kept in the store's `alert_states`, and a
//! rules file that does not parse is a settings error (78) naming the rule.

use integration_tests::local_server::LocalServer;
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

/// The firing series in the file, read as SQLite sees it.
fn firing(db: &Path) -> Vec<(String, String)> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare("SELECT rule, device FROM alert_states WHERE firing = 1 ORDER BY rule")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn serve_evaluates_its_rules_and_keeps_what_fires() {
    let dir = std::env::temp_dir().join(format!("alerts-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (db, rules) = (dir.join("ingester.db"), dir.join("alerts.yaml"));
    std::fs::write(
        &rules,
        "rules:\n  bedroom-cold:\n    kind: threshold\n    scope: {room: bedroom}\n    quantity: temperature\n    below: 16\n  fuse:\n    kind: threshold\n    scope: {device: meter-1}\n    quantity: current_w\n    above: 9000\n",
    )
    .unwrap();
    let server = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            db.to_str().unwrap(),
            "--alert-rules",
            rules.to_str().unwrap(),
            "--alert-every",
            "1s",
        ],
        "info",
    );
    let cold = r#"{"device_id": "th-1", "type": "climate", "room": "bedroom", "temperature": 14.5, "humidity": 55}"#;
    let (status, body) = server.request("POST", "/readings", Some(cold));
    assert!(status < 300, "{status} {body}");
    let calm =
        r#"{"device_id": "meter-1", "type": "power", "cumulative_kwh_p": 10.5, "current_w": 350}"#;
    let (status, body) = server.request("POST", "/readings", Some(calm));
    assert!(status < 300, "{status} {body}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = firing(&db);
    while seen.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        seen = firing(&db);
    }
    // The cold bedroom fires; the meter at 350 W does not.
    assert_eq!(seen, vec![("bedroom-cold".to_owned(), "th-1".to_owned())]);
    drop(server);

    // A rules file with a mistake: the server does not start, and says where.
    std::fs::write(&rules, "rules:\n  fuse:\n    kind: threshold\n    scope: {device: meter-1}\n    quantity: watts\n    above: 9000\n").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(&db)
        .arg("--alert-rules")
        .arg(&rules)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rule fuse: quantity"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Polls `check` every 200 ms for up to 20 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "{what} within 20 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `serve` with receivers in its alert file: a cold bedroom is published
/// (retained) on the MQTT broker of `--mqtt` and posted to ntfy (a small
/// HTTP receiver here), once; a receiver that cannot be reached is shown
/// failing, with its error, in `GET /alerts` and `GET /health`.
#[test]
fn serve_tells_its_receivers_and_reports_the_one_that_fails() {
    use integration_tests::http_receiver::HttpReceiver;
    use integration_tests::mosquitto::{free_port, Broker};
    let dir = std::env::temp_dir().join(format!("alerts-told-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let broker = Broker::start(&dir, free_port());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ntfy = runtime.block_on(HttpReceiver::start("/house"));
    let (db, rules) = (dir.join("ingester.db"), dir.join("alerts.yaml"));
    std::fs::write(
        &rules,
        format!(
            "rules:\n  bedroom-cold:\n    kind: threshold\n    scope: {{room: bedroom}}\n    quantity: temperature\n    below: 16\n    summary: '{{room}} is {{value}}'\n\
             repeat_interval: 4h\n\
             receivers:\n  phone: {{kind: ntfy, url: '{}'}}\n  home-assistant: {{kind: mqtt, topic: ingester/alerts}}\n  pager: {{kind: webhook, url: 'http://127.0.0.1:{}/api/v2/alerts'}}\n",
            ntfy.url,
            free_port()
        ),
    )
    .unwrap();
    let server = LocalServer::start(
        Path::new(BIN),
        &[
            "--db",
            db.to_str().unwrap(),
            "--alert-rules",
            rules.to_str().unwrap(),
            "--alert-every",
            "1s",
            "--mqtt",
            &broker.url(),
        ],
        "info",
    );
    let cold = r#"{"device_id": "th-1", "type": "climate", "room": "bedroom", "temperature": 14.5, "humidity": 55}"#;
    let (status, body) = server.request("POST", "/readings", Some(cold));
    assert!(status < 300, "{status} {body}");
    eventually("ntfy told", || !ntfy.received().is_empty());
    // The retained message, as Home Assistant subscribing later gets it.
    let sub = std::process::Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &broker.port.to_string(), "-q", "1"])
        .args(["-t", "ingester/alerts/#", "-C", "1", "-W", "20", "-v"])
        .output()
        .unwrap();
    assert!(sub.status.success(), "no retained alert on the broker");
    let line = String::from_utf8_lossy(&sub.stdout).trim().to_owned();
    let (topic, payload) = line.split_once(' ').unwrap();
    assert_eq!(topic, "ingester/alerts/bedroom-cold/th-1");
    let payload: serde_json::Value = serde_json::from_str(payload).unwrap();
    assert_eq!(payload["status"], "firing");
    assert_eq!(payload["summary"], "bedroom is 14.5 °C");
    assert_eq!(payload["labels"]["room"], "bedroom");

    // The unreachable webhook is failing, the others are well.
    let mut alerts = serde_json::Value::Null;
    eventually("the pager reported failing", || {
        let (_, body) = server.request("GET", "/alerts", None);
        alerts = serde_json::from_str(&body).unwrap();
        alerts["receivers"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["status"] == "failing"))
    });
    let receivers: Vec<(String, String)> = alerts["receivers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        receivers,
        [
            ("home-assistant".to_owned(), "ok".to_owned()),
            ("pager".to_owned(), "failing".to_owned()),
            ("phone".to_owned(), "ok".to_owned())
        ],
        "{alerts}"
    );
    let pager = &alerts["receivers"][1];
    assert!(
        pager["last_error"]
            .as_str()
            .unwrap()
            .contains("Connection refused")
            || pager["last_error"]
                .as_str()
                .unwrap()
                .contains("connection refused"),
        "{pager}"
    );
    assert_eq!(alerts["alerts"][0]["rule"], "bedroom-cold");
    let (_, health) = server.request("GET", "/health", None);
    let health: serde_json::Value = serde_json::from_str(&health).unwrap();
    let check = integration_tests::health_check(&health, "alerts");
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .starts_with("failing: pager:"),
        "{check}"
    );
    // Told once, however many evaluations ran since.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(ntfy.received().len(), 1);
    assert_eq!(
        ntfy.received()[0].header("title"),
        "FIRING bedroom-cold: th-1"
    );
    drop(server);
    drop(broker);
    std::fs::remove_dir_all(&dir).unwrap();
}
