//! `alerts replay` on both engines (issue 42, docs/alerts.md): the four
//! household questions, and energy over a window, written as rules and
//! evaluated every minute over two hours of readings made to break them,
//! fire and resolve at exactly the minutes they should.

use integration_tests::{on_every_store, TestStore};
use shared::domain::alerts::{Rule, Transition};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, TimeRange, Timestamp};
use std::time::Duration;

const MINUTE: i64 = 60_000;

/// Three days ago, on the hour.
fn start() -> i64 {
    let now = Timestamp::now().millis();
    now - now.rem_euclid(3_600_000) - 3 * 86_400_000
}

fn at(minute: i64) -> Timestamp {
    Timestamp::from_millis(start() + minute * MINUTE).unwrap()
}

fn climate(device: &str, room: &str, minute: i64, temperature: f64, humidity: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse(device).unwrap(),
        timestamp: at(minute),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), temperature, humidity)
            .unwrap(),
    }
}

/// Two hours of a household made to break each rule once.
fn readings() -> Vec<Reading> {
    let mut out = Vec::new();
    let mut kwh = 100.0f64;
    for m in 0..120 {
        // Bedroom: cold from 30 to 59, 16.2 °C (not yet clear) to 69, warm after.
        let t = match m {
            30..=59 => 15.5,
            60..=69 => 16.2,
            _ if m < 30 => 18.0,
            _ => 17.0,
        };
        out.push(climate("th-1", "bedroom", m, t, 50.0));
        // Bathroom: damp from 10 to 49 and 55 to 59.
        let h = if (10..50).contains(&m) || (55..60).contains(&m) {
            75.0
        } else {
            65.0
        };
        out.push(climate("th-2", "bathroom", m, 21.0, h));
        // Hall: silent after minute 39.
        if m < 40 {
            out.push(climate("th-3", "hall", m, 20.0, 50.0));
        }
        // The meter: 9.5 kW from 45 to 47; 0.1 kWh a minute from 80 to 99.
        kwh += if (80..100).contains(&m) { 0.1 } else { 0.01 };
        let watts = if (45..48).contains(&m) { 9500.0 } else { 500.0 };
        out.push(Reading {
            device_id: DeviceId::parse("meter-main").unwrap(),
            timestamp: at(m),
            measurement: Measurement::new(
                None,
                vec![(Quantity::EnergyBought, kwh), (Quantity::Power, watts)],
            )
            .unwrap(),
        });
    }
    out
}

