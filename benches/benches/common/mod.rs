//! What the comparisons with peer databases share: the readings, the
//! request bodies in both formats, our server's reads, and timing.

#![allow(dead_code)] // each bench uses its part

use integration_tests::local_server::LocalServer;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

pub mod noise;

pub const DAY_MS: i64 = 86_400_000;

/// One reading of the scenario.
pub struct Sample {
    pub device: String,
    pub room: Option<String>,
    pub ms: i64,
    pub values: Vec<(&'static str, f64)>,
}

/// A meter and three room sensors, one reading a minute each, over `days` days
/// ending at the last midnight (UTC) before now.
pub fn household(days: i64, start_ms: i64) -> Vec<Sample> {
    let mut out = Vec::new();
    let (mut kwh_p, kwh_n) = (5210.125f64, 812.5);
    for i in 0..days * 1440 {
        let ms = start_ms + i * 60_000;
        let x = i as f64;
        let w = ((350.0 + 200.0 * (x / 50.0).sin()) * 10.0).round() / 10.0;
        kwh_p = ((kwh_p + w.max(0.0) / 60_000.0) * 1000.0).round() / 1000.0;
        out.push(Sample {
            device: "meter-1".into(),
            room: None,
            ms,
            values: vec![
                ("cumulative_kwh_p", kwh_p),
                ("cumulative_kwh_n", kwh_n),
                ("current_w", w),
            ],
        });
        for d in 2..=4 {
            out.push(climate(
                &format!("sensor-{d}"),
                &format!("room-{d}"),
                ms,
                x,
                d as f64,
            ));
        }
    }
    out
}

pub fn climate(device: &str, room: &str, ms: i64, x: f64, phase: f64) -> Sample {
    let t = ((21.0 + 2.0 * (x / 300.0 + phase).sin()) * 100.0).round() / 100.0;
    let h = ((45.0 + 5.0 * (x / 400.0 + phase).sin()) * 10.0).round() / 10.0;
    Sample {
        device: device.into(),
        room: Some(room.into()),
        ms,
        values: vec![("temperature", t), ("humidity", h)],
    }
}

pub fn json_body(batch: &[Sample]) -> String {
    let items: Vec<Value> = batch
        .iter()
        .map(|s| {
            let mut v = json!({"device_id": s.device, "timestamp": s.ms});
            if let Some(room) = &s.room {
                v["room"] = json!(room);
            }
            for (q, x) in &s.values {
                v[*q] = json!(x);
            }
            v
        })
        .collect();
    serde_json::to_string(&items).unwrap()
}

pub fn line_body(batch: &[Sample]) -> String {
    batch
        .iter()
        .map(|s| {
            let measurement = if s.room.is_some() { "climate" } else { "power" };
            let room = s
                .room
                .as_ref()
                .map(|r| format!(",room={r}"))
                .unwrap_or_default();
            let fields: Vec<String> = s.values.iter().map(|(q, x)| format!("{q}={x}")).collect();
            format!(
                "{measurement},device={}{room} {} {}\n",
                s.device,
                fields.join(","),
                s.ms
            )
        })
        .collect()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[allow(unused_imports)] // not every bench measures bytes
pub use integration_tests::influxd::dir_size;

/// The one HTTP client both servers get: the same library, keeping its
/// connections alive for both.
pub fn agent() -> &'static ureq::Agent {
    static AGENT: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    AGENT.get_or_init(|| ureq::AgentBuilder::new().build())
}

/// A request to our server through the shared client: status and body.
pub fn ours(server: &LocalServer, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let request = agent().request(method, &format!("http://{}{path}", server.addr));
    let result = match body {
        Some(b) => request.send_string(b),
        None => request.call(),
    };
    match result {
        Ok(resp) => (resp.status(), resp.into_string().unwrap()),
        Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap()),
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

pub fn ours_get(server: &LocalServer, path: &str) -> Value {
    let (status, text) = ours(server, "GET", path, None);
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// InfluxQL to our `/query` (epoch ms): the answer's JSON.
#[allow(dead_code)] // the InfluxDB bench's
pub fn ours_influxql(server: &LocalServer, q: &str) -> Value {
    let response = agent()
        .get(&format!("http://{}/query", server.addr))
        .query("q", q)
        .query("epoch", "ms")
        .call()
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    serde_json::from_str(&response.into_string().unwrap()).unwrap()
}

/// A columns page whose shared labels are given once (docs/api-behaviour.md),
/// as `format` to `ours_range`.
#[allow(dead_code)] // the VictoriaMetrics bench's
pub const COLUMNS_LABELS_ONCE: &str = "columns&labels=once";
/// The columns page on its side, an array a column, labels given once
/// (issue 80): what a program reading long ranges asks for.
pub const ARRAYS_LABELS_ONCE: &str = "arrays&labels=once";

/// Every reading of a device's range, following cursors, in a page format
/// (`objects`, `columns`, `COLUMNS_LABELS_ONCE` or `ARRAYS_LABELS_ONCE`):
/// how many.
pub fn ours_range(server: &LocalServer, device: &str, from: &str, to: &str, format: &str) -> usize {
    let mut cursor: Option<String> = None;
    let mut n = 0;
    let columns = format.starts_with("columns") || format.starts_with("arrays");
    // The largest page each format takes (docs/api-behaviour.md).
    let limit = if columns { 10_000 } else { 1000 };
    loop {
        let mut path =
            format!("/devices/{device}/readings?from={from}&to={to}&limit={limit}&format={format}");
        if let Some(c) = &cursor {
            path += &format!("&cursor={c}");
        }
        let page = ours_get(server, &path);
        n += if format.starts_with("arrays") {
            page["arrays"][0].as_array().unwrap().len()
        } else if columns {
            page["values"].as_array().unwrap().len()
        } else {
            page["readings"].as_array().unwrap().len()
        };
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return n,
        }
    }
}

pub fn iso(ms: i64) -> String {
    shared::model::Timestamp::from_millis(ms)
        .unwrap()
        .to_string()
}

/// The median time of `runs` runs of `f`, in milliseconds.
pub fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A value that moves by at most one step of its resolution a reading, as
/// a real sensor's does: integer units of the resolution.
struct Walk {
    units: i64,
    lo: i64,
    hi: i64,
    per_unit: f64,
}

impl Walk {
    fn step(&mut self, rng: &mut fastrand::Rng, by: i64) -> f64 {
        self.units = (self.units + rng.i64(-by..=by)).clamp(self.lo, self.hi);
        self.units as f64 / self.per_unit
    }
}

/// A room sensor with realistic noise: random walks of 0.01 °C and 0.1 %RH
/// steps, `n` readings a minute apart from `start_ms`, seeded.
pub fn walking_sensor(device: &str, room: &str, start_ms: i64, n: i64, seed: u64) -> Vec<Sample> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut t = Walk {
        units: 2100,
        lo: 1500,
        hi: 3000,
        per_unit: 100.0,
    };
    let mut h = Walk {
        units: 450,
        lo: 200,
        hi: 800,
        per_unit: 10.0,
    };
    (0..n)
        .map(|i| Sample {
            device: device.into(),
            room: Some(room.into()),
            ms: start_ms + i * 60_000,
            values: vec![
                ("temperature", t.step(&mut rng, 1)),
                ("humidity", h.step(&mut rng, 1)),
            ],
        })
        .collect()
}

/// A meter and three room sensors, one reading a minute each, over `days`
/// days from `start_ms`, with realistic noise: watts a random walk in 0.1 W
/// steps, the kWh counter growing by them in whole Wh, the sensors as
/// `walking_sensor`. Seeded: every run, and every peer, gets the same.
pub fn walking_household(days: i64, start_ms: i64) -> Vec<Sample> {
    let n = days * 1440;
    let sensors: Vec<Vec<Sample>> = (2..=4)
        .map(|d| walking_sensor(&format!("sensor-{d}"), &format!("room-{d}"), start_ms, n, d))
        .collect();
    let mut rng = fastrand::Rng::with_seed(1);
    let mut w = Walk {
        units: 3500,
        lo: 0,
        hi: 60_000,
        per_unit: 10.0,
    };
    let mut meter = Meter::default();
    let mut out = Vec::with_capacity(4 * n as usize);
    for i in 0..n as usize {
        let watts = w.step(&mut rng, 50);
        out.push(meter.reading(start_ms + i as i64 * 60_000, watts));
        for s in &sensors {
            out.push(Sample {
                device: s[i].device.clone(),
                room: s[i].room.clone(),
                ms: s[i].ms,
                values: s[i].values.clone(),
            });
        }
    }
    out
}

/// A household's meter: its kWh counter grows in whole Wh by the watts
/// of each minute.
pub struct Meter {
    wh: i64,
    /// Wh not yet counted.
    energy: f64,
}

impl Default for Meter {
    fn default() -> Self {
        Meter {
            wh: 5_210_125,
            energy: 0.0,
        }
    }
}

impl Meter {
    /// Its reading at `ms`, after a minute at `watts`.
    pub fn reading(&mut self, ms: i64, watts: f64) -> Sample {
        self.reading_after(ms, watts, 60_000)
    }

