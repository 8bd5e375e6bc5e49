//! AWS IoT Core's batching path (issue 78, part 2; docs/batches.md): devices
//! that publish one reading a message, through Basic Ingest and a rule that
//! puts each message on a Kinesis stream (moto's, here), read by the mqtt
//! function's scheduled run into dynalite, through the real handler. What
//! a reading costs there (what `ingester-local cost --path iot-batched`
//! prices), and QoS 1's promise under a fault mid-run: the store failing
//! one device's hour in the middle of a shard's records, the run stopping
//! the shard's position before that device's first record, the next run
//! reading from there, and every acknowledged reading stored once.

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_kinesis::primitives::Blob;
use base64::Engine;
use integration_tests::routes_alike::{all_pages, open_app};
use integration_tests::{dynalite, moto, sdk_config, table_name};
use serde_json::json;
use shared::model::{Span, Timestamp, HOUR_MS};
use shared::mqtt::iot_rule::RuleMessage;
use shared::registry::{RegistryCache, RegistryUpkeep};
use shared::schedule::mqtt_stream::run;
use shared::sdk::kinesis::KinesisStream;
use shared::store::dynamodb::CallPolicy;
use shared::store::metering::metered_writes;
use shared::store::{DynamoStore, Indexes, ShardPosition, StreamPositions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Fails every PutItem of one device's partition while `on` (a store
/// outage a real server will not produce on demand, for that device alone).
#[derive(Debug)]
struct FailDevice {
    device: &'static str,
    on: Arc<AtomicBool>,
}

impl Intercept for FailDevice {
    fn name(&self) -> &'static str {
        "FailDevice"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let put = context.input().downcast_ref::<PutItemInput>();
        let pk = put.and_then(|p| p.item().and_then(|i| i.get("pk")));
        match pk.and_then(|pk| pk.as_s().ok()) {
            Some(pk) if pk == self.device && self.on.load(Ordering::SeqCst) => {
                Err("injected: the device's partition is unavailable".into())
            }
            _ => Ok(()),
        }
    }
}

/// A fresh stream of one shard on moto, as the template makes it.
async fn stream(hint: &str) -> KinesisStream {
    let config = aws_sdk_kinesis::Config::builder()
        .behavior_version(aws_sdk_kinesis::config::BehaviorVersion::latest())
        .region(aws_sdk_kinesis::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_kinesis::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(moto())
        .build();
    let client = aws_sdk_kinesis::Client::from_conf(config);
    let name = table_name(hint);
    client
        .create_stream()
        .stream_name(&name)
        .shard_count(1)
        .send()
        .await
        .expect("create stream");
    KinesisStream { client, name }
}

/// Puts messages on the stream as the topic rule's Kinesis action does:
/// the rule's message as the data, keyed by the topic.
async fn put(stream: &KinesisStream, messages: &[RuleMessage]) {
    for m in messages {
        stream
            .client
            .put_record()
            .stream_name(&stream.name)
            .partition_key(&m.topic)
            .data(Blob::new(serde_json::to_vec(m).unwrap()))
            .send()
            .await
            .expect("put record");
    }
}

/// A table as the template makes it for the batching path (no optional
/// index, batches as blocks); `fault`, an interceptor on its client.
async fn store(hint: &str, fault: Option<FailDevice>) -> DynamoStore {
    let mut config = sdk_config(&dynalite()).to_builder();
    if let Some(fault) = fault {
        config = config.interceptor(fault);
    }
    let client = aws_sdk_dynamodb::Client::from_conf(config.build());
    let store = DynamoStore::new(client, table_name(hint));
    store.create_table().await.expect("create table");
    store
        .with_indexes(Indexes::NONE)
        .with_hour_blocks(true)
        .with_policy(CallPolicy {
            chunk_concurrency: 4,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
            budget: Duration::from_millis(500),
        })
}

/// A room sensor's message as it publishes one: no time of its own (the
/// rule's receive time is its time), on `readings/<device>`.
fn message(device: &str, received: i64, minute: i64) -> RuleMessage {
    let temperature = 20.0 + (minute % 11) as f64 / 10.0;
    let payload = json!({"room": format!("room-{device}"), "temperature": temperature,
                         "humidity": 45 + minute % 5});
    RuleMessage {
        topic: format!("readings/{device}"),
        payload: base64::engine::general_purpose::STANDARD.encode(payload.to_string()),
        received,
    }
}

/// `sensors` room sensors at one message a minute for `minutes` from
/// `first`, in the order they arrive: the devices a few seconds apart.
fn messages(sensors: usize, first: i64, minutes: std::ops::Range<i64>) -> Vec<RuleMessage> {
    let mut out = Vec::new();
    for minute in minutes {
        for s in 0..sensors {
            let received = first + minute * 60_000 + s as i64 * 3_000;
            out.push(message(&format!("th-{s}"), received, minute));
        }
    }
    out
}

/// Each device's readings' times, from the first on.
async fn times(store: &DynamoStore, device: &str, first: i64) -> Vec<String> {
    let app = open_app(store.clone()).await;
    let from = Timestamp::from_millis(first).unwrap().to_string();
    let path = format!("/devices/{device}/readings");
    all_pages(&app, &path, &[("from", &from), ("limit", "1000")])
        .await
        .iter()
        .map(|r| r["timestamp"].as_str().unwrap().to_owned())
        .collect()
}

fn times_of(messages: &[RuleMessage], device: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.topic == format!("readings/{device}"))
        .map(|m| Timestamp::from_millis(m.received).unwrap().to_string())
        .collect()
}

