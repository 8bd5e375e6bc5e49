//! The `alerts` binary under a Lambda Runtime API emulator, on moto (its
//! DynamoDB and SNS), with time driven by the scheduled events' `time`
//! (issue 42, docs/alerts.md). The four household questions, written as
//! rules and put in the table, fire and resolve on the readings that should
//! make them; each transition is published once to the SNS topic (which
//! moto delivers to an HTTP subscriber) and posted once to the webhook in
//! Alertmanager's JSON.

use integration_tests::http_receiver::HttpReceiver;
use integration_tests::runtime_api::Runtime;
use integration_tests::{fresh_store, moto, write_through_stream_functions};
use serde_json::{json, Value};
use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
use shared::store::Alerts;

const MINUTE: i64 = 60_000;

fn climate(id: &str, room: &str, at: Timestamp, celsius: f64, humidity: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse(id).unwrap(),
        timestamp: at,
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), celsius, humidity).unwrap(),
    }
}

fn meter(at: Timestamp, kwh: f64, watts: f64) -> Reading {
    Reading {
        device_id: DeviceId::parse("meter-main").unwrap(),
        timestamp: at,
        measurement: Measurement::new(
            None,
            vec![(Quantity::EnergyBought, kwh), (Quantity::Power, watts)],
        )
        .unwrap(),
    }
}

/// The household's readings of minute `m` (every five minutes): a bedroom
/// cold from 60 to 120, a bathroom damp from 30 to 180, the house drawing
/// 9.5 kW at 100, the hall sensor silent from 60 to 200.
fn readings_at(at: Timestamp, m: i64) -> Vec<Reading> {
    let bedroom = if (60..120).contains(&m) { 14.5 } else { 18.0 };
    let bathroom = if (30..180).contains(&m) { 80.0 } else { 60.0 };
    let mut out = vec![
        climate("th-bedroom", "bedroom", at, bedroom, 50.0),
        climate("th-bathroom", "bathroom", at, 21.0, bathroom),
        meter(
            at,
            1000.0 + m as f64 * 0.05,
            if m == 100 { 9500.0 } else { 3000.0 },
        ),
    ];
    if !(61..200).contains(&m) {
        out.push(climate("th-hall", "hall", at, 19.0, 45.0));
    }
    out
}

