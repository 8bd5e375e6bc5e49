//! The `influxdb` Python client's `query()` against the `dashboard` binary under
//! the Lambda Runtime API emulator, through plain HTTP turned into API Gateway
//! events (`integration_tests::lambda_bridge`): the Lambda path of
//! `tests/clients/influxql_client.py`, which `scripts/test` also runs against
//! `ingester-local serve`. Needs the test tools' virtualenv (`scripts/install-test-tools`).

use integration_tests::runtime_api::Runtime;
use integration_tests::{dynalite, dynalite_table_with, lambda_bridge};
use serde_json::json;
use shared::model::{Reading, Timestamp};
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_influxdb_client_reads_the_dashboard_function() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".tools/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-tools",
        python.display()
    );
    // The readings the script expects (its own writes, which the dashboard function does not serve).
    let now = Timestamp::now().millis() / 1000;
    let start = (now / 300 - 25) * 300;
    let mut readings = Vec::new();
    for i in 0..120i64 {
        let at = start + 60 * i;
        let s1 = json!({"device_id": "py-s1", "timestamp": at, "room": "study",
            "temperature": 20.0 + (i % 9) as f64 * 0.25, "humidity": 40.0});
        let m1 = json!({"device_id": "py-m1", "timestamp": at, "current_w": 100.0 + i as f64});
        for v in [s1, m1] {
            readings.push(Reading::from_json(&v, Timestamp::now(), |_| None).unwrap());
        }
    }
    let store = dynalite_table_with("bin-influxql", &readings).await;

    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_dashboard"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
            ("INGEST_TOKEN", "lp-token"),
        ],
    );
    let url = lambda_bridge::serve(rt).await;
    let script = root.join("tests/clients/influxql_client.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args([&url, "lp-token", "--written-from", &start.to_string()])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "ok SHOW TAG VALUES",
        "ok panel by GET: 24 windows",
        "ok panel by POST: 24 windows",
        "ok chunked raw rows",
        "ok refused without the token",
    ] {
        assert!(stdout.contains(line), "{line} missing from:\n{stdout}");
    }
}