/// Write units a reading, runs `every` minutes apart over three hours of
/// four sensors, a warm function's registry memory at `registry_latest`.
async fn units_a_reading(hint: &str, every: i64, registry_latest: Duration) -> f64 {
    let (store, stream) = (store(hint, None).await, stream(hint).await);
    let registry = RegistryCache::load(&store, Duration::from_secs(30))
        .await
        .unwrap();
    let upkeep = RegistryUpkeep::new(registry_latest);
    // Yesterday 01:00 to 04:00: no midnight among the hours, whose day
    // item a short run would count far more than a year does (the figure
    // must not depend on the hour the test runs at).
    let first = Span::Day.start_of(Timestamp::now()).millis() - 23 * HOUR_MS;
    let mut units = 0.0;
    let mut all = Vec::new();
    for from in (0..180).step_by(every as usize) {
        let batch = messages(4, first, from..from + every);
        put(&stream, &batch).await;
        let (report, written) =
            metered_writes(run(&store, &registry, &upkeep, &stream, &stream.name)).await;
        let report = report.unwrap();
        assert_eq!((report.read, report.stored), (batch.len(), batch.len()));
        units += written;
        all.extend(batch);
    }
    // Every reading stored, in blocks.
    for s in 0..4 {
        let device = format!("th-{s}");
        assert_eq!(times(&store, &device, first).await, times_of(&all, &device));
    }
    units / all.len() as f64
}

/// Room sensors at a message a minute, read every 15 minutes (the
/// template's `MqttStreamMinutes`): the open hour's block put once a run a
/// device, the registry's latest values at most once an interval. What
/// `ingester-local cost` prices the path at (`IOT_STREAM`, at the template's
/// 900 s and at an hour) is what is measured here.
#[tokio::test]
async fn a_run_of_single_messages_costs_a_block_put_a_device() {
    let at_900 = units_a_reading("kinesis-cost-900", 15, Duration::from_secs(900)).await;
    let at_3600 = units_a_reading("kinesis-cost-3600", 15, Duration::from_secs(3600)).await;
    println!(
        "write units a reading, a run every 15 minutes: {at_900:.4} (900 s), {at_3600:.4} (3600 s)"
    );
    // An item a reading is 1.34 write units (a room sensor, as items).
    assert!(at_900 < 0.25, "{at_900}");
    assert!(at_3600 < at_900, "{at_3600} against {at_900}");
    let priced = shared::fleet_cost::IOT_STREAM;
    for (measured, priced) in [(at_900, priced.0), (at_3600, priced.1)] {
        assert!(
            (measured - priced).abs() < 0.01,
            "{measured} measured, {priced} priced"
        );
    }
}

