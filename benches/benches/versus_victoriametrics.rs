//! The embedded store against VictoriaMetrics (Debian's `victoria-metrics`,
//! the strongest single-node time-series database a home user can install
//! here), in the same run, on loopback, on the same readings (issue 24):
//!
//! - 30 days of a smart meter and three room sensors at one reading a
//!   minute (172,800 readings) with realistic noise (random walks at sensor
//!   resolution), posted over HTTP in batches of 1000 lines, the writers
//!   taking turns batch by batch: line protocol to ours and to theirs, and
//!   JSON to a second server of ours;
//! - with `--bench`, also a year of one room sensor (525,600 readings);
//! - one device's raw day, and (with `--bench`) its raw year: ours with
//!   `format=arrays&labels=once` following cursors (an array a column, the
//!   labels given once, as theirs gives a series' values and labels; the
//!   day also in `format=columns`, a row a reading, with the labels once and
//!   in every row, `labels=each`), theirs by `/api/v1/export`; and, last, the raw day
//!   split into the fetch alone and the client's parse alone;
//! - daily min/max/mean over the 30 days and the year: ours `/stats` with
//!   `format=columns` (and as objects, the default, over the year), theirs `aggr_over_time` of `min_over_time`, `max_over_time`,
//!   `avg_over_time` over `[1d]` with a step of a day; the year as objects
//!   also split into the fetch alone and the client's parse alone, and in
//!   Berlin's days (theirs shifted by its winter offset);
//! - the latest reading of each device: ours `/latest`, theirs an instant
//!   query at the end of the data;
//! - bytes on disk: ours after a clean stop, theirs after `force_flush` and
//!   `force_merge`, then a clean stop.
//!
//! `cargo bench -p system-benches --bench versus_victoriametrics` after
//! `cargo build --release -p ingester-local` (`scripts/bench` does both and
//! installs `victoria-metrics` when it is missing). `VERSUS_VM_DAYS=365`
//! posts a year of the household instead of 30 days; `VERSUS_VM_MODEL`
//! (`noisy`, `on-change`, `slow`, `fast`, `smart-meter`) posts one of
//! `noise_models`' models instead of the bench's own, reads its `sensor-2`
//! (the smart meter's `meter-1`) where the household's is read, and a year
//! of that device for the long ranges. Under `cargo test` it runs
//! one day against the debug server, and VictoriaMetrics only if installed.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// `victoria-metrics` on loopback (the tests' own, `integration_tests::victoria`),
/// with what this bench asks of it; stopped on drop.
struct Victoria {
    inner: integration_tests::victoria::Victoria,
    url: String,
}

impl Peer for Victoria {
    const NAME: &'static str = "victoria-metrics";

    fn write_url(&self) -> String {
        format!("{}/write?precision=ms", self.url)
    }
}

impl Victoria {
    fn start(dir: &Path) -> Option<Victoria> {
        let inner = integration_tests::victoria::Victoria::start(dir)?;
        Some(Victoria {
            url: inner.url.clone(),
            inner,
        })
    }

    fn get(&self, path: &str, query: &[(&str, &str)]) -> String {
        let mut request = agent().get(&format!("{}{path}", self.url));
        for (k, v) in query {
            request = request.query(k, v);
        }
        // An export of a year is larger than `into_string` takes.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut request.call().unwrap().into_reader(), &mut text)
            .unwrap();
        text
    }

