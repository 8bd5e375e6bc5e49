//! Alert rules and series states kept in the store, on both engines (issue
//! 42, docs/alerts.md): rules put, replaced, listed and deleted; states
//! saved and read back as they were; and the live evaluation, which holds
//! nothing between runs, so that a restart while a series fires neither
//! forgets it nor reports its firing twice.

use integration_tests::{on_every_store, TestStore};
use shared::domain::alerts::{Phase, SeriesState, Transition};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
use shared::store::{Alerts, SqliteStore, Store};

const MINUTE: i64 = 60_000;

fn at(minute: i64) -> Timestamp {
    let now = Timestamp::now().millis();
    Timestamp::from_millis(now - now.rem_euclid(3_600_000) - 86_400_000 + minute * MINUTE).unwrap()
}

fn device(id: &str) -> DeviceId {
    DeviceId::parse(id).unwrap()
}

async fn rules_and_states_are_kept_as_put<S: TestStore>() {
    let store = S::fresh("alerts-kept").await;
    assert!(store.alert_rules().await.unwrap().is_empty());
    let cold =
        r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature","below":16}"#;
    let quiet = r#"{"kind":"no_data","scope":{"type":"climate"},"for":"30m"}"#;
    store.put_alert_rule("quiet", quiet).await.unwrap();
    store.put_alert_rule("cold", cold).await.unwrap();
    let colder = cold.replace("16", "15");
    store.put_alert_rule("cold", &colder).await.unwrap();
    assert_eq!(
        {
            let mut r = store.alert_rules().await.unwrap();
            r.sort();
            r
        },
        vec![
            ("cold".to_owned(), colder.clone()),
            ("quiet".to_owned(), quiet.to_owned())
        ]
    );
    assert!(store.delete_alert_rule("quiet").await.unwrap());
    assert!(!store.delete_alert_rule("quiet").await.unwrap());
    assert_eq!(store.alert_rules().await.unwrap().len(), 1);

    let pending = SeriesState {
        phase: Phase::Pending { since: at(1) },
        value: Some(15.25),
        notified: None,
    };
    let firing = SeriesState {
        phase: Phase::Firing {
            since: at(2),
            quiet_since: Some(at(3)),
        },
        value: None,
        notified: Some(at(2)),
    };
    let a = ("cold".to_owned(), device("th-1"));
    let b = ("quiet".to_owned(), device("a4:c1:38:0b:5e:7f"));
    store
        .save_alert_states(&[(a.clone(), Some(pending)), (b.clone(), Some(firing))])
        .await
        .unwrap();
    let states = store.alert_states().await.unwrap();
    assert_eq!(states.0.len(), 2);
    assert_eq!(states.0[&a], pending);
    assert_eq!(states.0[&b], firing);
    store.save_alert_states(&[(a.clone(), None)]).await.unwrap();
    let states = store.alert_states().await.unwrap();
    assert_eq!(states.0.keys().cloned().collect::<Vec<_>>(), vec![b]);
}