fn rules() -> Vec<Rule> {
    let yaml = serde_json::json!({
        "bedroom-cold": {"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                         "below": 16, "clear": 16.5, "for": "10m"},
        "mould": {"kind": "threshold", "scope": {"type": "climate"}, "quantity": "humidity",
                  "above": 70, "for": "20m", "keep_firing_for": "5m"},
        "fuse": {"kind": "threshold", "scope": {"device": "meter-main"}, "quantity": "current_w", "above": 9000},
        "quiet": {"kind": "no_data", "scope": {"type": "climate"}, "for": "30m"},
        "hungry": {"kind": "energy", "scope": {"device": "meter-main"}, "window": "10m", "above": 0.5},
    });
    yaml.as_object()
        .unwrap()
        .iter()
        .map(|(name, rule)| Rule::parse(name, rule).unwrap())
        .collect()
}

async fn the_household_questions_fire_and_resolve_when_they_should<S: TestStore>() {
    let store = S::fresh("alerts-replay").await;
    let readings = readings();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    if !store.capabilities().registry_follows_writes {
        let plan = shared::domain::registry::plan(readings.iter().enumerate());
        assert!(shared::registry::apply(&store, &plan).await.is_empty());
    }
    let range = TimeRange::new(at(0), at(120)).unwrap();
    let events = shared::alerts::replay(&store, &rules(), range, Duration::from_secs(60))
        .await
        .unwrap();
    let minute = |t: Timestamp| (t.millis() - start()) / MINUTE;
    let mut got: Vec<(i64, String, String, Transition)> = events
        .iter()
        .map(|e| {
            (
                minute(e.at),
                e.rule.clone(),
                e.device.to_string(),
                e.transition,
            )
        })
        .collect();
    got.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    use Transition::*;
    let want: Vec<(i64, &str, &str, Transition)> = vec![
        (10, "mould", "th-2", Pending),
        (30, "bedroom-cold", "th-1", Pending),
        (30, "mould", "th-2", Firing),
        (40, "bedroom-cold", "th-1", Firing),
        (45, "fuse", "meter-main", Firing),
        (48, "fuse", "meter-main", Resolved),
        // Humid again at 55, inside keep_firing_for: still the one alert.
        (65, "mould", "th-2", Resolved),
        (69, "quiet", "th-3", Firing),
        (70, "bedroom-cold", "th-1", Resolved),
        (84, "hungry", "meter-main", Firing),
        (105, "hungry", "meter-main", Resolved),
    ];
    let want: Vec<(i64, String, String, Transition)> = want
        .into_iter()
        .map(|(m, r, d, t)| (m, r.to_owned(), d.to_owned(), t))
        .collect();
    assert_eq!(got, want);
    // The values seen: the fuse at 9.5 kW, the hall silent for 30 minutes.
    let fuse = events.iter().find(|e| e.rule == "fuse").unwrap();
    assert_eq!(fuse.value, Some(9500.0));
    let quiet = events.iter().find(|e| e.rule == "quiet").unwrap();
    assert_eq!(quiet.value, Some(1800.0));
    assert_eq!(quiet.room, Some(RoomId::parse("hall").unwrap()));
}

/// The rules both can state: ours, and the same in PromQL for vmalert.
const BOTH: [(&str, &str, &str); 5] = [
    (
        "cold",
        r#"{"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature", "below": 16, "for": "10m"}"#,
        r#"climate_temperature{room="bedroom"} < 16"#,
    ),
    (
        "damp",
        r#"{"kind": "threshold", "scope": {"type": "climate"}, "quantity": "humidity", "above": 70, "for": "20m"}"#,
        "climate_humidity > 70",
    ),
    (
        "fuse",
        r#"{"kind": "threshold", "scope": {"device": "meter-main"}, "quantity": "current_w", "above": 9000}"#,
        r#"power_current_w{device_id="meter-main"} > 9000"#,
    ),
    (
        "quiet",
        r#"{"kind": "no_data", "scope": {"type": "climate"}, "for": "30m"}"#,
        "lag(climate_temperature[1d]) >= 1800",
    ),
    (
        "hungry",
        r#"{"kind": "energy", "scope": {"device": "meter-main"}, "window": "10m", "above": 0.5}"#,
        r#"increase(power_cumulative_kwh_p{device_id="meter-main"}[10m]) > 0.5"#,
    ),
];

/// `for` of each rule, for vmalert's file.
fn vmalert_for(rule: &str) -> &'static str {
    match rule {
        "cold" => "10m",
        "damp" => "20m",
        _ => "0s",
    }
}

/// Each vmalert series (rule, device): the minutes it was pending, and firing.
type VmalertStates = std::collections::BTreeMap<(String, String), (Vec<i64>, Vec<i64>)>;

/// Each series' transitions, from the minutes it was pending and firing.
fn transitions(states: &VmalertStates) -> Vec<(i64, String, String, Transition)> {
    let mut out = Vec::new();
    for ((rule, device), (pending, firing)) in states {
        let mut before = 0; // 0 inactive, 1 pending, 2 firing
                            // vmalert evaluated minutes 0 to 119, as ours did.
        for m in 0..120 {
            let now = if firing.contains(&m) {
                2
            } else if pending.contains(&m) {
                1
            } else {
                0
            };
            let t = match (before, now) {
                (0, 1) => Some(Transition::Pending),
                (0 | 1, 2) => Some(Transition::Firing),
                (2, 0 | 1) => Some(Transition::Resolved),
                _ => None,
            };
            if let Some(t) = t {
                out.push((m, rule.clone(), device.clone(), t));
            }
            before = now;
        }
    }
    out.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
    out
}