    /// Its reading at `ms`, after `elapsed_ms` at `watts`.
    pub fn reading_after(&mut self, ms: i64, watts: f64, elapsed_ms: i64) -> Sample {
        self.energy += watts * elapsed_ms as f64 / 3_600_000.0;
        let whole = self.energy.floor();
        self.wh += whole as i64;
        self.energy -= whole;
        Sample {
            device: "meter-1".into(),
            room: None,
            ms,
            values: vec![
                ("cumulative_kwh_p", self.wh as f64 / 1000.0),
                ("cumulative_kwh_n", 812.5),
                ("current_w", watts),
            ],
        }
    }
}

/// A peer database that takes line protocol.
pub trait Peer {
    /// What the tables call it.
    const NAME: &'static str;
    /// Where a batch of lines (precision ms) is posted.
    fn write_url(&self) -> String;
    /// Writes one batch of lines, asserting success.
    fn write(&self, lines: &str) {
        let resp = agent().post(&self.write_url()).send_string(lines).unwrap();
        assert_eq!(resp.status(), 204);
    }
}

/// Readings per second of each writer.
pub struct IngestRates {
    pub line_protocol: f64,
    pub json: f64,
    pub theirs: Option<f64>,
}

/// Posts every batch three ways, taking turns batch by batch so that all
/// see the same machine load: line protocol to `server`, JSON to a server
/// of ours of its own in `dir` (so that no key is written twice), line
/// protocol to the peer. Each is timed alone.
pub fn ingest<P: Peer>(
    server: &LocalServer,
    dir: &Path,
    peer: Option<&P>,
    samples: &[Sample],
) -> IngestRates {
    std::fs::create_dir_all(dir).unwrap();
    let db = dir.join("ours-json.db");
    let json_server = LocalServer::start(
        &integration_tests::local_server::built_binary(),
        &["--db", db.to_str().unwrap()],
        "warn,ingester_local=info",
    );
    let json: Vec<String> = samples.chunks(1000).map(json_body).collect();
    let lines: Vec<String> = samples.chunks(1000).map(line_body).collect();
    // A warm-up, untimed, for every server: one reading of each device a
    // day before the samples (outside every range read later). A server's
    // first batch prepares its statements, creates its first pages and
    // grows its heap: 5-16 ms on either side, where a batch takes under 1 ms,
    // and the rows compare throughput.
    let warm_up = warm_up(samples);
    let (status, text) = ours(
        server,
        "POST",
        "/write?db=bench&precision=ms",
        Some(&line_body(&warm_up)),
    );
    assert_eq!(status, 204, "{text}");
    let (status, text) = ours(
        &json_server,
        "POST",
        "/readings",
        Some(&json_body(&warm_up)),
    );
    assert_eq!(status, 200, "{text}");
    if let Some(p) = peer {
        p.write(&line_body(&warm_up));
    }
    let mut spent: [Vec<Duration>; 3] = Default::default();
    let timed = |spent: &mut Vec<Duration>, f: &mut dyn FnMut()| {
        let started = Instant::now();
        f();
        spent.push(started.elapsed());
    };
    for (json, lines) in json.iter().zip(&lines) {
        timed(&mut spent[0], &mut || {
            let (status, text) = ours(server, "POST", "/write?db=bench&precision=ms", Some(lines));
            assert_eq!(status, 204, "{text}");
        });
        timed(&mut spent[1], &mut || {
            let (status, text) = ours(&json_server, "POST", "/readings", Some(json));
            assert_eq!(status, 200, "{text}");
        });
        if let Some(p) = peer {
            timed(&mut spent[2], &mut || p.write(lines));
        }
    }
    // How the batches' times spread: a few slow ones (the machine's, or a
    // server's own pauses) move a total of a fraction of a second.
    for (who, times) in [("ours, line protocol", &spent[0]), (P::NAME, &spent[2])] {
        if !times.is_empty() {
            println!("({who}: {})", spread(times));
        }
    }
    let rate = |d: &[Duration]| samples.len() as f64 / d.iter().sum::<Duration>().as_secs_f64();
    IngestRates {
        line_protocol: rate(&spent[0]),
        json: rate(&spent[1]),
        theirs: peer.map(|_| rate(&spent[2])),
    }
}

/// One sample of each device of `samples`, a day before its first.
fn warm_up(samples: &[Sample]) -> Vec<Sample> {
    let mut firsts: Vec<&Sample> = Vec::new();
    for s in samples {
        if !firsts.iter().any(|f| f.device == s.device) {
            firsts.push(s);
        }
    }
    firsts
        .into_iter()
        .map(|s| Sample {
            device: s.device.clone(),
            room: s.room.clone(),
            ms: s.ms - DAY_MS,
            values: s.values.clone(),
        })
        .collect()
}

/// A batch's median, 90th and 99th percentile and slowest time, and the
/// share of the total that the slowest 1 % of batches took.
fn spread(times: &[Duration]) -> String {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    let mut slowest_at: Vec<usize> = (0..ms.len()).collect();
    slowest_at.sort_by(|a, b| ms[*b].total_cmp(&ms[*a]));
    slowest_at.truncate(3);
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    let total: f64 = ms.iter().sum();
    let slowest = ms.len().div_ceil(100);
    let tail: f64 = ms[ms.len() - slowest..].iter().sum();
    format!(
        "a batch p50 {:.2} ms, p90 {:.2}, p99 {:.2}, max {:.2}; the slowest 1 % of batches {:.0} % of the total; the slowest are batches {slowest_at:?} of {}",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        tail / total * 100.0,
        ms.len()
    )
}

/// A row of a comparison table: ours, theirs, and the ratio (> 1: ours better).
pub fn row<P: Peer>(
    what: &str,
    ours: f64,
    theirs: Option<f64>,
    unit: &str,
    higher_is_better: bool,
) {
    match theirs {
        Some(t) => {
            let ratio = if higher_is_better { ours / t } else { t / ours };
            println!("| {what} | {ours:.2} {unit} | {t:.2} {unit} | {ratio:.2}× |");
        }
        None => println!(
            "| {what} | {ours:.2} {unit} | ({} not installed) | |",
            P::NAME
        ),
    }
}

/// Ours and theirs taking turns, `rounds` times `runs` each: the medians.
pub fn turns(
    rounds: usize,
    runs: usize,
    mut a: impl FnMut(),
    mut b: Option<impl FnMut()>,
) -> (f64, Option<f64>) {
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        mine.push(median_ms(runs, &mut a));
        if let Some(b) = b.as_mut() {
            theirs.push(median_ms(runs, b));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(mine), (!theirs.is_empty()).then(|| median(theirs)))
}

/// Our server on a file `ours.db` in `dir`, reads open: the server and the file.
pub fn start_ours(dir: &Path) -> (LocalServer, std::path::PathBuf) {
    let db = dir.join("ours.db");
    let server = LocalServer::start(
        &integration_tests::local_server::built_binary(),
        &["--db", db.to_str().unwrap(), "--open-reads"],
        "warn,ingester_local=info",
    );
    (server, db)
}

/// Stops our server cleanly (SIGINT; SQLite checkpoints its WAL when the
/// last connection closes) and reports its bytes on disk, WAL included.
pub fn stop_ours(mut server: LocalServer, db: &Path) -> u64 {
    let _ = std::process::Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status();
    let _ = server.child.wait();
    let wal = db.with_extension("db-wal");
    std::fs::metadata(db).unwrap().len() + std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0)
}
