//! The token never appears in a log line: every event of every level, from
//! our code and the libraries, is captured while requests with right, wrong and
//! missing tokens go through every kind of answer.

use integration_tests::handle;
use integration_tests::{answer, api_event, app, power};
use serde_json::json;
use shared::api::RouteSet;
use shared::store::SqliteStore;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const TOKEN: &str = "tok-7Hq2-never-log-me";

#[tokio::test]
async fn the_token_never_appears_in_a_log_line() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let app = app(
        SqliteStore::in_memory().unwrap(),
        Some(TOKEN),
        RouteSet::All,
    )
    .await;
    let good = format!("Bearer {TOKEN}");
    let near = format!("Bearer {TOKEN}x");
    let body = json!([power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 0.0)]).to_string();
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        Vec<(&'a str, &'a str)>,
        u16,
    );
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/readings",
            Some(&body),
            vec![("authorization", good.as_str())],
            200,
        ),
        (
            "POST",
            "/readings",
            Some(&body),
            vec![("authorization", near.as_str())],
            401,
        ),
        ("POST", "/readings", Some(&body), vec![], 401),
        (
            "POST",
            "/readings",
            Some("{oops"),
            vec![("authorization", good.as_str())],
            400,
        ),
        (
            "PUT",
            "/devices/meter-1",
            Some(r#"{"name":"Meter"}"#),
            vec![("authorization", good.as_str())],
            200,
        ),
        (
            "GET",
            "/devices",
            None,
            vec![("authorization", good.as_str())],
            200,
        ),
        (
            "GET",
            "/devices",
            None,
            vec![("authorization", near.as_str())],
            401,
        ),
        (
            "GET",
            "/devices/meter-1/readings",
            None,
            vec![("authorization", good.as_str()), ("x-debug", TOKEN)],
            200,
        ),
    ];
    let requests = cases.len();
    for (method, path, body, headers, status) in cases {
        let resp = handle(&app, api_event(method, path, &[], body, &headers)).await;
        let (got, json) = answer(&resp);
        assert_eq!(got, status, "{method} {path}: {json}");
        assert!(
            !json.to_string().contains(TOKEN),
            "the answer never shows it"
        );
    }
    // The InfluxDB v1 write takes the token as `p=` in the query string.
    let v1 = handle(
        &app,
        api_event(
            "POST",
            "/write",
            &[
                ("db", "home_assistant"),
                ("u", "homeassistant"),
                ("p", TOKEN),
            ],
            Some("W,entity_id=plug value=5"),
            &[],
        ),
    )
    .await;
    assert_eq!(v1.status_code, 204);
    let requests = requests + 1;
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let lines = text.lines().count();
    assert!(
        lines >= 8,
        "one line per request at least, got {lines}:\n{text}"
    );
    let request_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"message\":\"request\""))
        .collect();
    assert_eq!(
        request_lines.len(),
        requests,
        "exactly one line per request:\n{text}"
    );
    assert!(
        request_lines
            .iter()
            .all(|l| l.contains("\"method\"") && l.contains("\"path\"") && l.contains("\"ms\"")),
        "each names its method, path, status and duration:\n{text}"
    );
    assert!(
        text.contains("\"status\":401"),
        "the refused requests were logged"
    );
    assert!(
        !text.contains(TOKEN) && !text.contains("tok-7Hq2"),
        "the token leaked into the logs:\n{text}"
    );
    assert!(
        !text.to_lowercase().contains("authorization"),
        "no header dump in the logs"
    );
}