    /// One device's raw readings between two times: how many values.
    fn export(&self, device: &str, from: i64, to: i64) -> usize {
        let text = self.get(
            "/api/v1/export",
            &[
                ("match[]", &format!("{{device=\"{device}\"}}")),
                ("start", &(from / 1000).to_string()),
                ("end", &((to - 1) / 1000).to_string()),
            ],
        );
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["values"].as_array().unwrap().len()
            })
            .sum()
    }

    /// Daily min, max and mean of each of a device's quantities: how many points.
    fn daily_stats(&self, device: &str, from: i64, to: i64) -> usize {
        let text = self.daily_stats_text(device, from, to);
        let v: Value = serde_json::from_str(&text).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{text}"))
            .iter()
            .map(|s| s["values"].as_array().unwrap().len())
            .sum()
    }

    /// [`Self::daily_stats`]' answer, unparsed.
    fn daily_stats_text(&self, device: &str, from: i64, to: i64) -> String {
        let query = format!(
            "aggr_over_time((\"min_over_time\", \"max_over_time\", \"avg_over_time\"), \
             {{device=\"{device}\"}}[1d]) keep_metric_names"
        );
        self.get(
            "/api/v1/query_range",
            &[
                ("query", &query),
                ("start", &((from + DAY_MS) / 1000).to_string()),
                ("end", &(to / 1000).to_string()),
                ("step", "1d"),
            ],
        )
    }

    /// The newest reading of a device at `at`: how many series answered.
    /// An instant query looks back five minutes: a device that reports on
    /// change may have been silent longer, and is asked for its last value
    /// in a day instead (`sparse`).
    fn latest(&self, device: &str, at: i64, sparse: bool) -> usize {
        let series = format!("{{device=\"{device}\"}}");
        let query = if sparse {
            format!("last_over_time({series}[1d])")
        } else {
            series
        };
        let text = self.get(
            "/api/v1/query",
            &[("query", &query), ("time", &(at / 1000).to_string())],
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        v["data"]["result"].as_array().unwrap().len()
    }

    /// Flushes and merges what it holds, stops cleanly, and reports its bytes on disk.
    fn stop(self) -> u64 {
        self.inner.stop_merged()
    }
}

/// The device a bench's year is of: one of the model's devices, renamed.
const YEAR_DEVICE: &str = "year-device";

/// What the bench posts and reads: a model of `noise_models` (the
/// household is the bench's own), and the device whose raw day and stats
/// are read.
struct Posted {
    /// Its readings over a number of days from a time.
    make: fn(i64, i64) -> Vec<Sample>,
    /// The device read: `sensor-2` where the model has one, else its first.
    focus: String,
    /// A device of it is silent for more than five minutes at a time
    /// (theirs is then asked for a device's latest value in a day: an
    /// instant query looks back five minutes).
    sparse: bool,
    /// A year of `focus` from the model (the household's own year sensor
    /// otherwise: the figures of every earlier run).
    own_year: bool,
}

impl Posted {
    /// The model `key` names (`noise::Model::key`) and its `samples`.
    fn of(key: &str, days: i64, start: i64) -> (Posted, Vec<Sample>) {
        let models = common::noise::models();
        let Some(model) = models.iter().find(|m| m.key == key) else {
            let keys: Vec<&str> = models.iter().map(|m| m.key).collect();
            panic!("VERSUS_VM_MODEL={key}: one of {}", keys.join(", "));
        };
        let samples = (model.make)(days, start);
        let focus = samples
            .iter()
            .find(|s| s.device == "sensor-2")
            .or(samples.first())
            .map_or_else(|| "sensor-2".to_owned(), |s| s.device.clone());
        let mut last: std::collections::HashMap<&str, i64> = Default::default();
        let mut sparse = false;
        for s in &samples {
            if let Some(before) = last.insert(&s.device, s.ms) {
                sparse |= s.ms - before > 5 * 60_000;
            }
        }
        let posted = Posted {
            make: model.make,
            focus,
            sparse,
            own_year: key == "household",
        };
        (posted, samples)
    }

    /// A year of one device from `start`, as `YEAR_DEVICE`: the model made
    /// 30 days at a time (a model of four fast sensors is 12 million
    /// readings a year), each month's walks starting again where the model
    /// starts them.
    fn year(&self, start: i64) -> Vec<Sample> {
        if self.own_year {
            return walking_sensor(YEAR_DEVICE, "attic", start, 365 * 1440, 9);
        }
        let mut out = Vec::new();
        for month in (0..365).step_by(30) {
            let days = (365 - month).min(30);
            for mut s in (self.make)(days, start + month * DAY_MS) {
                if s.device == *self.focus {
                    s.device = YEAR_DEVICE.into();
                    out.push(s);
                }
            }
        }
        out
    }
}

/// A device's readings in a range of `samples`: how many, how many values
/// (theirs keeps a series a quantity), and how many quantities.
struct OfDevice {
    readings: usize,
    values: usize,
    series: usize,
}

