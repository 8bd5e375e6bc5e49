//! A fleet on the embedded store (issue 76): N climate sensors in N/10
//! rooms, each registered by its first reading, posted through the one
//! Router in batches of 1,000 as a fleet's gateways would; then a page of
//! `/devices`, of `/rooms`, a room's devices, the last page of `/devices`
//! (followed from the first by cursor), and the overview. For each N: the
//! time to register, each answer's time and size; and the ratio of
//! registering 10× the devices (linear is 10×), all in one run.
//!
//! `cargo bench -p system-benches --bench fleet` (1,000, 10,000 and
//! 100,000 devices; `FLEET_SIZES=1000,10000` for fewer). Under `cargo
//! test` it runs once with 300 devices (past the registry's seed bound),
//! as a smoke test that still checks every answer's bound.

use axum::body::Body;
use axum::http::Request;
use shared::api::{router, Access, App, RouteSet};
use shared::store::SqliteStore;
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// Lambda's largest answer.
const LAMBDA_ANSWER: usize = 6 * 1024 * 1024;

async fn send(
    app: &axum::Router,
    method: &str,
    uri: &str,
    body: String,
) -> (Duration, u16, String) {
    let started = Instant::now();
    let response = app
        .clone()
        .oneshot(
            Request::builder()
                .method(method)
                .uri(uri)
                .body(Body::from(body))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        started.elapsed(),
        status,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// The first reading of sensors `from..to`, one JSON batch.
fn batch(from: usize, to: usize) -> String {
    let readings: Vec<String> = (from..to)
        .map(|i| {
            format!(
                r#"{{"device_id":"sensor-{i:06}","timestamp":"2026-11-21T01:00:00Z","type":"climate","room":"room-{:05}","temperature":{:.1},"humidity":45}}"#,
                i / 10,
                18.0 + (i % 50) as f64 / 10.0
            )
        })
        .collect();
    format!("[{}]", readings.join(","))
}

struct Figures {
    devices: usize,
    register: Duration,
}

async fn fleet(devices: usize) -> Figures {
    let dir = std::env::temp_dir().join(format!("fleet-bench-{}-{devices}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let app = App::new(
        store,
        Access::open(),
        RouteSet::All,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let app = router(app);
    let started = Instant::now();
    for from in (0..devices).step_by(1000) {
        let (_, status, body) = send(
            &app,
            "POST",
            "/readings",
            batch(from, (from + 1000).min(devices)),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let register = started.elapsed();
    println!(
        "{devices} devices: registered in {:.2} s ({:.1} µs a device)",
        register.as_secs_f64(),
        register.as_secs_f64() * 1e6 / devices as f64
    );
    let mut last_cursor = None;
    let mut uri = "/devices".to_owned();
    let mut pages = 0;
    loop {
        let (took, status, body) = send(&app, "GET", &uri, String::new()).await;
        assert_eq!(status, 200, "{uri}: {body:.300}");
        assert!(body.len() <= LAMBDA_ANSWER, "{uri}: {} bytes", body.len());
        let page: serde_json::Value = serde_json::from_str(&body).unwrap();
        pages += 1;
        if pages == 1 {
            println!(
                "  GET /devices (a page of 1,000): {:>9} bytes, {:>7.2} ms",
                body.len(),
                took.as_secs_f64() * 1e3
            );
        }
        match page["next_cursor"].as_str() {
            Some(c) => {
                last_cursor = Some(c.to_owned());
                uri = format!("/devices?cursor={c}");
            }
            None => {
                if pages > 1 {
                    println!(
                        "  GET /devices, its last page (page {pages}): {:>9} bytes, {:>7.2} ms",
                        body.len(),
                        took.as_secs_f64() * 1e3
                    );
                }
                assert_eq!(
                    pages,
                    devices.div_ceil(1000),
                    "every device once, in pages of 1,000 ({last_cursor:?})"
                );
                break;
            }
        }
    }
    for (what, uri) in [
        ("GET /rooms (a page)", "/rooms".to_owned()),
        (
            "GET /rooms/{id} (10 devices)",
            format!("/rooms/room-{:05}", devices / 20),
        ),
        (
            "GET /devices?prefix= (10)",
            format!("/devices?prefix=sensor-{:05}", devices / 20),
        ),
        (
            "GET /devices?search= (1)",
            format!("/devices?search=sensor-{:06}", devices - 1),
        ),
        ("overview /", "/".to_owned()),
        (
            "overview /?search= (1)",
            format!("/?search=sensor-{:06}", devices - 1),
        ),
    ] {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..3 {
            let (took, status, body) = send(&app, "GET", &uri, String::new()).await;
            assert_eq!(status, 200, "{uri}: {body:.300}");
            assert!(body.len() <= LAMBDA_ANSWER, "{uri}: {} bytes", body.len());
            times.push(took);
            size = body.len();
        }
        times.sort();
        println!(
            "  {what:<32} {size:>9} bytes, {:>7.2} ms",
            times[1].as_secs_f64() * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Figures { devices, register }
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("FLEET_SIZES") {
        Ok(s) => s.split(',').map(|n| n.trim().parse().unwrap()).collect(),
        Err(_) if full => vec![1_000, 10_000, 100_000],
        Err(_) => vec![300],
    };
    let mut figures = Vec::new();
    for n in sizes {
        figures.push(fleet(n).await);
    }
    for pair in figures.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        println!(
            "registering {} devices took {:.1}× as long as {} ({:.0}× the devices)",
            b.devices,
            b.register.as_secs_f64() / a.register.as_secs_f64(),
            a.devices,
            b.devices as f64 / a.devices as f64
        );
    }
}
