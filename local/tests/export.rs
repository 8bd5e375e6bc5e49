//! `ingester-local export` and `import` as a user runs them (issue 41):
//! a file gzipped by its name, read back into another store bit for bit;
//! CSV to standard output; a store file that is not there is an error and
//! writes nothing. And the export is line protocol the peers take unchanged:
//! Debian's InfluxDB 1.6 and VictoriaMetrics, each sent the file as it is,
//! hold every reading's every value (InfluxDB exactly; VictoriaMetrics to
//! its documented precision of 12 significant digits).

use integration_tests::household::{household, DEVICES};
use integration_tests::{every_reading, influxd::Influxd, victoria::Victoria};
use shared::model::{DeviceId, Name, Reading, RoomId};
use shared::store::ReadingStore;
use shared::store::RegistryStore;
use shared::store::SqliteStore;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_ingester-local");

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("AWS_REGION", "us-east-1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The summary an export writes to stderr, which is all of its stderr: a
/// script reads it. (A CI run once failed here when the sealer's "sealed
/// closed days" came first; one-shot commands now log warnings only.)
fn summary(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A store file holding two days of a household, with names, and the store
/// that wrote them: while it is open, its closed days are not yet sealed.
async fn household_file(path: &Path) -> (Vec<Reading>, SqliteStore) {
    let readings = household(41, 48);
    let store = SqliteStore::open(path).unwrap();
    for chunk in readings.chunks(1000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    store
        .set_device_profile(
            &DeviceId::parse("meter-main").unwrap(),
            Some(&Name::parse("Haupt-Zähler").unwrap()),
            None,
        )
        .await
        .unwrap();
    store
        .set_room_name(
            &RoomId::parse("cellar").unwrap(),
            Some(&Name::parse("Keller").unwrap()),
        )
        .await
        .unwrap();
    (readings, store)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn an_export_gzipped_by_its_name_imports_bit_for_bit_and_csv_goes_to_stdout() {
    let d = dir("cli");
    let (source, copy, file) = (d.join("a.db"), d.join("b.db"), d.join("household.lp.gz"));
    // Exported while the store that wrote it is open, as from a running
    // server: the export's own store seals the closed days as it opens.
    let (readings, writer) = household_file(&source).await;
    let out = run(&["export", "--db", s(&source), "--out", s(&file)]);
    drop(writer);
    ok(&out);
    let summary: serde_json::Value = summary(&out);
    assert_eq!(summary["readings"], readings.len());
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip, as the name says");
    assert!(!d.join(".household.lp.gz.partial").exists());
    let imported: serde_json::Value =
        serde_json::from_str(&ok(&run(&["import", s(&file), "--db", s(&copy)]))).unwrap();
    assert_eq!(imported["readings"], readings.len());
    assert_eq!(imported["names"], 2);
    let (a, b) = (
        SqliteStore::open(&source).unwrap(),
        SqliteStore::open(&copy).unwrap(),
    );
    for device in DEVICES {
        let device = DeviceId::parse(device).unwrap();
        assert_eq!(
            every_reading(&a, &device).await,
            every_reading(&b, &device).await
        );
    }
    let registry = b.load_registry().await.unwrap();
    assert_eq!(
        registry.devices[&DeviceId::parse("meter-main").unwrap()]
            .name
            .as_deref(),
        Some("Haupt-Zähler")
    );
    // CSV of one device to standard output, a header and a row per reading.
    let csv = ok(&run(&[
        "export",
        "--db",
        s(&source),
        "--format",
        "csv",
        "--device",
        "water-meter",
    ]));
    let water = readings
        .iter()
        .filter(|r| r.device_id.as_str() == "water-meter")
        .count();
    assert_eq!(csv.lines().count(), water + 1);
    assert!(
        csv.starts_with("time,device_id,room,cumulative_kwh_p,"),
        "{csv}"
    );
    // A wrong file name is an error, and makes no store.
    let missing = d.join("typo.db");
    let out = run(&["export", "--db", s(&missing), "--out", s(&d.join("x.lp"))]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such store file"));
    assert!(!missing.exists() && !d.join("x.lp").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// `--table`: a table exported through the CLI and imported into another
/// table holds the same readings.
#[tokio::test]
async fn a_table_exports_and_imports_through_the_cli() {
    let readings = household(5, 48);
    let source = integration_tests::dynalite_table_with("export-cli-out", &readings).await;
    let endpoint = integration_tests::dynalite();
    let target = integration_tests::fresh_store(&endpoint, "export-cli-in").await;
    let d = dir("table");
    let file = d.join("table.lp.gz");
    let out = run(&[
        "export",
        "--table",
        source.table(),
        "--dynamodb-endpoint",
        &endpoint,
        "--out",
        s(&file),
    ]);
    ok(&out);
    let summary: serde_json::Value = summary(&out);
    assert_eq!(summary["readings"], readings.len());
    let imported: serde_json::Value = serde_json::from_str(&ok(&run(&[
        "import",
        s(&file),
        "--table",
        target.table(),
        "--dynamodb-endpoint",
        &endpoint,
    ])))
    .unwrap();
    assert_eq!(imported["readings"], readings.len());
    for device in DEVICES {
        let device = DeviceId::parse(device).unwrap();
        let a = every_reading(&source, &device).await;
        assert!(!a.is_empty());
        assert_eq!(a, every_reading(&target, &device).await, "{device}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// (measurement, device, room, time in ms, field) → value: what a store of
/// series holds of the readings.
type Points = BTreeMap<(String, String, String, i64, String), f64>;

fn expected(readings: &[Reading]) -> Points {
    let mut out = Points::new();
    for r in readings {
        for (q, v) in r.measurement.values() {
            let room = r.room().map(|r| r.to_string()).unwrap_or_default();
            let key = (
                q.family().as_str().to_owned(),
                r.device_id.to_string(),
                room,
                r.timestamp.millis(),
                q.name().to_owned(),
            );
            out.insert(key, *v);
        }
    }
    out
}

#[tokio::test]
async fn influxdb_and_victoriametrics_take_the_export_unchanged() {
    assert!(
        integration_tests::influxd::binary().is_some(),
        "influxd is missing: scripts/install-test-tools installs Debian's influxdb"
    );
    assert!(
        integration_tests::victoria::binary().is_some(),
        "victoria-metrics is missing: scripts/install-test-tools installs Debian's victoria-metrics"
    );
    let d = dir("peers");
    let (source, file) = (d.join("a.db"), d.join("household.lp"));
    let readings = household_file(&source).await.0;
    ok(&run(&["export", "--db", s(&source), "--out", s(&file)]));
    let mut text = String::new();
    std::fs::File::open(&file)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let want = expected(&readings);

    // InfluxDB: the file as it is, in one write; every value exactly.
    let influx = Influxd::start(&d, "export").unwrap();
    influx.write("export", "ns", &text);
    let mut held = Points::new();
    for measurement in ["power", "climate", "meter", "device"] {
        let answer = influx.query(&[
            ("db", "export"),
            ("epoch", "ms"),
            ("q", &format!("SELECT * FROM \"{measurement}\"")),
        ]);
        let Some(series) = answer["results"][0]["series"].as_array() else {
            continue;
        };
        for serie in series {
            let columns: Vec<&str> = serie["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            for row in serie["values"].as_array().unwrap() {
                let cell = |name: &str| &row[columns.iter().position(|c| *c == name).unwrap()];
                let device = cell("device_id").as_str().unwrap().to_owned();
                let room = if columns.contains(&"room") {
                    cell("room").as_str().unwrap_or("").to_owned()
                } else {
                    String::new()
                };
                let time = cell("time").as_i64().unwrap();
                for (i, column) in columns.iter().enumerate() {
                    if ["time", "device_id", "room"].contains(column) || row[i].is_null() {
                        continue;
                    }
                    let key = (
                        measurement.to_owned(),
                        device.clone(),
                        room.clone(),
                        time,
                        column.to_string(),
                    );
                    held.insert(key, row[i].as_f64().unwrap());
                }
            }
        }
    }
    assert_eq!(held.len(), want.len(), "InfluxDB's count of values");
    assert_eq!(held, want, "InfluxDB holds every value exactly");

    // VictoriaMetrics: the same file on /write; a series per field.
    let vm = Victoria::start(&d).unwrap();
    vm.write(&text);
    let mut held = Points::new();
    for (labels, points) in vm.export("{__name__=~\".+\"}") {
        let name = labels["__name__"].as_str().unwrap();
        let (measurement, field) = name.split_once('_').unwrap();
        let device = labels["device_id"].as_str().unwrap().to_owned();
        let room = labels["room"].as_str().unwrap_or("").to_owned();
        for (time, value) in points {
            let key = (
                measurement.to_owned(),
                device.clone(),
                room.clone(),
                time,
                field.to_owned(),
            );
            held.insert(key, value);
        }
    }
    assert_eq!(held.len(), want.len(), "VictoriaMetrics' count of values");
    for (key, value) in &want {
        let got = held
            .get(key)
            .unwrap_or_else(|| panic!("VictoriaMetrics lacks {key:?}"));
        // VictoriaMetrics keeps a value as a decimal of 12 significant
        // digits (its docs: "precision"); ours keeps the f64.
        assert!(
            (got - value).abs() <= value.abs() * 1e-12,
            "{key:?}: {got} in VictoriaMetrics, {value} exported"
        );
    }
    drop(vm);
    drop(influx);
    let _ = std::fs::remove_dir_all(&d);
}
