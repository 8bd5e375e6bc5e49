//! Alert notifications on both engines (issue 42, docs/alerts.md): what
//! evaluation queues in the store and delivery sends, with time driven by
//! the test. A firing series is told once, again after `repeat_interval`,
//! and once when it resolves, however often the evaluation runs and across
//! restarts (nothing is held between runs); a receiver that is down is
//! retried with backoff and reported failing, then catches up; and a real
//! Alertmanager (Debian's) takes our webhook's alerts and lists them.

use integration_tests::alertmanager::Alertmanager;
use integration_tests::http_receiver::HttpReceiver;
use integration_tests::{api_event, handle, on_every_store, TestStore};
use shared::alerts::{deliver, evaluate};
use shared::domain::alerts::delivery::statuses;
use shared::model::{DeviceId, Measurement, Reading, RoomId, Timestamp};
use shared::notify::ReceiverSpec;
use shared::notify::Receivers;
use shared::store::{Alerts, Store};
use std::time::Duration;

const MINUTE: i64 = 60_000;

/// A minute of the test's hour, `minutes_ago` before now.
fn ago(minutes_ago: i64) -> Timestamp {
    Timestamp::from_millis(Timestamp::now().millis() - minutes_ago * MINUTE).unwrap()
}

fn bedroom(at: Timestamp, celsius: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse("th-1").unwrap(),
        timestamp: at,
        measurement: Measurement::climate(RoomId::parse("bedroom").unwrap(), celsius, 50.0)
            .unwrap(),
    }
}

async fn write<S: Store>(store: &S, readings: &[Reading]) {
    assert!(store.write_readings(readings).await.unwritten.is_empty());
    if !store.capabilities().registry_follows_writes {
        let plan = shared::domain::registry::plan(readings.iter().enumerate());
        assert!(shared::registry::apply(store, &plan).await.is_empty());
    }
}

const COLD: &str = r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature",
    "below":16,"labels":{"severity":"warning"},"summary":"{room} is {value}"}"#;

fn receivers(specs: &[(&str, serde_json::Value)], repeat: Duration) -> Receivers {
    let list = specs
        .iter()
        .map(|(name, v)| {
            ReceiverSpec::parse(name, v)
                .unwrap()
                .build(name, repeat, None)
                .unwrap()
                .unwrap()
        })
        .collect();
    Receivers {
        list,
        repeat_interval: repeat,
    }
}

/// One scheduled run as a fresh process makes it: receivers built anew,
/// the registry and every state read from the store.
async fn run<S: Store + Alerts>(store: &S, receivers: &Receivers, at: Timestamp) {
    evaluate(store, at, receivers).await.unwrap();
    deliver(store, receivers, at).await.unwrap();
}

async fn told_once_again_after_the_repeat_interval_and_once_resolved<S: TestStore>() {
    let store = S::fresh("alerts-told").await;
    store.put_alert_rule("cold", COLD).await.unwrap();
    let ntfy = HttpReceiver::start("/house").await;
    let spec = serde_json::json!({"kind": "ntfy", "url": ntfy.url});
    let fresh = || receivers(&[("phone", spec.clone())], Duration::from_secs(3600));
    let start = ago(180);
    let at = |m: i64| start.saturating_add_millis(m * MINUTE);
    write(&store, &[bedroom(at(0), 14.5)]).await;
    run(&store, &fresh(), at(1)).await;
    let got = ntfy.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].path, "/house");
    assert_eq!(got[0].header("title"), "FIRING cold: th-1");
    assert_eq!(got[0].header("priority"), "4");
    assert_eq!(got[0].header("tags"), "warning,cold");
    assert_eq!(got[0].body, "bedroom is 14.5 °C");
    // Every minute for the next hour, each run a restart: nothing new.
    for m in 2..61 {
        run(&store, &fresh(), at(m)).await;
    }
    assert_eq!(ntfy.received().len(), 1);
    // An hour after it was told: told again.
    run(&store, &fresh(), at(61)).await;
    assert_eq!(ntfy.received().len(), 2);
    assert_eq!(ntfy.received()[1].header("title"), "FIRING cold: th-1");
    write(&store, &[bedroom(at(62), 17.0)]).await;
    run(&store, &fresh(), at(63)).await;
    run(&store, &fresh(), at(64)).await;
    let got = ntfy.received();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[2].header("title"), "RESOLVED cold: th-1");
    assert_eq!(got[2].header("priority"), "3");
    assert_eq!(got[2].header("tags"), "white_check_mark");
    assert!(store.deliveries().await.unwrap().is_empty());
}

