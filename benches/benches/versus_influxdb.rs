//! The embedded store against InfluxDB 1.x (Debian's `influxdb`, what a home
//! server user would otherwise install), in the same run, on loopback, with
//! the same readings (issue 13):
//!
//! - 30 days of a smart meter and three room sensors at 1 reading per minute
//!   (172,800 readings), posted over HTTP in batches of 1000: line protocol
//!   to `ingester-local serve --db FILE` and to `influxd`, JSON to a second
//!   server of ours (`common::ingest`, shared with the VictoriaMetrics bench);
//! - one device's day of raw readings (1440), following cursors on our side;
//! - daily min/max/mean of one room sensor over the 30 days;
//! - the latest reading of each device;
//! - bytes on disk once both servers have stopped;
//! - with `--bench`, also a year of one room sensor (525,600 readings) and its
//!   daily min/max/mean over the year.
//!
//! `cargo bench -p system-benches --bench versus_influxdb` after
//! `cargo build --release -p ingester-local` (`scripts/bench` does both and
//! installs `influxdb` when `influxd` is missing). Under `cargo test` it runs one
//! day of the scenario against the debug server, and InfluxDB only if installed.

mod common;

use common::*;
use integration_tests::influxd::Influxd;
use serde_json::Value;
use std::path::Path;

/// `influxd` on loopback (`integration_tests::influxd`), as a peer of the bench.
struct Influx(Influxd);

impl Peer for Influx {
    const NAME: &'static str = "influxd";

    fn write_url(&self) -> String {
        format!("{}/write?db=bench&precision=ms", self.0.url)
    }
}

impl Influx {
    fn start(dir: &Path) -> Option<Influx> {
        Influxd::start(dir, "bench").map(Influx)
    }

    fn query(&self, q: &str) -> Value {
        self.0.query(&[("db", "bench"), ("q", q), ("epoch", "ms")])
    }