fn bedroom(minute: i64, temperature: f64) -> Reading {
    Reading {
        device_id: device("th-1"),
        timestamp: at(minute),
        measurement: Measurement::climate(RoomId::parse("bedroom").unwrap(), temperature, 50.0)
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

/// Evaluates at `minute` as a fresh process would: the registry and every
/// state read from the store. The transitions, by rule.
async fn evaluate<S: Store + Alerts>(store: &S, minute: i64) -> Vec<(String, Transition)> {
    let done = shared::alerts::evaluate(store, at(minute), &Default::default())
        .await
        .unwrap();
    assert!(done.broken.is_empty(), "{:?}", done.broken);
    done.events
        .into_iter()
        .map(|e| (e.rule, e.transition))
        .collect()
}

async fn a_series_fires_once_across_evaluations_and_resolves<S: TestStore>() {
    let store = S::fresh("alerts-live").await;
    let cold = r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature","below":16,"clear":16.5}"#;
    store.put_alert_rule("cold", cold).await.unwrap();
    let hungry = r#"{"kind":"energy","scope":{"device":"meter-1"},"window":"10m","above":0.5}"#;
    store.put_alert_rule("hungry", hungry).await.unwrap();
    write(&store, &[bedroom(0, 15.0)]).await;
    assert_eq!(
        evaluate(&store, 1).await,
        vec![("cold".to_owned(), Transition::Firing)]
    );
    // Still cold, and 16.2 °C is not back past the clear value: no second firing.
    assert_eq!(evaluate(&store, 2).await, vec![]);
    write(&store, &[bedroom(2, 16.2)]).await;
    assert_eq!(evaluate(&store, 3).await, vec![]);
    write(&store, &[bedroom(3, 17.0)]).await;
    assert_eq!(
        evaluate(&store, 4).await,
        vec![("cold".to_owned(), Transition::Resolved)]
    );
    assert!(store.alert_states().await.unwrap().0.is_empty());
    // A meter buying 0.1 kWh a minute: over 0.5 kWh in ten minutes.
    let meter: Vec<Reading> = (0..12)
        .map(|m| Reading {
            device_id: device("meter-1"),
            timestamp: at(10 + m),
            measurement: Measurement::new(
                None,
                vec![(Quantity::EnergyBought, 100.0 + 0.1 * m as f64)],
            )
            .unwrap(),
        })
        .collect();
    write(&store, &meter).await;
    assert_eq!(evaluate(&store, 14).await, vec![]);
    assert_eq!(
        evaluate(&store, 16).await,
        vec![("hungry".to_owned(), Transition::Firing)]
    );
    let states = store.alert_states().await.unwrap();
    assert!(
        states.0[&("hungry".to_owned(), device("meter-1"))]
            .value
            .unwrap()
            > 0.5
    );

    // A meter with one counter that reports its kWh hourly (watts alone in
    // between): its reading 55 minutes back is the window's reference.
    store.delete_alert_rule("hungry").await.unwrap();
    let hourly = r#"{"kind":"energy","scope":{"device":"meter-2"},"window":"10m","above":0.5}"#;
    store.put_alert_rule("hourly", hourly).await.unwrap();
    let meter: Vec<Reading> = (30..86)
        .map(|m| {
            let mut values = vec![(Quantity::Power, 400.0)];
            match m {
                30 => values.push((Quantity::EnergyBought, 500.0)),
                85 => values.push((Quantity::EnergyBought, 501.0)),
                _ => {}
            }
            Reading {
                device_id: device("meter-2"),
                timestamp: at(m),
                measurement: Measurement::new(None, values).unwrap(),
            }
        })
        .collect();
    write(&store, &meter).await;
    // The removed rule's firing series resolves; the hourly meter's window
    // holds no growth yet.
    assert_eq!(
        evaluate(&store, 84).await,
        vec![("hungry".to_owned(), Transition::Resolved)]
    );
    assert_eq!(
        evaluate(&store, 86).await,
        vec![("hourly".to_owned(), Transition::Firing)]
    );
}

/// An energy rule on any counter (issue 79): a gas meter that used more
/// than 0.5 m³ in ten minutes fires, with its value in m³; a water rule on
/// the same meter (which counts no water) never does.
async fn an_energy_rule_on_gas_fires_in_cubic_metres<S: TestStore>() {
    let store = S::fresh("alerts-gas").await;
    let gas = r#"{"kind":"energy","scope":{"device":"gas-1"},"quantity":"gas_m3","window":"10m","above":0.5}"#;
    store.put_alert_rule("gas-burst", gas).await.unwrap();
    let water = r#"{"kind":"energy","scope":{"device":"gas-1"},"quantity":"water_m3","window":"10m","above":0}"#;
    store.put_alert_rule("water", water).await.unwrap();
    // 0.03 m³ a minute, then a burst of 0.12 a minute (a leak, a boiler gone wild).
    let mut m3 = 4021.117;
    let meter: Vec<Reading> = (0..20)
        .map(|m| {
            m3 += if m < 8 { 0.03 } else { 0.12 };
            Reading {
                device_id: device("gas-1"),
                timestamp: at(m),
                measurement: Measurement::new(None, vec![(Quantity::Gas, m3)]).unwrap(),
            }
        })
        .collect();
    write(&store, &meter[..9]).await;
    assert_eq!(evaluate(&store, 9).await, vec![]);
    write(&store, &meter[9..]).await;
    assert_eq!(
        evaluate(&store, 19).await,
        vec![("gas-burst".to_owned(), Transition::Firing)]
    );
    let states = store.alert_states().await.unwrap();
    let used = states.0[&("gas-burst".to_owned(), device("gas-1"))]
        .value
        .unwrap();
    assert!((used - 1.2).abs() < 1e-6, "ten minutes at 0.12 m³: {used}");
    assert!(!states
        .0
        .contains_key(&("water".to_owned(), device("gas-1"))));
}

on_every_store!(
    rules_and_states_are_kept_as_put,
    a_series_fires_once_across_evaluations_and_resolves,
    an_energy_rule_on_gas_fires_in_cubic_metres,
    the_alert_routes_put_list_and_show_what_fires
);

/// The embedded store's file, closed and opened again between two
/// evaluations (a restart): the firing series is still firing, and is not
/// reported again.
#[tokio::test]
async fn a_restart_while_firing_neither_forgets_nor_reports_twice() {
    let dir = std::env::temp_dir().join(format!("alerts-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ingester.db");
    {
        let store = SqliteStore::open(&file).unwrap();
        let cold = r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature","below":16}"#;
        store.put_alert_rule("cold", cold).await.unwrap();
        write(&store, &[bedroom(0, 15.0)]).await;
        assert_eq!(
            evaluate(&store, 1).await,
            vec![("cold".to_owned(), Transition::Firing)]
        );
    }
    let store = SqliteStore::open(&file).unwrap();
    assert_eq!(evaluate(&store, 2).await, vec![]);
    let states = store.alert_states().await.unwrap();
    assert!(states.0[&("cold".to_owned(), device("th-1"))].firing());
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The HTTP routes on both engines: a rule put, read, listed, refused with
/// its field named, removed; and what fires, listed by `GET /alerts`.
async fn the_alert_routes_put_list_and_show_what_fires<S: TestStore>() {
    use integration_tests::{answer, api_event, app, handle};
    let store = S::fresh("alerts-http").await;
    let app = app(store.clone(), None, shared::api::RouteSet::All).await;
    let call = |method: &'static str, path: &'static str, body: Option<&'static str>| {
        let app = &app;
        async move { answer(&handle(app, api_event(method, path, &[], body, &[])).await) }
    };
    let cold = r#"{"kind":"threshold","scope":{"room":"bedroom"},"quantity":"temperature","below":16,"for":"0s"}"#;
    let (status, body) = call("PUT", "/alerts/rules/bedroom-cold", Some(cold)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "bedroom-cold");
    assert_eq!(body["rule"]["below"], 16);
    // Mistakes: the field named, nothing stored.
    let (status, body) = call(
        "PUT",
        "/alerts/rules/fuse",
        Some(r#"{"kind":"threshold","scope":{"device":"m"},"quantity":"watts","above":1}"#),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("quantity"), "{body}");
    let (status, _) = call("PUT", "/alerts/rules/fuse", Some("{not json")).await;
    assert_eq!(status, 400);
    let (status, _) = call("PUT", "/alerts/rules/bad%20name", Some(cold)).await;
    assert_eq!(status, 400);
    let (status, body) = call("GET", "/alerts/rules", None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = body["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bedroom-cold"]);
    assert_eq!(call("GET", "/alerts/rules/bedroom-cold", None).await.0, 200);
    assert_eq!(call("GET", "/alerts/rules/fuse", None).await.0, 404);
    // A cold bedroom, an evaluation: GET /alerts lists the firing series.
    write(&store, &[bedroom(0, 14.5)]).await;
    assert_eq!(
        evaluate(&store, 1).await,
        vec![("bedroom-cold".to_owned(), Transition::Firing)]
    );
    let (status, body) = call("GET", "/alerts", None).await;
    assert_eq!(status, 200, "{body}");
    let alerts = body["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{body}");
    assert_eq!(alerts[0]["rule"], "bedroom-cold");
    assert_eq!(alerts[0]["device_id"], "th-1");
    assert_eq!(alerts[0]["state"], "firing");
    assert_eq!(alerts[0]["value"], 14.5);
    assert_eq!(
        call("DELETE", "/alerts/rules/bedroom-cold", None).await.0,
        204
    );
    assert_eq!(
        call("DELETE", "/alerts/rules/bedroom-cold", None).await.0,
        404
    );
    assert!(store.alert_rules().await.unwrap().is_empty());
}