fn of_device(samples: &[Sample], device: &str, from: i64, to: i64) -> OfDevice {
    let mut names: Vec<&str> = Vec::new();
    let (mut readings, mut values) = (0, 0);
    for s in samples
        .iter()
        .filter(|s| s.device == device && (from..to).contains(&s.ms))
    {
        readings += 1;
        values += s.values.len();
        for (name, _) in &s.values {
            if !names.contains(name) {
                names.push(name);
            }
        }
    }
    OfDevice {
        readings,
        values,
        series: names.len(),
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    // VERSUS_VM_DAYS=365 (or 1825) holds a year (five years) of the
    // household: how reads keep up with the store's size (issue 44).
    let days = std::env::var("VERSUS_VM_DAYS")
        .ok()
        .map(|d| d.parse::<i64>().expect("VERSUS_VM_DAYS: a number of days"))
        .unwrap_or(if full { 30 } else { 1 });
    let dir = std::env::temp_dir().join(format!("versus-vm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let now_ms = shared::model::Timestamp::now().millis();
    // Days that closed a day ago: sealed at once on our side.
    let end = now_ms - now_ms.rem_euclid(DAY_MS) - DAY_MS;
    let start = end - days * DAY_MS;
    // VERSUS_VM_MODEL names one of `noise_models`' models (issue 80: every
    // figure on every model) instead of the bench's own household.
    let model = std::env::var("VERSUS_VM_MODEL").unwrap_or_else(|_| "household".into());
    let (posted, samples) = Posted::of(&model, days, start);
    println!(
        "(the {model} model: {} read; latest by {})",
        posted.focus,
        if posted.sparse {
            "the last in a day (a device is silent for over five minutes)"
        } else {
            "an instant query"
        }
    );

    let (server, db) = start_ours(&dir);
    let vm_server = Victoria::start(&dir);
    if vm_server.is_none() {
        assert!(
            !full,
            "victoria-metrics is missing: `apt-get install victoria-metrics` (scripts/bench does)"
        );
        println!("(victoria-metrics is not installed: our side only)");
    }
    let vm = vm_server.as_ref();

    println!(
        "| {days} days, {} readings, batches of 1000 over HTTP | ours | VictoriaMetrics | ours ÷ theirs (>1: ours better) |\n|---|---|---|---|",
        samples.len()
    );
    let rates = ingest(&server, &dir, vm, &samples);
    row::<Victoria>(
        "ingest: line protocol to both",
        rates.line_protocol,
        rates.theirs,
        "readings/s",
        true,
    );
    row::<Victoria>(
        "ingest: JSON to ours, line protocol to theirs",
        rates.json,
        rates.theirs,
        "readings/s",
        true,
    );

    // A year of one room sensor, for the long ranges.
    let year_start = end - 365 * DAY_MS;
    let year = full.then(|| posted.year(year_start));
    if let Some(year) = &year {
        let rates = ingest(&server, &dir.join("year"), vm, year);
        row::<Victoria>(
            "ingest of a year of one sensor: line protocol to both",
            rates.line_protocol,
            rates.theirs,
            "readings/s",
            true,
        );
    }
    // Let theirs make everything searchable before reading.
    if let Some(v) = vm {
        v.get("/internal/force_flush", &[]);
    }

    let focus = posted.focus.as_str();
    let day_from = end - DAY_MS;
    let (from, to) = (iso(day_from), iso(end));
    let day = of_device(&samples, focus, day_from, end);
    for format in [ARRAYS_LABELS_ONCE, COLUMNS_LABELS_ONCE, "columns"] {
        assert_eq!(ours_range(&server, focus, &from, &to, format), day.readings);
    }
    if let Some(v) = vm {
        assert_eq!(
            v.export(focus, day_from, end),
            day.values,
            "a value of each series of a day"
        );
    }
    // Nine rounds: a round is a few milliseconds, and the machine's noise
    // moved the median of five by a tenth. Ours an array a column, then a
    // row a reading, the labels given once, then in every row.
    for (format, label) in [
        (
            ARRAYS_LABELS_ONCE,
            &*format!("one device's raw day ({} readings)", day.readings),
        ),
        (
            COLUMNS_LABELS_ONCE,
            "one device's raw day, ours a row a reading",
        ),
        (
            "columns",
            "one device's raw day, ours with labels in every row",
        ),
    ] {
        let (mine, theirs) = turns(
            9,
            5,
            || {
                std::hint::black_box(ours_range(&server, focus, &from, &to, format));
            },
            vm.map(|v| {
                move || {
                    std::hint::black_box(v.export(focus, day_from, end));
                }
            }),
        );
        row::<Victoria>(label, mine, theirs, "ms", false);
    }

    // Our stats in columns, the shape of theirs (and half the bytes to parse).
    let stats_path = |device: &str, from: i64, format: &str| {
        format!(
            "/devices/{device}/stats?from={}&to={}&bucket=1d&format={format}",
            iso(from),
            iso(end)
        )
    };
    if let Some(v) = vm {
        assert_eq!(
            v.daily_stats(focus, start, end),
            3 * day.series * days as usize
        );
    }
    let (mine, theirs) = turns(
        3,
        5,
        || drop(ours_get(&server, &stats_path(focus, start, "columns"))),
        vm.map(|v| {
            move || {
                std::hint::black_box(v.daily_stats(focus, start, end));
            }
        }),
    );
    row::<Victoria>(
        &format!("daily min/max/mean over the {days} days"),
        mine,
        theirs,
        "ms",
        false,
    );

    let mut devices: Vec<&str> = samples.iter().map(|s| s.device.as_str()).collect();
    devices.sort_unstable();
    devices.dedup();
    let devices = &devices;
    if let Some(v) = vm {
        for d in devices {
            assert!(v.latest(d, end - 1, posted.sparse) >= 2, "{d}");
        }
    }
    let (mine, theirs) = turns(
        3,
        20,
        || {
            for d in devices {
                ours_get(&server, &format!("/devices/{d}/latest"));
            }
        },
        vm.map(|v| {
            move || {
                for d in devices {
                    v.latest(d, end - 1, posted.sparse);
                }
            }
        }),
    );
    row::<Victoria>(
        &format!("latest of each of {} devices", devices.len()),
        mine,
        theirs,
        "ms",
        false,
    );

    if let Some(year) = &year {
        let (from, to) = (iso(year_start), iso(end));
        let whole = of_device(year, YEAR_DEVICE, year_start, end);
        assert_eq!(
            ours_range(&server, YEAR_DEVICE, &from, &to, ARRAYS_LABELS_ONCE),
            whole.readings
        );
        // Seven single reads each (a quarter of a second): the median of
        // three moved by a fifth between runs.
        let (mine, theirs) = turns(
            7,
            1,
            || {
                std::hint::black_box(ours_range(
                    &server,
                    YEAR_DEVICE,
                    &from,
                    &to,
                    ARRAYS_LABELS_ONCE,
                ));
            },
            vm.map(|v| {
                move || {
                    std::hint::black_box(v.export(YEAR_DEVICE, year_start, end));
                }
            }),
        );
        row::<Victoria>(
            &format!("one device's raw year ({} readings)", whole.readings),
            mine,
            theirs,
            "ms",
            false,
        );
        if let Some(v) = vm {
            assert_eq!(
                v.daily_stats(YEAR_DEVICE, year_start, end),
                3 * whole.series * 365
            );
        }
        // Ours in columns, then as objects (the default), against theirs.
        for (format, label) in [
            ("columns", "daily min/max/mean over a year"),
            ("objects", "daily min/max/mean over a year, ours as objects"),
        ] {
            let path = stats_path(YEAR_DEVICE, year_start, format);
            let (mine, theirs) = turns(
                3,
                3,
                || drop(ours_get(&server, &path)),
                vm.map(|v| {
                    move || {
                        std::hint::black_box(v.daily_stats(YEAR_DEVICE, year_start, end));
                    }
                }),
            );
            row::<Victoria>(label, mine, theirs, "ms", false);
        }
        // Where the objects' time goes, as for a raw day below: the answer
        // fetched (server and transfer), then the client's parse of it
        // alone. The server does the same work for both formats; the
        // objects' answer is 2.6 times the bytes of the columns', and a
        // client pays for parsing it into maps.
        let path = stats_path(YEAR_DEVICE, year_start, "objects");
        let ours_text = || {
            let (status, text) = ours(&server, "GET", &path, None);
            assert_eq!(status, 200, "{path}: {text}");
            text
        };
        let theirs_text = vm.map(|v| move || v.daily_stats_text(YEAR_DEVICE, year_start, end));
        fetched_then_parsed(
            "daily min/max/mean over a year, as objects",
            (3, 3),
            ours_text,
            theirs_text,
            |text| {
                drop(std::hint::black_box(
                    serde_json::from_str::<Value>(text).unwrap(),
                ))
            },
        );

        // Days in a zone: ours Berlin's local days (tz=Europe/Berlin, each
        // a day's hours, computed from the sealed blocks), theirs the same
        // windows of a day shifted by Berlin's winter offset (a fixed step
        // cannot follow summer time: their summer days are an hour off).
        let path = format!(
            "{}&tz=Europe/Berlin",
            stats_path(YEAR_DEVICE, year_start, "columns")
        );
        const BERLIN_WINTER_MS: i64 = 3_600_000;
        let (mine, theirs) = turns(
            5,
            1,
            || drop(ours_get(&server, &path)),
            vm.map(|v| {
                move || {
                    std::hint::black_box(v.daily_stats(
                        YEAR_DEVICE,
                        year_start - BERLIN_WINTER_MS,
                        end - BERLIN_WINTER_MS,
                    ));
                }
            }),
        );
        row::<Victoria>(
            "daily min/max/mean over a year, in Berlin's days",
            mine,
            theirs,
            "ms",
            false,
        );
    }

    // Where a raw day's time goes (last, so that it moves no other row in
    // time): the answer fetched (server and transfer), then the client's
    // parse of it alone (into `serde_json::Value`, as above).
    let day_page = format!(
        "/devices/{focus}/readings?from={from}&to={to}&limit=10000&format={ARRAYS_LABELS_ONCE}"
    );
    let ours_text = || ours(&server, "GET", &day_page, None).1;
    let theirs_text = vm.map(|v| {
        move || {
            v.get(
                "/api/v1/export",
                &[
                    ("match[]", &*format!("{{device=\"{focus}\"}}")),
                    ("start", &(day_from / 1000).to_string()),
                    ("end", &((end - 1) / 1000).to_string()),
                ],
            )
        }
    });
    // Their export is a JSON object a line.
    fetched_then_parsed(
        "one device's raw day",
        (5, 20),
        ours_text,
        theirs_text,
        |text| {
            for line in text.lines() {
                drop(std::hint::black_box(
                    serde_json::from_str::<Value>(line).unwrap(),
                ));
            }
        },
    );

    // Bytes on disk once stopped.
    let ours_bytes = stop_ours(server, &db);
    let readings = samples.len() + year.as_ref().map_or(0, Vec::len);
    let theirs_bytes = vm_server.map(Victoria::stop);
    let per = |bytes: u64| bytes as f64 / readings as f64;
    row::<Victoria>(
        &format!("bytes on disk per reading, all {readings} readings"),
        per(ours_bytes),
        theirs_bytes.map(per),
        "B",
        false,
    );
    println!("(bytes: ours {ours_bytes}, theirs {theirs_bytes:?})");
    // VERSUS_VM_KEEP=1 keeps the files, to look into them.
    if std::env::var_os("VERSUS_VM_KEEP").is_some() {
        println!("(kept: {})", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Where an answer's time goes: fetched (server and transfer), then the
/// client's parse of it alone (into `serde_json::Value`; theirs by
/// `parse_theirs`), in `turns` of `(rounds, runs)`; rows named after
/// `what`, and both answers' sizes.
fn fetched_then_parsed(
    what: &str,
    (rounds, runs): (usize, usize),
    ours_text: impl Fn() -> String,
    theirs_text: Option<impl Fn() -> String>,
    parse_theirs: impl Fn(&str),
) {
    let (mine, theirs) = turns(
        rounds,
        runs,
        || drop(std::hint::black_box(ours_text())),
        theirs_text
            .as_ref()
            .map(|f| move || drop(std::hint::black_box(f()))),
    );
    row::<Victoria>(&format!("{what}, fetched only"), mine, theirs, "ms", false);
    let (our_answer, their_answer) = (ours_text(), theirs_text.map(|f| f()));
    let (mine, theirs) = turns(
        rounds,
        runs,
        || {
            drop(std::hint::black_box(
                serde_json::from_str::<Value>(&our_answer).unwrap(),
            ))
        },
        their_answer.as_deref().map(|text| || parse_theirs(text)),
    );
    row::<Victoria>(
        &format!("{what}, its answer parsed only (client)"),
        mine,
        theirs,
        "ms",
        false,
    );
    println!(
        "({what}: ours {} bytes, theirs {:?})",
        our_answer.len(),
        their_answer.as_ref().map(String::len)
    );
}