async fn a_receiver_down_is_retried_with_backoff_then_catches_up<S: TestStore>() {
    let store = S::fresh("alerts-down").await;
    store.put_alert_rule("cold", COLD).await.unwrap();
    let ntfy = HttpReceiver::start("/house").await;
    let spec = serde_json::json!({"kind": "ntfy", "url": ntfy.url});
    let r = receivers(&[("phone", spec)], Duration::from_secs(4 * 3600));
    let start = ago(120);
    let at = |m: i64| start.saturating_add_millis(m * MINUTE);
    ntfy.set_down(true);
    write(&store, &[bedroom(at(0), 14.5)]).await;
    run(&store, &r, at(1)).await;
    // Failed: kept, reported failing with the receiver's answer.
    let waiting = store.deliveries().await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].attempts, 1);
    assert_eq!(waiting[0].failing_since, Some(at(1)));
    assert_eq!(waiting[0].next_attempt, at(1).saturating_add_millis(30_000));
    let status = statuses(&waiting, &["phone"]);
    assert_eq!(status[0].status, "failing");
    assert!(
        status[0].last_error.as_deref().unwrap().contains("503"),
        "{status:?}"
    );
    // The Router says so: GET /alerts, and GET /health of a deployment told
    // of its receivers (the ingest function on AWS, `serve` at home).
    let app = shared::api::App::new(
        store.clone(),
        shared::api::Access::open(),
        shared::api::RouteSet::All,
        Duration::from_secs(30),
    )
    .await
    .unwrap()
    .with_alert_receivers(vec!["sns".into()]);
    let get = |path: &'static str| {
        let app = app.clone();
        async move {
            let answer = handle(&app, api_event("GET", path, &[], None, &[])).await;
            assert_eq!(answer.status_code, 200, "{path}");
            let body = match answer.body {
                Some(shared::aws_lambda_events::encodings::Body::Text(t)) => t,
                other => panic!("{other:?}"),
            };
            serde_json::from_str::<serde_json::Value>(&body).unwrap()
        }
    };
    let alerts = get("/alerts").await;
    assert_eq!(alerts["receivers"][0]["name"], "phone", "{alerts}");
    assert_eq!(alerts["receivers"][0]["status"], "failing", "{alerts}");
    assert_eq!(alerts["receivers"][1]["name"], "sns", "{alerts}");
    assert_eq!(alerts["receivers"][1]["status"], "ok", "{alerts}");
    let health = get("/health").await;
    let check = integration_tests::health_check(&health, "alerts");
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .starts_with("failing: phone:"),
        "{check}"
    );
    // Before the backoff is over nothing is tried; after it, again (and it fails again).
    deliver(&store, &r, at(1).saturating_add_millis(20_000))
        .await
        .unwrap();
    assert_eq!(store.deliveries().await.unwrap()[0].attempts, 1);
    run(&store, &r, at(2)).await;
    let waiting = store.deliveries().await.unwrap();
    assert_eq!(waiting[0].attempts, 2);
    assert_eq!(waiting[0].next_attempt, at(2).saturating_add_millis(60_000));
    assert!(ntfy.received().is_empty());
    // Back up: the next attempt delivers, once, and the receiver is well again.
    ntfy.set_down(false);
    run(&store, &r, at(3)).await;
    let got = ntfy.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].header("title"), "FIRING cold: th-1");
    let waiting = store.deliveries().await.unwrap();
    assert!(waiting.is_empty());
    assert_eq!(statuses(&waiting, &["phone"])[0].status, "ok");
    run(&store, &r, at(4)).await;
    assert_eq!(ntfy.received().len(), 1);

    // Down while the series resolves: the resolved word overtakes the firing
    // one still waiting, and is all it is told when it comes back.
    write(&store, &[bedroom(at(5), 13.0)]).await;
    store
        .put_alert_rule("cold", &COLD.replace("16", "12"))
        .await
        .unwrap();
    run(&store, &r, at(6)).await; // 13 °C is not below 12: resolved
    assert_eq!(ntfy.received().len(), 2);
    store.put_alert_rule("cold", COLD).await.unwrap();
    ntfy.set_down(true);
    run(&store, &r, at(7)).await; // fires again; not taken
    store
        .put_alert_rule("cold", &COLD.replace("16", "12"))
        .await
        .unwrap();
    run(&store, &r, at(8)).await; // resolves; still down
    let waiting = store.deliveries().await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert!(waiting[0].notification.resolved);
    ntfy.set_down(false);
    run(&store, &r, at(12)).await;
    let got = ntfy.received();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[2].header("title"), "RESOLVED cold: th-1");
}

async fn alertmanager_takes_and_lists_our_alerts<S: TestStore>() {
    let am = Alertmanager::start();
    let store = S::fresh("alerts-am").await;
    store.put_alert_rule("cold", COLD).await.unwrap();
    let spec = serde_json::json!({"kind": "webhook", "url": format!("{}/api/v2/alerts", am.url)});
    let r = receivers(&[("alertmanager", spec)], Duration::from_secs(4 * 3600));
    write(&store, &[bedroom(ago(3), 14.5)]).await;
    run(&store, &r, ago(2)).await;
    assert!(store.deliveries().await.unwrap().is_empty(), "delivered");
    let alerts = am.alerts();
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let alert = &alerts[0];
    assert_eq!(alert["labels"]["alertname"], "cold");
    assert_eq!(alert["labels"]["device_id"], "th-1");
    assert_eq!(alert["labels"]["room"], "bedroom");
    assert_eq!(alert["labels"]["severity"], "warning");
    assert_eq!(alert["annotations"]["summary"], "bedroom is 14.5 °C");
    assert_eq!(alert["status"]["state"], "active");
    // Resolved: Alertmanager no longer lists it as active.
    write(&store, &[bedroom(ago(2), 17.0)]).await;
    run(&store, &r, ago(1)).await;
    assert!(store.deliveries().await.unwrap().is_empty(), "delivered");
    let alerts = am.alerts();
    assert!(alerts.is_empty(), "{alerts:#?}");
}

on_every_store!(
    told_once_again_after_the_repeat_interval_and_once_resolved,
    a_receiver_down_is_retried_with_backoff_then_catches_up,
    alertmanager_takes_and_lists_our_alerts,
);