/// vmalert's replay (Debian's `victoria-metrics` ships it) over the same
/// readings, exported from our store into VictoriaMetrics: every series
/// pending, firing and resolved at the same evaluation as ours.
async fn the_replay_equals_vmalert_s<S: TestStore>() {
    assert!(
        std::path::Path::new("/usr/bin/vmalert").exists(),
        "vmalert is missing: scripts/install-test-tools installs Debian's victoria-metrics"
    );
    let store = S::fresh("alerts-vmalert").await;
    let readings = readings();
    assert!(store.write_readings(&readings).await.unwritten.is_empty());
    if !store.capabilities().registry_follows_writes {
        let plan = shared::domain::registry::plan(readings.iter().enumerate());
        assert!(shared::registry::apply(&store, &plan).await.is_empty());
    }
    let rules: Vec<Rule> = BOTH
        .iter()
        .map(|(name, json, _)| Rule::parse(name, &serde_json::from_str(json).unwrap()).unwrap())
        .collect();
    let range = TimeRange::new(at(0), at(120)).unwrap();
    let ours = shared::alerts::replay(&store, &rules, range, Duration::from_secs(60))
        .await
        .unwrap();
    let minute = |ms: i64| (ms - start()) / MINUTE;
    let mut ours: Vec<(i64, String, String, Transition)> = ours
        .iter()
        .map(|e| {
            (
                minute(e.at.millis()),
                e.rule.clone(),
                e.device.to_string(),
                e.transition,
            )
        })
        .collect();
    ours.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));

    // The same readings into VictoriaMetrics, as our export writes them.
    let engine = if S::SEALS_CLOSED_DAYS {
        "sqlite"
    } else {
        "dynalite"
    };
    let dir = std::env::temp_dir().join(format!("alerts-vmalert-{engine}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let vm = integration_tests::victoria::Victoria::start(&dir).unwrap();
    let mut lines = Vec::new();
    let all = shared::export::Selection {
        devices: None,
        range: TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
    };
    shared::export::export(
        &store,
        &all,
        shared::export::Format::LineProtocol,
        &mut lines,
        |_| {},
    )
    .await
    .unwrap();
    vm.write(&String::from_utf8(lines).unwrap());
    let mut file = String::from("groups:\n  - name: household\n    interval: 1m\n    rules:\n");
    for (name, _, expr) in BOTH {
        file.push_str(&format!(
            "      - alert: {name}\n        expr: '{expr}'\n        for: {}\n",
            vmalert_for(name)
        ));
    }
    let rules_file = dir.join("rules.yml");
    std::fs::write(&rules_file, file).unwrap();
    let rfc = |m: i64| at(m).to_string().replace(".000Z", "Z");
    let out = std::process::Command::new("/usr/bin/vmalert")
        .arg(format!("-rule={}", rules_file.display()))
        .arg(format!("-datasource.url={}", vm.url))
        .arg("-datasource.queryStep=1m")
        // Never its default :8880, which another program may hold.
        .arg(format!(
            "-httpListenAddr=127.0.0.1:{}",
            integration_tests::mosquitto::free_port()
        ))
        .arg(format!("-remoteWrite.url={}", vm.url))
        .arg(format!("-replay.timeFrom={}", rfc(0)))
        .arg(format!("-replay.timeTo={}", rfc(119)))
        .args([
            "-replay.rulesDelay=0s",
            "-replay.disableProgressBar",
            "-loggerLevel=ERROR",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // vmalert writes ALERTS{alertname, alertstate, labels} at each evaluation
    // a series is pending or firing; flushed by its exit.
    // Read until two reads agree: everything vmalert wrote is searchable.
    let mut states = VmalertStates::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        vm.write("");
        let before = std::mem::take(&mut states);
        for (labels, points) in vm.export("ALERTS") {
            let key = (
                labels["alertname"].as_str().unwrap().to_owned(),
                labels["device_id"].as_str().unwrap().to_owned(),
            );
            let entry: &mut (Vec<i64>, Vec<i64>) = states.entry(key).or_default();
            let minutes = points.iter().map(|(t, _)| minute(*t));
            match labels["alertstate"].as_str().unwrap() {
                "pending" => entry.0.extend(minutes),
                _ => entry.1.extend(minutes),
            }
        }
        if (!states.is_empty() && states == before) || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let theirs = transitions(&states);
    assert!(theirs.len() >= 8, "vmalert's: {theirs:?}");
    assert_eq!(ours, theirs);
    drop(vm);
    let _ = std::fs::remove_dir_all(&dir);
}

on_every_store!(
    the_household_questions_fire_and_resolve_when_they_should,
    the_replay_equals_vmalert_s
);
