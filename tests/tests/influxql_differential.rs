//! The same line-protocol writes to Debian's InfluxDB 1.6 and to us (on
//! every engine), then every statement of `tests/influxql/statements.txt`
//! to both: the answers must agree series by series, value by value (floats
//! to 1e-9 relative: sums over rollups add in another order).

use integration_tests::influxd::{self, Influxd};
use integration_tests::{
    answer, api_event, app, handle, on_every_store, stream_event_for, TestStore,
};
use serde_json::Value;
use shared::api::{App, RouteSet};
use shared::model::{Reading, Timestamp};

/// 2026-11-20T00:00:00Z
const T0: i64 = 1_795_132_800_000;
const MIN: i64 = 60_000;

/// Two days: a kitchen sensor each minute, a bedroom sensor every 7 minutes
/// with a three-hour gap, a meter each minute; random walks at sensor resolution.
fn lines() -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(27);
    let mut out = Vec::new();
    let (mut t1, mut h1, mut t2, mut w, mut kwh) = (21.0f64, 45.0f64, 18.0f64, 300.0f64, 1000.0f64);
    for m in 0..2 * 1440i64 {
        let at = T0 + m * MIN;
        t1 += (rng.i32(-1..=1) as f64) * 0.01;
        h1 = (h1 + (rng.i32(-1..=1) as f64) * 0.1).clamp(0.0, 100.0);
        out.push(format!(
            "climate,device_id=s-1,room=kitchen temperature={:.2},humidity={:.1} {at}",
            t1, h1
        ));
        if m % 7 == 0 && !(300..480).contains(&m) {
            t2 += (rng.i32(-3..=3) as f64) * 0.05;
            out.push(format!(
                "climate,device_id=s-2,room=bedroom temperature={:.2},humidity=55 {at}",
                t2
            ));
        }
        w = (w + (rng.i32(-20..=20) as f64) * 0.1).max(0.0);
        kwh += w / 60_000.0;
        out.push(format!(
            "power,device_id=m-1 current_w={:.1},cumulative_kwh_p={:.3},cumulative_kwh_n=0 {at}",
            w, kwh
        ));
    }
    out
}

fn statements(from: i64, to: i64) -> Vec<String> {
    let text = include_str!("../influxql/statements.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.replace("{from}", &from.to_string())
                .replace("{to}", &to.to_string())
        })
        .collect()
}

async fn write_ours<S: shared::rollups::Upkeep>(app: &App<S>, lines: &[String]) {
    let mut readings = Vec::new();
    for chunk in lines.chunks(1000) {
        let body = chunk.join("\n");
        let r = handle(
            app,
            api_event(
                "POST",
                "/write",
                &[("db", "home"), ("precision", "ms")],
                Some(&body),
                &[],
            ),
        )
        .await;
        assert_eq!(r.status_code, 204, "{:?}", r.body);
    }
    // What the stream functions see on DynamoDB: each reading, as stored.
    for l in lines {
        let (head, rest) = l.split_once(' ').unwrap();
        let (fields, at) = rest.rsplit_once(' ').unwrap();
        let mut v = serde_json::Map::new();
        for kv in head.split(',').skip(1).chain(fields.split(',')) {
            let (k, val) = kv.split_once('=').unwrap();
            let k = if k == "device_id" { "device_id" } else { k };
            v.insert(
                k.into(),
                val.parse::<f64>()
                    .map_or_else(|_| Value::from(val), Value::from),
            );
        }
        v.insert("timestamp".into(), Value::from(at.parse::<i64>().unwrap()));
        readings.push(Reading::from_json(&Value::Object(v), Timestamp::now(), |_| None).unwrap());
    }
    for chunk in readings.chunks(1000) {
        let event = stream_event_for(chunk);
        assert!(shared::stream::handle(&app.store, event.clone())
            .await
            .batch_item_failures
            .is_empty());
        assert!(shared::stream::rollups::handle(&app.store, event)
            .await
            .batch_item_failures
            .is_empty());
    }
    app.registry.invalidate();
}

/// Where two answers differ, or `None`.
fn differ(ours: &Value, theirs: &Value, at: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let scale = a.abs().max(b.abs()).max(1.0);
            ((a - b).abs() > 1e-9 * scale).then(|| format!("{at}: ours {a}, theirs {b}"))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!(
                    "{at}: ours has {} items, theirs {}",
                    a.len(),
                    b.len()
                ));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| differ(x, y, &format!("{at}[{i}]")))
        }
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => differ(x, y, &format!("{at}.{k}")),
                _ => Some(format!(
                    "{at}.{k}: ours {:?}, theirs {:?}",
                    a.get(k),
                    b.get(k)
                )),
            })
        }
        (a, b) => (a != b).then(|| format!("{at}: ours {a}, theirs {b}")),
    }
}

async fn every_listed_statement_answers_as_influxdb_1_6<S: TestStore>() {
    assert!(
        influxd::binary().is_some(),
        "influxd is missing: scripts/install-test-tools installs Debian's influxdb"
    );
    let dir = std::env::temp_dir().join(format!(
        "iql-diff-{}-{}",
        std::process::id(),
        S::SEALS_CLOSED_DAYS
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let influx = Influxd::start(&dir, "home").unwrap();
    let lines = lines();
    for chunk in lines.chunks(5000) {
        influx.write("home", "ms", &chunk.join("\n"));
    }
    let app = app(S::fresh("iql-diff").await, None, RouteSet::All).await;
    write_ours(&app, &lines).await;
    let (from, to) = (T0, T0 + 2 * 1440 * MIN);
    let mut problems = Vec::new();
    let all = statements(from, to);
    assert!(all.len() >= 25, "the list is read");
    for q in &all {
        let theirs = influx.query(&[("db", "home"), ("q", q), ("epoch", "ms")]);
        let (status, ours) = answer(
            &handle(
                &app,
                api_event(
                    "GET",
                    "/query",
                    &[("db", "home"), ("q", q), ("epoch", "ms")],
                    None,
                    &[],
                ),
            )
            .await,
        );
        assert!(
            theirs["results"][0].get("error").is_none()
                && theirs["results"][0]["series"].is_array(),
            "the list holds only statements both answer with data: {q}: {theirs}"
        );
        if status != 200 {
            problems.push(format!("{q}\n  status {status}: {ours}"));
        } else if let Some(d) = differ(&ours, &theirs, "results") {
            let head = |v: &Value| {
                let rows = &v["results"][0]["series"][0]["values"];
                let rows: Vec<&Value> = rows
                    .as_array()
                    .map_or(vec![], |r| r.iter().take(8).collect());
                format!("{rows:?}")
            };
            problems.push(format!(
                "{q}\n  {d}\n  ours   {}\n  theirs {}",
                head(&ours),
                head(&theirs)
            ));
        }
    }
    drop(influx);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        problems.is_empty(),
        "{} of {} statements differ:\n{}",
        problems.len(),
        all.len(),
        problems.join("\n")
    );
}

on_every_store!(every_listed_statement_answers_as_influxdb_1_6);