/// Three runs over five devices; in the second, the store fails device
/// th-2's hour put. The run fails, naming the shard; the shard's position
/// stops before th-2's first record of that run; the third run reads from
/// there (th-3's and th-4's records after it, stored already, again) and
/// the newer records. Every reading is stored once, at its receive time.
#[tokio::test]
async fn a_fault_mid_run_reads_again_from_the_first_record_not_stored() {
    let on = Arc::new(AtomicBool::new(false));
    let fault = FailDevice {
        device: "th-2",
        on: on.clone(),
    };
    let store = store("kinesis-fault", Some(fault)).await;
    let stream = stream("kinesis-fault").await;
    let registry = RegistryCache::load(&store, Duration::from_secs(30))
        .await
        .unwrap();
    let upkeep = RegistryUpkeep::new(Duration::from_secs(900));
    let first = Span::Hour.start_of(Timestamp::now()).millis() - 2 * HOUR_MS;
    let (m0, m1, m2) = (
        messages(5, first, 0..5),
        messages(5, first, 5..10),
        messages(5, first, 10..15),
    );
    put(&stream, &m0).await;
    run(&store, &registry, &upkeep, &stream, &stream.name)
        .await
        .unwrap();
    let positions = || async { store.stream_positions(&stream.name).await.unwrap() };
    let after_first = positions().await;

    put(&stream, &m1).await;
    on.store(true, Ordering::SeqCst);
    let failed = run(&store, &registry, &upkeep, &stream, &stream.name).await;
    on.store(false, Ordering::SeqCst);
    let error = failed.unwrap_err();
    assert!(error.contains("shardId-"), "{error}");
    // The position moved past th-0's and th-1's first records of the run
    // alone: the record before th-2's first.
    let moved = positions().await;
    assert_ne!(moved, after_first);
    let (shard, ShardPosition::After(sequence)) = moved.into_iter().next().unwrap() else {
        panic!("an open shard ends nowhere");
    };
    let records = stream
        .client
        .get_records()
        .shard_iterator(
            stream
                .client
                .get_shard_iterator()
                .stream_name(&stream.name)
                .shard_id(&shard)
                .shard_iterator_type(aws_sdk_kinesis::types::ShardIteratorType::AfterSequenceNumber)
                .starting_sequence_number(&sequence)
                .send()
                .await
                .unwrap()
                .shard_iterator()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let next: RuleMessage = serde_json::from_slice(records.records()[0].data().as_ref()).unwrap();
    assert_eq!(next.topic, "readings/th-2");
    assert_eq!(
        next.received, m1[2].received,
        "th-2's first record of the run"
    );

    put(&stream, &m2).await;
    let last = run(&store, &registry, &upkeep, &stream, &stream.name)
        .await
        .unwrap();
    // From th-2's record on: 23 of the second run's, 25 new.
    assert_eq!(last.read, 23 + 25);
    let all: Vec<RuleMessage> = [m0, m1, m2].concat();
    for s in 0..5 {
        let device = format!("th-{s}");
        assert_eq!(
            times(&store, &device, first).await,
            times_of(&all, &device),
            "{device}: each reading once, at its receive time"
        );
    }
}

/// A record that is not the rule's message, or whose payload can never be
/// stored, is passed (logged, not read again): the other records are
/// stored, the position moves past all of them, and the run succeeds.
#[tokio::test]
async fn a_record_that_can_never_be_stored_is_passed() {
    let store = store("kinesis-bad", None).await;
    let stream = stream("kinesis-bad").await;
    let registry = RegistryCache::load(&store, Duration::from_secs(30))
        .await
        .unwrap();
    let upkeep = RegistryUpkeep::new(Duration::from_secs(900));
    let first = Span::Hour.start_of(Timestamp::now()).millis() - HOUR_MS;
    stream
        .client
        .put_record()
        .stream_name(&stream.name)
        .partition_key("readings/th-0")
        .data(Blob::new(b"not the rule's message".to_vec()))
        .send()
        .await
        .unwrap();
    let mut bad = message("th-0", first + 1_000, 0);
    bad.payload = base64::engine::general_purpose::STANDARD.encode(r#"{"temperature":"warm"}"#);
    let good = [
        message("th-0", first + 60_000, 1),
        message("th-0", first + 120_000, 2),
    ];
    put(&stream, &[bad]).await;
    put(&stream, &good).await;
    let report = run(&store, &registry, &upkeep, &stream, &stream.name)
        .await
        .unwrap();
    assert_eq!((report.read, report.stored), (4, 4));
    assert_eq!(times(&store, "th-0", first).await, times_of(&good, "th-0"));
    // Nothing is read again.
    let again = run(&store, &registry, &upkeep, &stream, &stream.name)
        .await
        .unwrap();
    assert_eq!(again.read, 0);
}