async fn sns_topic_with_an_http_subscriber(endpoint: &str) -> String {
    let conf = aws_sdk_sns::Config::builder()
        .behavior_version(aws_sdk_sns::config::BehaviorVersion::latest())
        .region(aws_sdk_sns::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sns::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(moto())
        .build();
    let sns = aws_sdk_sns::Client::from_conf(conf);
    let name = format!("alerts-{}", std::process::id());
    let arn = sns
        .create_topic()
        .name(name)
        .send()
        .await
        .unwrap()
        .topic_arn()
        .unwrap()
        .to_owned();
    sns.subscribe()
        .topic_arn(&arn)
        .protocol("http")
        .endpoint(endpoint)
        .send()
        .await
        .unwrap();
    arn
}

#[tokio::test]
async fn the_household_questions_fire_and_resolve_through_the_scheduled_function() {
    let store = fresh_store(&moto(), "bin-alerts").await;
    let rules = [
        (
            "bedroom-cold",
            json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature", "below": 16, "clear": 16.5, "for": "10m", "summary": "{room} is {value}"}),
        ),
        (
            "mould",
            json!({"kind": "threshold", "scope": {"type": "climate"}, "quantity": "humidity", "above": 70, "for": "2h"}),
        ),
        (
            "fuse",
            json!({"kind": "threshold", "scope": {"device": "meter-main"}, "quantity": "current_w", "above": 9000}),
        ),
        (
            "quiet",
            json!({"kind": "no_data", "scope": {"type": "climate"}, "for": "30m"}),
        ),
    ];
    for (name, rule) in &rules {
        store.put_alert_rule(name, &rule.to_string()).await.unwrap();
    }
    let subscriber = HttpReceiver::start("/sns").await;
    let webhook = HttpReceiver::start("/api/v2/alerts").await;
    let topic = sns_topic_with_an_http_subscriber(&subscriber.url).await;

    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_alerts"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &moto()),
            ("AWS_ENDPOINT_URL_SNS", &moto()),
            ("ALERT_TOPIC_ARN", &topic),
            ("ALERT_WEBHOOK_URL", &webhook.url),
        ],
    );
    let now = Timestamp::now().millis();
    let start = now - now.rem_euclid(3_600_000) - 6 * 3_600_000;
    let at = |m: i64| Timestamp::from_millis(start + m * MINUTE).unwrap();
    let mut transitions = 0;
    for m in (0..=240).step_by(5) {
        write_through_stream_functions(&store, &readings_at(at(m), m)).await;
        let event = json!({
            "version": "0", "id": format!("run-{m}"), "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "123456789012", "time": at(m).to_string(),
            "region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/Every"],
            "detail": {}
        });
        let answer = rt.invoke(event).await.unwrap();
        assert_eq!(answer["failing"], json!([]), "minute {m}: {answer}");
        transitions += answer["transitions"].as_u64().unwrap();
    }

    // What SNS delivered: one message per firing and per resolved series.
    let mut subjects: Vec<String> = subscriber
        .received()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap())
        .filter(|v| v["Type"] == "Notification")
        .map(|v| {
            let subject = v["Subject"].as_str().unwrap().to_owned();
            let message = v["Message"].as_str().unwrap().to_owned();
            assert!(message.contains("since: "), "{message}");
            subject
        })
        .collect();
    subjects.sort();
    assert_eq!(
        subjects,
        [
            "FIRING bedroom-cold: th-bedroom",
            "FIRING fuse: meter-main",
            "FIRING mould: th-bathroom",
            "FIRING quiet: th-hall",
            "RESOLVED bedroom-cold: th-bedroom",
            "RESOLVED fuse: meter-main",
            "RESOLVED mould: th-bathroom",
            "RESOLVED quiet: th-hall",
        ]
    );

    // The webhook: the same eight, as Alertmanager takes them, at the right minutes.
    let mut seen: Vec<(String, String, String)> = webhook
        .received()
        .iter()
        .flat_map(|r| serde_json::from_str::<Vec<Value>>(&r.body).unwrap())
        .map(|a| {
            let name = a["labels"]["alertname"].as_str().unwrap().to_owned();
            let starts = a["startsAt"].as_str().unwrap().to_owned();
            let ends = a["endsAt"].as_str().unwrap().to_owned();
            (name, starts, ends)
        })
        .collect();
    seen.sort();
    let iso = |m: i64| at(m).to_string();
    // A resolved alert ends when it resolved; a firing one two repeat
    // intervals (8 h) after it was told, past the run's last minute.
    let resolved: Vec<(&str, String, String)> = seen
        .iter()
        .filter(|(_, _, e)| e <= &iso(240))
        .map(|(n, s, e)| (n.as_str(), s.clone(), e.clone()))
        .collect();
    assert_eq!(
        resolved,
        [
            // The bedroom: cold at 60, firing after 10 minutes, 18 °C again at 120.
            ("bedroom-cold", iso(70), iso(120)),
            // 9.5 kW at 100 only.
            ("fuse", iso(100), iso(105)),
            // Damp from 30; two hours later it fires; dry at 180.
            ("mould", iso(150), iso(180)),
            // Last heard at 60; silent for 30 minutes at 90; back at 200.
            ("quiet", iso(90), iso(200)),
        ]
    );
    assert_eq!(seen.len(), 8, "{seen:#?}");
    // Pending and firing of each, and resolved: the mould and the bedroom
    // have a pending step; the fuse and quiet fire at once.
    assert_eq!(transitions, 10);
    assert!(store.deliveries().await.unwrap().is_empty());
    assert!(store.alert_states().await.unwrap().0.is_empty());
}
