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