    /// Stops it and reports its bytes on disk.
    fn stop(self) -> u64 {
        self.0.stop()
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let days = if full { 30 } else { 1 };
    let dir = std::env::temp_dir().join(format!("versus-influxdb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let now_ms = shared::model::Timestamp::now().millis();
    let today = now_ms - now_ms.rem_euclid(DAY_MS);
    let start = today - days * DAY_MS;
    let samples = household(days, start);

    let (server, db) = start_ours(&dir);
    let influx_server = Influx::start(&dir);
    if influx_server.is_none() {
        assert!(
            !full,
            "influxd is missing: `apt-get install influxdb` (scripts/bench does)"
        );
        println!("(influxd is not installed: our side only)");
    }
    let influx = influx_server.as_ref();

    println!(
        "| {} days, {} readings, batches of 1000 over HTTP | ours | InfluxDB 1.x | ours ÷ InfluxDB (>1: ours better) |\n|---|---|---|---|",
        days,
        samples.len()
    );
    let rates = ingest(&server, &dir, influx, &samples);
    row::<Influx>(
        "ingest: JSON to ours, line protocol to InfluxDB",
        rates.json,
        rates.theirs,
        "readings/s",
        true,
    );
    row::<Influx>(
        "ingest: line protocol to both",
        rates.line_protocol,
        rates.theirs,
        "readings/s",
        true,
    );

    let day_from = today - DAY_MS;
    let (from, to) = (iso(day_from), iso(today));
    for format in ["objects", "columns"] {
        assert_eq!(ours_range(&server, "sensor-2", &from, &to, format), 1440);
    }
    let q_day = format!(
        "SELECT temperature, humidity FROM climate WHERE device = 'sensor-2' AND time >= {}ms AND time < {}ms",
        day_from, today
    );
    if let Some(i) = influx {
        let n = i.query(&q_day)["results"][0]["series"][0]["values"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(n, 1440, "InfluxDB has the same day");
    }
    // Ours and theirs take turns, so that both see the same machine load.
    let (mut ours_objects, mut ours_columns, mut theirs) = (vec![], vec![], vec![]);
    for _ in 0..5 {
        ours_objects.push(median_ms(5, || {
            ours_range(&server, "sensor-2", &from, &to, "objects");
        }));
        ours_columns.push(median_ms(5, || {
            ours_range(&server, "sensor-2", &from, &to, "columns");
        }));
        if let Some(i) = influx {
            theirs.push(median_ms(5, || drop(i.query(&q_day))));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let theirs_day = influx.map(|_| median(theirs));
    row::<Influx>(
        "one device's day (1440 readings), objects (the default)",
        median(ours_objects),
        theirs_day,
        "ms",
        false,
    );
    row::<Influx>(
        "one device's day (1440 readings), `format=columns` (InfluxDB's shape)",
        median(ours_columns),
        theirs_day,
        "ms",
        false,
    );

    let stats_path = |from: i64| {
        format!(
            "/devices/sensor-2/stats?from={}&to={}&bucket=1d",
            iso(from),
            iso(today)
        )
    };
    let q_stats = |from: i64, device: &str| {
        format!(
            "SELECT min(temperature), max(temperature), mean(temperature), min(humidity), max(humidity), mean(humidity) \
             FROM climate WHERE device = '{device}' AND time >= {from}ms AND time < {today}ms GROUP BY time(1d)"
        )
    };
    let ours_stats = median_ms(5, || drop(ours_get(&server, &stats_path(start))));
    let theirs_stats = influx.map(|i| median_ms(5, || drop(i.query(&q_stats(start, "sensor-2")))));
    row::<Influx>(
        &format!("daily min/max/mean over the {days} days"),
        ours_stats,
        theirs_stats,
        "ms",
        false,
    );

    // The same daily means in InfluxQL, to both (ours tags the device `device_id`).
    let influxql = |tag: &str, device: &str, from: i64| {
        format!(
            "SELECT mean(temperature), min(temperature), max(temperature) FROM climate \
             WHERE {tag} = '{device}' AND time >= {from}ms AND time < {today}ms GROUP BY time(1d)"
        )
    };
    let influxql_row = |label: &str, device: &str, from: i64, rounds: usize| {
        let ours_q = influxql("device_id", device, from);
        let days_answered = ours_influxql(&server, &ours_q)["results"][0]["series"][0]["values"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(days_answered as i64, (today - from) / DAY_MS, "{ours_q}");
        let ours = median_ms(rounds, || drop(ours_influxql(&server, &ours_q)));
        let theirs = influx.map(|i| {
            let q = influxql("device", device, from);
            median_ms(rounds, || drop(i.query(&q)))
        });
        row::<Influx>(label, ours, theirs, "ms", false);
    };
    influxql_row(
        &format!("InfluxQL GROUP BY time(1d) over the {days} days"),
        "sensor-2",
        start,
        5,
    );

    let devices = ["meter-1", "sensor-2", "sensor-3", "sensor-4"];
    let ours_latest = median_ms(20, || {
        for d in devices {
            ours_get(&server, &format!("/devices/{d}/latest"));
        }
    });
    let theirs_latest = influx.map(|i| {
        median_ms(20, || {
            for d in devices {
                let m = if d.starts_with("meter") {
                    "power"
                } else {
                    "climate"
                };
                drop(i.query(&format!("SELECT last(*) FROM {m} WHERE device = '{d}'")));
            }
        })
    });
    row::<Influx>(
        "latest of each of 4 devices",
        ours_latest,
        theirs_latest,
        "ms",
        false,
    );

    if full {
        // A year of one room sensor, for the long ranges.
        let year_start = today - 365 * DAY_MS;
        let year: Vec<Sample> = (0..365 * 1440)
            .map(|i| {
                climate(
                    "year-sensor",
                    "attic",
                    year_start + i * 60_000,
                    i as f64,
                    0.5,
                )
            })
            .collect();
        let rates = ingest(&server, &dir.join("year"), influx, &year);
        row::<Influx>(
            "ingest of a year of one sensor (525,600): JSON to ours",
            rates.json,
            rates.theirs,
            "readings/s",
            true,
        );
        row::<Influx>(
            "ingest of a year of one sensor: line protocol to both",
            rates.line_protocol,
            rates.theirs,
            "readings/s",
            true,
        );
        let path = format!(
            "/devices/year-sensor/stats?from={}&to={}&bucket=1d",
            iso(year_start),
            iso(today)
        );
        let ours_year = median_ms(3, || drop(ours_get(&server, &path)));
        let theirs_year =
            influx.map(|i| median_ms(3, || drop(i.query(&q_stats(year_start, "year-sensor")))));
        row::<Influx>(
            "daily min/max/mean over a year",
            ours_year,
            theirs_year,
            "ms",
            false,
        );
        influxql_row(
            "InfluxQL GROUP BY time(1d) over a year (issue 27: ≥ 10×)",
            "year-sensor",
            year_start,
            5,
        );
    }

    // Bytes on disk once stopped.
    let ours_bytes = stop_ours(server, &db);
    let readings = samples.len() + if full { 365 * 1440 } else { 0 };
    let theirs_bytes = influx_server.map(Influx::stop);
    let per = |bytes: u64| bytes as f64 / readings as f64;
    match theirs_bytes {
        Some(t) => println!(
            "| bytes on disk per reading, all {readings} readings | {:.1} B ({ours_bytes} B) | {:.1} B ({t} B) | {:.2}× |",
            per(ours_bytes),
            per(t),
            t as f64 / ours_bytes as f64
        ),
        None => println!(
            "| bytes on disk per reading, all {readings} readings | {:.1} B ({ours_bytes} B) | | |",
            per(ours_bytes)
        ),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
