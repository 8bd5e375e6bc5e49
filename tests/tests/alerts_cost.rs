//! What an alert evaluation costs on DynamoDB (issue 42, docs/cost.md,
//! "Alerts"): a household of eight devices (a meter every minute, a plug and
//! six room sensors every five minutes) over three hours, through the real
//! write path and stream functions on dynalite; then one evaluation of each
//! household rule alone, and of all five, metered as DynamoDB reports it
//! (`ReturnConsumedCapacity`). The test renders the table and holds
//! docs/cost.md to it; `COST_TABLE_WRITE=1` writes it there instead.

use integration_tests::{dynalite, fresh_store, write_through_stream_functions};
use shared::alerts::evaluate;
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
use shared::notify::Receivers;
use shared::store::metering::{metered, metered_writes};
use shared::store::{Alerts, DynamoStore};
use std::fmt::Write;

const MINUTE: i64 = 60_000;
const ROOMS: [&str; 6] = ["bedroom", "bathroom", "kitchen", "living", "study", "hall"];

fn household(start: i64) -> Vec<Reading> {
    let at = |m: i64| Timestamp::from_millis(start + m * MINUTE).unwrap();
    let mut out = Vec::new();
    for m in 0..180 {
        out.push(Reading {
            device_id: DeviceId::parse("meter-main").unwrap(),
            timestamp: at(m),
            measurement: Measurement::power(5000.0 + m as f64 * 0.02, 10.0, 400.0 + m as f64)
                .unwrap(),
        });
        if m % 5 == 0 {
            out.push(Reading {
                device_id: DeviceId::parse("plug-washer").unwrap(),
                timestamp: at(m),
                measurement: Measurement::new(
                    None,
                    vec![
                        (Quantity::EnergyBought, 3.0 + m as f64 * 0.001),
                        (Quantity::Power, 12.0),
                    ],
                )
                .unwrap(),
            });
            for (i, room) in ROOMS.iter().enumerate() {
                out.push(Reading {
                    device_id: DeviceId::parse(&format!("th-{room}")).unwrap(),
                    timestamp: at(m),
                    measurement: Measurement::climate(
                        RoomId::parse(room).unwrap(),
                        18.0 + i as f64,
                        50.0 + i as f64,
                    )
                    .unwrap(),
                });
            }
        }
    }
    out
}

const RULES: [(&str, &str); 5] = [
    (
        "bedroom-cold",
        r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature","below":16,"clear":16.5,"for":"10m"}"#,
    ),
    (
        "mould",
        r#"{"kind":"threshold","scope":{"type":"climate"},"quantity":"humidity","above":70,"for":"2h"}"#,
    ),
    (
        "fuse",
        r#"{"kind":"threshold","scope":{"device":"meter-main"},"quantity":"current_w","above":9000}"#,
    ),
    (
        "quiet",
        r#"{"kind":"no_data","scope":{"type":"climate"},"for":"30m"}"#,
    ),
    (
        "hungry",
        r#"{"kind":"energy","scope":{"device":"meter-main"},"window":"1h","above":3}"#,
    ),
];

/// Read and write units of one evaluation at `now`, as a run of the alerts
/// function makes it (the registry loaded, then evaluated).
async fn units(store: &DynamoStore, now: Timestamp) -> (f64, f64) {
    // Boxed: the evaluation's future is large for a debug build's stack.
    let ((_, reads), writes) = Box::pin(metered_writes(metered(Box::pin(async {
        Box::pin(evaluate(store, now, &Receivers::default()))
            .await
            .unwrap()
    }))))
    .await;
    (reads, writes)
}

#[tokio::test]
async fn an_evaluation_s_units_are_the_documented_ones() {
    let store = fresh_store(&dynalite(), "alerts-cost").await;
    let now = Timestamp::now().millis();
    let start = now - now.rem_euclid(3_600_000) - 4 * 3_600_000;
    let readings = household(start);
    for batch in readings.chunks(200) {
        write_through_stream_functions(&store, batch).await;
    }
    let evaluation = Timestamp::from_millis(start + 180 * MINUTE).unwrap();
    let month = 30.0 * 24.0 * 60.0;
    let mut table = String::from(
        "| rules stored | read units an evaluation | write units | RRU a month, every minute | cost a month |\n|---|---|---|---|---|\n",
    );
    let mut row = |what: &str, (reads, writes): (f64, f64)| {
        writeln!(
            table,
            "| {what} | {reads} | {writes} | {:.0} | ${:.3} |",
            reads * month,
            reads * month * 0.125e-6 + writes * month * 0.625e-6
        )
        .unwrap();
    };
    row("none", units(&store, evaluation).await);
    for (name, rule) in RULES {
        store.put_alert_rule(name, rule).await.unwrap();
        // Twice: the second is the steady state (no state changes to write).
        units(&store, evaluation).await;
        row(&format!("`{name}` alone"), units(&store, evaluation).await);
        assert!(store.delete_alert_rule(name).await.unwrap());
        units(&store, evaluation).await;
    }
    for (name, rule) in RULES {
        store.put_alert_rule(name, rule).await.unwrap();
    }
    units(&store, evaluation).await;
    row("all five", units(&store, evaluation).await);

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let (begin, end) = ("<!-- alerts-cost:begin -->\n", "<!-- alerts-cost:end -->");
    let (before, rest) = doc
        .split_once(begin)
        .expect("docs/cost.md has the alerts table's markers");
    let (_, after) = rest.split_once(end).unwrap();
    if std::env::var_os("COST_TABLE_WRITE").is_some() {
        std::fs::write(path, format!("{before}{begin}{table}{end}{after}")).unwrap();
    } else {
        let documented = &rest[..rest.find(end).unwrap()];
        assert_eq!(
            documented, table,
            "docs/cost.md's alerts table (COST_TABLE_WRITE=1 rewrites it)"
        );
    }
}
