//! The Router's tower layers over real HTTP (`axum::serve` on loopback, as
//! `ingester-local serve` runs it) and through `lambda_http` (as on Lambda):
//! gzip request bodies, gzip answers, the body limit counted after inflating,
//! and JSON bodies for the statuses the layers answer themselves.

use base64::Engine;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use integration_tests::{answer, api_event, app, climate, handle, power};
use serde_json::{json, Value};
use shared::api::{router, RouteSet};
use shared::aws_lambda_events::encodings::Body;
use shared::store::SqliteStore;
use std::io::{Read, Write};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

/// The Router on a free loopback port, as `ingester-local serve` serves it.
async fn serve() -> String {
    let app = app(SqliteStore::in_memory().unwrap(), None, RouteSet::All).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router(app)).await.unwrap() });
    format!("http://{addr}")
}

struct Answer {
    status: u16,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<bytes::Bytes>,
) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http();
    let mut req = axum::http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .request(req.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

/// Forty meters' readings: an answer listing them is over the gzip threshold.
fn forty() -> String {
    let many: Vec<Value> = (0..40)
        .map(|i| {
            power(
                &format!("meter-{i:03}"),
                "2026-11-21T01:00:00Z",
                1.0,
                0.0,
                1.0,
            )
        })
        .collect();
    serde_json::to_string(&many).unwrap()
}

fn batch() -> String {
    json!([
        power("meter-1", "2026-11-21T01:00:00Z", 1.0, 0.0, 300.0),
        climate("s-bed", "bedroom", "2026-11-21T01:00:00Z", 21.0, 40.0),
        climate("s-bed", "bedroom", "2026-11-21T01:05:00Z", 21.5, 41.0),
    ])
    .to_string()
}

const GZIP: (&str, &str) = ("content-encoding", "gzip");
const DAY: &str = "from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z";

#[tokio::test]
async fn a_gzip_body_is_inflated_before_the_route_reads_it() {
    let base = serve().await;
    let resp = send(
        "POST",
        &format!("{base}/readings"),
        &[GZIP],
        gzip(batch().as_bytes()),
    )
    .await;
    assert_eq!((resp.status, resp.json()), (200, json!({"written": 3})));
    let read = send(
        "GET",
        &format!("{base}/devices/s-bed/readings?{DAY}"),
        &[],
        "",
    )
    .await;
    assert_eq!(read.json()["readings"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_body_limit_counts_inflated_bytes_and_refuses_with_json() {
    let base = serve().await;
    // 2 MiB of JSON whitespace around one reading: about 2 KB gzipped.
    let padded = format!(
        "{}{}",
        " ".repeat(2 * 1024 * 1024),
        power("m", "2026-11-21T00:00:00Z", 1.0, 0.0, 0.0)
    );
    let small = gzip(padded.as_bytes());
    assert!(small.len() < 16 * 1024);
    let resp = send("POST", &format!("{base}/readings"), &[GZIP], small).await;
    assert_eq!(resp.status, 413);
    let body = resp.json();
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1048576 bytes"),
        "{body}"
    );
    // The same without gzip: refused on its length.
    let resp = send("POST", &format!("{base}/readings"), &[], padded).await;
    assert_eq!(
        (resp.status, resp.json()["error"]["code"].clone()),
        (413, json!("payload_too_large"))
    );
    // A rename's limit is its own (4096 bytes).
    let resp = send(
        "PUT",
        &format!("{base}/devices/m"),
        &[],
        format!(r#"{{"name":"{}"}}"#, "x".repeat(5000)),
    )
    .await;
    assert_eq!(resp.status, 413);
    assert!(resp.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("4096 bytes"));
    let read = send("GET", &format!("{base}/devices/m/latest"), &[], "").await;
    assert_eq!(read.status, 404, "nothing was written");
}

#[tokio::test]
async fn a_body_sent_in_chunks_is_limited_too() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let base = serve().await;
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /readings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let chunk = vec![b' '; 64 * 1024];
    for _ in 0..20 {
        let head = format!("{:x}\r\n", chunk.len());
        if stream.write_all(head.as_bytes()).await.is_err() {
            break; // the server answered and closed: the limit was hit
        }
        let _ = stream.write_all(&chunk).await;
        let _ = stream.write_all(b"\r\n").await;
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("payload_too_large"), "{raw}");
}

#[tokio::test]
async fn corrupt_gzip_is_a_400_and_an_unknown_encoding_a_415_both_in_json() {
    let base = serve().await;
    let resp = send(
        "POST",
        &format!("{base}/readings"),
        &[GZIP],
        b"not gzip at all".to_vec(),
    )
    .await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["error"]["code"], "invalid_body");
    let resp = send(
        "POST",
        &format!("{base}/readings"),
        &[("content-encoding", "br")],
        batch(),
    )
    .await;
    assert_eq!(resp.status, 415);
    assert_eq!(resp.json()["error"]["code"], "unsupported_encoding");
    assert!(resp.header("accept-encoding").unwrap().contains("gzip"));
}

#[tokio::test]
async fn a_wrong_method_is_a_405_in_json_with_allow() {
    let base = serve().await;
    let resp = send("DELETE", &format!("{base}/readings"), &[], "").await;
    assert_eq!(resp.status, 405);
    assert_eq!(resp.json()["error"]["code"], "method_not_allowed");
    let mut allow: Vec<&str> = resp.header("allow").unwrap().split(',').collect();
    allow.sort();
    assert_eq!(allow, ["GET", "HEAD", "POST"]);
    let resp = send("GET", &format!("{base}/nowhere"), &[], "").await;
    assert_eq!(
        (resp.status, resp.json()["error"]["code"].clone()),
        (404, json!("not_found"))
    );
}

#[tokio::test]
async fn large_answers_are_gzipped_for_clients_that_accept_it() {
    let base = serve().await;
    let resp = send("POST", &format!("{base}/readings"), &[], forty()).await;
    assert_eq!(resp.status, 200);
    let url = format!("{base}/readings?{DAY}&limit=1000");
    let plain = send("GET", &url, &[], "").await;
    assert_eq!(plain.header("content-encoding"), None);
    assert!(plain.body.len() > 1024);
    let zipped = send("GET", &url, &[("accept-encoding", "gzip")], "").await;
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert!(zipped.body.len() < plain.body.len() / 3);
    assert_eq!(
        serde_json::from_slice::<Value>(&gunzip(&zipped.body)).unwrap(),
        plain.json()
    );
    // A small answer is sent as it is.
    let small = send(
        "GET",
        &format!("{base}/devices/meter-001/latest"),
        &[("accept-encoding", "gzip")],
        "",
    )
    .await;
    assert_eq!(
        (small.status, small.header("content-encoding")),
        (200, None)
    );
}

/// On Lambda, API Gateway hands a gzip body over base64-encoded and takes a
/// binary answer base64-encoded; `lambda_http` converts both ways.
#[tokio::test]
async fn gzip_both_ways_through_lambda_http() {
    let app = app(SqliteStore::in_memory().unwrap(), None, RouteSet::All).await;
    let mut event = api_event("POST", "/readings", &[], None, &[GZIP]);
    event.body = Some(base64::engine::general_purpose::STANDARD.encode(gzip(forty().as_bytes())));
    event.is_base64_encoded = true;
    assert_eq!(
        answer(&handle(&app, event).await),
        (200, json!({"written": 40}))
    );
    let day = [
        ("from", "2026-11-21T00:00:00Z"),
        ("to", "2026-11-22T00:00:00Z"),
        ("limit", "1000"),
    ];
    let plain = handle(&app, api_event("GET", "/readings", &day, None, &[])).await;
    let zipped = handle(
        &app,
        api_event(
            "GET",
            "/readings",
            &day,
            None,
            &[("accept-encoding", "gzip")],
        ),
    )
    .await;
    assert!(zipped.is_base64_encoded);
    assert_eq!(zipped.headers.get("content-encoding").unwrap(), "gzip");
    let Some(Body::Binary(bytes)) = &zipped.body else {
        panic!("a binary body: {zipped:?}")
    };
    assert_eq!(
        serde_json::from_slice::<Value>(&gunzip(bytes)).unwrap(),
        answer(&plain).1
    );
}
