//! The dashboard's pages, built by the one Router in process over the
//! embedded store (release build), with a year of 1-minute readings of four
//! devices (a meter and three room sensors: 2.1 million readings): the time
//! to build each page and its weight, against the JSON answer of a year of
//! daily stats from the same store in the same run (the baseline).
//!
//! `cargo bench -p system-benches --bench dashboard`; under `cargo test` it
//! runs once, with two days of readings, as a smoke test.

use axum::body::Body;
use axum::http::Request;
use shared::api::{router, Access, App, RouteSet};
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::store::ReadingStore;
use shared::store::SqliteStore;
use std::time::{Duration, Instant};
use tower::ServiceExt;

const MINUTE: i64 = 60_000;

fn history(now: i64, minutes: i64) -> Vec<Vec<Reading>> {
    let start = now - now % MINUTE - minutes * MINUTE;
    let sensors = [
        ("sensor-bedroom", "bedroom"),
        ("sensor-kitchen", "kitchen"),
        ("sensor-living", "living"),
    ];
    let mut chunks = Vec::new();
    let mut chunk = Vec::with_capacity(40_000);
    for m in 0..minutes {
        let t = Timestamp::from_millis(start + m * MINUTE).unwrap();
        let h = (m % 1440) as f64 / 60.0;
        chunk.push(Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: t,
            measurement: Measurement::power(
                5000.0 + m as f64 * 0.006,
                100.0 + m as f64 * 0.001,
                200.0 + 150.0 * (h / 3.8).sin(),
            )
            .unwrap(),
        });
        for (i, (device, room)) in sensors.iter().enumerate() {
            chunk.push(Reading {
                device_id: DeviceId::parse(device).unwrap(),
                timestamp: t,
                measurement: Measurement::climate(
                    RoomId::parse(room).unwrap(),
                    19.0 + i as f64 + 2.0 * (h / 3.8).sin(),
                    45.0 + 5.0 * (h / 7.6).cos(),
                )
                .unwrap(),
            });
        }
        if chunk.len() >= 40_000 {
            chunks.push(std::mem::take(&mut chunk));
        }
    }
    chunks.push(chunk);
    chunks
}

async fn fetch(app: &axum::Router, uri: &str) -> (Duration, usize, String) {
    let started = Instant::now();
    let response = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(status, 200, "{uri}");
    (
        took,
        body.len(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let minutes = if full { 365 * 1440 } else { 2 * 1440 };
    let reps = if full { 7 } else { 1 };
    let dir = std::env::temp_dir().join(format!("dashboard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ingester.db")).unwrap();
    let now = Timestamp::now().millis();
    let started = Instant::now();
    let mut n = 0;
    for chunk in history(now, minutes) {
        n += chunk.len();
        assert!(store.write_owned_readings(chunk).await.unwritten.is_empty());
    }
    println!(
        "{n} readings of 4 devices written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let app = App::new(
        store,
        Access::open(),
        RouteSet::All,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let app = router(app);

    let from = Timestamp::from_millis(now - minutes * MINUTE)
        .unwrap()
        .to_string();
    let to = Timestamp::from_millis(now).unwrap().to_string();
    let baseline_uri = format!("/devices/sensor-bedroom/stats?from={from}&to={to}&bucket=1d");
    let mut pages = vec!["/".to_owned()];
    for range in ["24h", "7d", "30d", "1y"] {
        pages.push(format!("/ui/devices/meter-1?range={range}"));
        pages.push(format!("/ui/devices/sensor-bedroom?range={range}"));
        pages.push(format!("/ui/rooms/kitchen?range={range}"));
    }
    pages.push("/devices/meter-1/chart.svg?quantity=energy&range=1y".to_owned());
    pages.push("/rooms/living/chart.svg?quantity=temperature&range=1y".to_owned());

    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut base = Vec::new();
    for _ in 0..reps {
        base.push(fetch(&app, &baseline_uri).await.0);
    }
    let base = median(base);
    println!(
        "baseline: a year of daily stats as JSON ({baseline_uri}): {:.2} ms",
        base.as_secs_f64() * 1e3
    );
    let (mut slowest, mut heaviest) = (Duration::ZERO, 0);
    for uri in &pages {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..reps {
            let (t, b, body) = fetch(&app, uri).await;
            assert!(!body.contains("No readings in this range"), "{uri}");
            times.push(t);
            bytes = b;
        }
        let t = median(times);
        slowest = slowest.max(t);
        heaviest = heaviest.max(bytes);
        println!(
            "{uri:<52} {:>7.2} ms ({:>4.1}x the baseline) {:>7.1} KB",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() / base.as_secs_f64(),
            bytes as f64 / 1024.0
        );
    }
    println!(
        "slowest page {:.1} ms (goal <= 50 ms), heaviest {:.1} KB (goal <= 200 KB)",
        slowest.as_secs_f64() * 1e3,
        heaviest as f64 / 1024.0
    );
    std::fs::remove_dir_all(&dir).ok();
}
