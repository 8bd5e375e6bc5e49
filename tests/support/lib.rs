//! Test support: clients for the DynamoDB-API servers that `scripts/test`
//! starts on 127.0.0.1, a fresh table per test, and builders for the real
//! Lambda event shapes.

pub mod alertmanager;
pub mod fault_proxy;
pub mod household;
pub mod http_receiver;
pub mod influxd;
pub mod lambda_bridge;
pub mod local_server;
pub mod mosquitto;
pub mod routes_alike;
pub mod runtime_api;
pub mod source_tree;
pub mod victoria;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use serde_json::{json, Value};
use shared::api::{Access, App, BearerToken, RouteSet};
use shared::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use shared::aws_lambda_events::encodings::Body;
use shared::store::DynamoStore;
use shared::store::ReadingStore;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The endpoint of a server started by `scripts/test`. Panics with the way to
/// start it, rather than skipping: a test that did not run must not pass.
pub fn endpoint(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `scripts/test`, which starts dynalite and moto on 127.0.0.1")
    })
}

pub fn dynalite() -> String {
    endpoint("DYNALITE_ENDPOINT")
}

pub fn moto() -> String {
    endpoint("MOTO_ENDPOINT")
}

/// SDK config for a local server: static dummy credentials, fixed region.
pub fn sdk_config(endpoint: &str) -> aws_sdk_dynamodb::Config {
    aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(endpoint)
        .build()
}

/// An SSM client for a local server (moto has SSM), with the same dummy credentials.
pub fn ssm_client(endpoint: &str) -> aws_sdk_ssm::Client {
    let conf = aws_sdk_ssm::Config::builder()
        .behavior_version(aws_sdk_ssm::config::BehaviorVersion::latest())
        .region(aws_sdk_ssm::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_ssm::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint)
        .build();
    aws_sdk_ssm::Client::from_conf(conf)
}

pub fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(sdk_config(endpoint))
}

static TABLES: AtomicUsize = AtomicUsize::new(0);

/// A unique table name per test (and per process, since both servers outlive one test binary).
pub fn table_name(hint: &str) -> String {
    let n = TABLES.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{hint}-{}-{n}-{nanos}", std::process::id())
}

/// A store on a fresh table created as `template.yaml` defines it.
pub async fn fresh_store(endpoint: &str, hint: &str) -> DynamoStore {
    let store = DynamoStore::new(client(endpoint), table_name(hint));
    store.create_table().await.expect("create table");
    store
}

/// Writes `readings` as ingest requests carry them, at most 1000 a call
/// (each call a store operation with a budget of its own), and asserts that
/// every one was written. One call of 17,280 readings to dynalite once ran
/// past the 5 s budget on a loaded CI machine.
pub async fn write_all<S: shared::store::Store>(store: &S, readings: &[shared::model::Reading]) {
    for chunk in readings.chunks(1000) {
        let report = store.write_readings(chunk).await;
        assert!(
            report.unwritten.is_empty(),
            "{} of {} readings unwritten",
            report.unwritten.len(),
            chunk.len()
        );
    }
}

/// A fresh dynalite table holding `readings`, with the registry the registry
/// function would keep for them (the Lambda binaries' tests).
pub async fn dynalite_table_with(hint: &str, readings: &[shared::model::Reading]) -> DynamoStore {
    let store = fresh_store(&dynalite(), hint).await;
    assert!(store.write_readings(readings).await.unwritten.is_empty());
    let plan = shared::domain::registry::plan(readings.iter().enumerate());
    assert!(shared::registry::apply(&store, &plan).await.is_empty());
    store
}

/// The application state, built by the one constructor the Lambdas and the
/// local server use; reads need the token whenever one is given.
pub async fn app<S: shared::store::Store>(
    store: S,
    token: Option<&str>,
    routes: RouteSet,
) -> App<S> {
    let access = Access {
        token: token.and_then(BearerToken::new),
        reads: shared::api::ReadAccess::Token,
    };
    App::new(store, access, routes, Duration::from_secs(30))
        .await
        .expect("registry loads")
}

/// An API Gateway v2 event through the Router, as the Lambda runs it
/// (`lambda_http`'s own conversion both ways).
pub async fn handle<S: shared::store::Store>(
    app: &App<S>,
    event: ApiGatewayV2httpRequest,
) -> ApiGatewayV2httpResponse {
    shared::api::lambda::invoke(shared::api::router(app.clone()), event).await
}

/// An API Gateway HTTP API (payload 2.0) event, as API Gateway sends it.
pub fn api_event(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> ApiGatewayV2httpRequest {
    let raw_query: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    let mut params = serde_json::Map::new();
    for (k, v) in query {
        // API Gateway joins repeated parameters with commas.
        let joined = match params.get(*k) {
            Some(Value::String(prev)) => format!("{prev},{v}"),
            _ => v.to_string(),
        };
        params.insert(k.to_string(), Value::String(joined));
    }
    let mut hdrs = serde_json::Map::new();
    hdrs.insert("content-type".into(), json!("application/json"));
    for (k, v) in headers {
        hdrs.insert(k.to_lowercase(), json!(v));
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query.join("&"),
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api-id",
            "domainName": "id.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "id",
            "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1", "userAgent": "tests" },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "time": "22/Nov/2026:01:02:03 +0000",
            "timeEpoch": 1_795_309_323_000i64
        },
        "isBase64Encoded": false
    });
    if !params.is_empty() {
        event["queryStringParameters"] = Value::Object(params);
    }
    if let Some(b) = body {
        event["body"] = json!(b);
    }
    serde_json::from_value(event).expect("a valid API Gateway v2 event")
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Status and JSON body of a response (`null` for an empty one, as a 204's).
pub fn answer(resp: &ApiGatewayV2httpResponse) -> (u16, Value) {
    let body = match &resp.body {
        Some(Body::Text(t)) if t.is_empty() => Value::Null,
        // The dashboard's pages and images are not JSON: their text as a string.
        Some(Body::Text(t)) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
        Some(Body::Binary(b)) => serde_json::from_slice(b).expect("JSON body"),
        _ => Value::Null,
    };
    assert_no_negative_zero(&body);
    (resp.status_code as u16, body)
}

/// No answer writes a negative zero (`shared::api::json`): every test that
/// reads an answer through `answer` holds every route to it.
pub fn assert_no_negative_zero(v: &Value) {
    match v {
        Value::Number(n) => assert!(
            !n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()),
            "a negative zero in an answer"
        ),
        Value::Array(a) => a.iter().for_each(assert_no_negative_zero),
        Value::Object(o) => o.values().for_each(assert_no_negative_zero),
        _ => {}
    }
}

/// The check named `name` of a `GET /health` answer; a panic naming the
/// answer when it has none.
pub fn health_check(health: &Value, name: &str) -> Value {
    health["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {health}"))
}

/// The `timestamp` of each reading of a `{"readings": [...]}` answer.
pub fn timestamps(answer: &Value) -> Vec<&str> {
    answer["readings"]
        .as_array()
        .expect("a readings answer")
        .iter()
        .map(|r| r["timestamp"].as_str().expect("a timestamp"))
        .collect()
}

/// A power reading as a device would post it.
pub fn power(device: &str, ts: &str, kwh_p: f64, kwh_n: f64, w: f64) -> Value {
    json!({"device_id": device, "timestamp": ts, "type": "power",
           "cumulative_kwh_p": kwh_p, "cumulative_kwh_n": kwh_n, "current_w": w})
}

/// A climate reading as a device would post it.
pub fn climate(device: &str, room: &str, ts: &str, t: f64, h: f64) -> Value {
    json!({"device_id": device, "timestamp": ts, "type": "climate", "room": room,
           "temperature": t, "humidity": h})
}

/// A write's 503: every one of its `readings` reported unwritten, by index,
/// and none written.
pub fn assert_every_reading_unwritten(answer: &Value, readings: u64) {
    let unwritten: Vec<u64> = answer["error"]["unwritten"]
        .as_array()
        .unwrap_or_else(|| panic!("no unwritten list: {answer}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(unwritten, (0..readings).collect::<Vec<u64>>(), "{answer}");
    assert_eq!(answer["error"]["written"], 0);
    assert_eq!(answer["error"]["code"], "storage_unavailable");
}

/// Reads every record of a table's stream (DescribeStream, GetShardIterator,
/// GetRecords over all shards) and shapes them into the Lambda DynamoDB event.
pub async fn stream_records(
    endpoint: &str,
    table: &str,
) -> Vec<shared::aws_lambda_events::event::dynamodb::EventRecord> {
    use aws_sdk_dynamodbstreams::types::ShardIteratorType;
    let ddb = client(endpoint);
    let arn = ddb
        .describe_table()
        .table_name(table)
        .send()
        .await
        .unwrap()
        .table()
        .and_then(|t| t.latest_stream_arn().map(str::to_owned))
        .expect("the table has a stream");
    let conf = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodbstreams::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint)
        .build();
    let streams = aws_sdk_dynamodbstreams::Client::from_conf(conf);
    let description = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    let shards = description
        .stream_description()
        .map(|d| d.shards().to_vec())
        .unwrap_or_default();
    let mut out = Vec::new();
    for shard in shards {
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(shard.shard_id().unwrap())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap()
            .shard_iterator()
            .map(str::to_owned);
        while let Some(it) = iterator.take() {
            let page = streams
                .get_records()
                .shard_iterator(it)
                .send()
                .await
                .unwrap();
            if page.records().is_empty() {
                break;
            }
            for r in page.records() {
                out.push(
                    ingester_local::stream_poller::lambda_record(r, &arn, "us-east-1").unwrap(),
                );
            }
            iterator = page.next_shard_iterator().map(str::to_owned);
        }
    }
    out
}

/// A Lambda DynamoDB Streams event holding these records.
pub fn stream_event(
    records: Vec<shared::aws_lambda_events::event::dynamodb::EventRecord>,
) -> shared::aws_lambda_events::event::dynamodb::Event {
    let mut event = shared::aws_lambda_events::event::dynamodb::Event::default();
    event.records = records;
    event
}

/// What the contract tests need beyond `Store`: a fresh store per test.
/// Implemented for every engine the suite runs on.
pub trait TestStore:
    shared::rollups::Upkeep + shared::store::Alerts + Clone + Send + Sync + 'static
{
    /// A store on a fresh, empty table.
    fn fresh(hint: &str) -> impl std::future::Future<Output = Self> + Send;
    /// The same store, writing readings with a retention of `days`.
    fn retaining(self, days: u32) -> Self;
    /// Whether it seals closed days into blocks, which box search reads
    /// whole rather than through the Z-order index (the embedded store).
    const SEALS_CLOSED_DAYS: bool = false;
}

tokio::task_local! {
    /// Set by `on_every_store_and_batches!`: the DynamoDB stores a test makes
    /// write a batch's closed hours as hour blocks (issue 78, docs/batches.md),
    /// with no optional index.
    pub static AS_BATCHES: bool;
}

impl TestStore for DynamoStore {
    async fn fresh(hint: &str) -> Self {
        let store = fresh_store(&dynalite(), hint)
            .await
            .with_registry_page_limit(3);
        match AS_BATCHES.try_with(|b| *b) {
            Ok(true) => store
                .with_indexes(shared::store::Indexes::NONE)
                .with_hour_blocks(true),
            _ => store,
        }
    }

    fn retaining(self, days: u32) -> Self {
        self.with_retention(shared::store::Retention::days(days))
    }
}

/// The items of a DynamoDB table as stored: what the tests of the item
/// layout (DESIGN §3) and of data in older shapes look at. The embedded store
/// has no items (docs/embedded-store.md); its own tests look at its rows.
pub trait RawItems {
    /// An item as stored, in DynamoDB JSON.
    fn raw_item(
        &self,
        pk: &str,
        sk: &str,
    ) -> impl std::future::Future<Output = Option<serde_dynamo::Item>> + Send;
    /// Puts an item as it is (DynamoDB JSON), past the codec: data in an older shape.
    fn put_raw(&self, item: serde_dynamo::Item) -> impl std::future::Future<Output = ()> + Send;
    /// Deletes an item, as TTL does; whether there was one.
    fn delete_raw(&self, pk: &str, sk: &str) -> impl std::future::Future<Output = bool> + Send;
}

/// What TTL does past the raw window (docs/blocks.md): the raw items of
/// `readings` before `cutoff` go. Returns how many there were.
pub async fn expire_raw_before(
    store: &DynamoStore,
    readings: &[shared::model::Reading],
    cutoff: shared::model::Timestamp,
) -> usize {
    let mut gone = 0;
    for r in readings.iter().filter(|r| r.timestamp < cutoff) {
        let (pk, sk) = (r.device_id.as_str(), shared::keys::reading_sk(r.timestamp));
        gone += usize::from(store.delete_raw(pk, &sk).await);
    }
    gone
}

impl RawItems for DynamoStore {
    async fn put_raw(&self, item: serde_dynamo::Item) {
        let item: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
            item.into();
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    async fn delete_raw(&self, pk: &str, sk: &str) -> bool {
        use aws_sdk_dynamodb::types::AttributeValue::S;
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .key("pk", S(pk.into()))
            .key("sk", S(sk.into()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .unwrap();
        out.attributes().is_some()
    }

    async fn raw_item(&self, pk: &str, sk: &str) -> Option<serde_dynamo::Item> {
        use aws_sdk_dynamodb::types::AttributeValue::S;
        let out = self
            .client()
            .get_item()
            .table_name(self.table())
            .key("pk", S(pk.into()))
            .key("sk", S(sk.into()))
            .send()
            .await
            .unwrap();
        out.item().cloned().map(serde_dynamo::Item::from)
    }
}

impl TestStore for shared::store::SqliteStore {
    async fn fresh(_hint: &str) -> Self {
        shared::store::SqliteStore::in_memory().unwrap()
    }

    fn retaining(self, days: u32) -> Self {
        self.with_retention(shared::store::Retention::days(days))
    }

    const SEALS_CLOSED_DAYS: bool = true;
}

/// Runs each named generic test (`async fn name<S: TestStore>()`) on every
/// engine: dynalite through the DynamoDB adapter, and the embedded SQLite store.
#[macro_export]
macro_rules! on_every_store {
    ($($name:ident),+ $(,)?) => {
        mod dynalite {
            $( #[tokio::test] async fn $name() { super::$name::<shared::store::DynamoStore>().await } )+
        }
        mod sqlite {
            $( #[tokio::test] async fn $name() { super::$name::<shared::store::SqliteStore>().await } )+
        }
    };
}

/// `on_every_store!`, and once more on DynamoDB with batches written as
/// hour blocks: the answers a suite expects hold whichever way readings
/// were written.
/// Tests after `items_only:` run on every store but not as batches: they
/// write readings one at a time, which on a table become items that the
/// stream functions fold, and these suites run no stream functions; or
/// they read an optional index (the all-devices feed), which a table that
/// takes batches as blocks goes without.
#[macro_export]
macro_rules! on_every_store_and_batches {
    ($($name:ident),+ $(,)? $(; items_only: $($single:ident),+ $(,)?)?) => {
        $crate::on_every_store!($($name),+ $($(, $single)+)?);
        mod dynalite_batches {
            $( #[tokio::test] async fn $name() {
                $crate::AS_BATCHES.scope(true, super::$name::<shared::store::DynamoStore>()).await
            } )+
        }
    };
}

/// Writes a batch of readings to a table and runs both stream functions
/// (registry, rollups and blocks) over it, as the table's stream would.
pub async fn write_through_stream_functions(store: &DynamoStore, batch: &[shared::model::Reading]) {
    assert!(store.write_readings(batch).await.unwritten.is_empty());
    through_stream_functions(store, batch).await;
}

/// Runs both stream functions over the INSERT records of `items` (reading
/// items already written), as the table's stream would.
pub async fn through_stream_functions(store: &DynamoStore, items: &[shared::model::Reading]) {
    let event = stream_event_for(items);
    assert!(shared::stream::handle(store, event.clone())
        .await
        .batch_item_failures
        .is_empty());
    let report = shared::stream::rollups::handle_batch(store, &event).await;
    assert_eq!(report.failed, None);
}

/// Every reading of a device, page after page, oldest first.
pub async fn every_reading<S: shared::store::Store>(
    store: &S,
    device: &shared::model::DeviceId,
) -> Vec<shared::model::Reading> {
    use shared::model::{TimeRange, Timestamp};
    use shared::store::{Order, RangeRequest};
    let mut request = RangeRequest {
        range: TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
        order: Order::Asc,
        limit: 1000,
        after: None,
    };
    let mut out = Vec::new();
    loop {
        let page = store.device_readings(device, &request).await.unwrap();
        out.extend(page.readings);
        match page.next {
            Some(next) => request.after = Some(next),
            None => return out,
        }
    }
}

/// A DynamoDB Streams event with one INSERT record per reading, as the table
/// would emit them (sequence numbers in order).
pub fn stream_event_for(
    readings: &[shared::model::Reading],
) -> shared::aws_lambda_events::event::dynamodb::Event {
    let records: Vec<_> = readings
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let item: serde_dynamo::Item = serde_dynamo::to_item(shared::store::dynamodb::item::ReadingItem::from_reading(r)).unwrap();
            let image = serde_json::to_value(&item).unwrap();
            let keys = json!({"pk": image["pk"], "sk": image["sk"]});
            serde_json::from_value(json!({
                "eventID": format!("e{i}"),
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": {"Keys": keys, "NewImage": image, "SequenceNumber": format!("{:021}", i + 1), "SizeBytes": 100, "StreamViewType": "NEW_AND_OLD_IMAGES"}
            }))
            .unwrap()
        })
        .collect();
    stream_event(records)
}

/// The template with its conditions decided: `!If [Cond, a, b]` becomes `a`
/// or `b`, and `!Ref AWS::NoValue` drops out of lists and mappings.
pub fn resolve_template(
    v: &serde_yaml_ng::Value,
    conditions: &[(&str, bool)],
) -> Option<serde_yaml_ng::Value> {
    use serde_yaml_ng::value::{Tag, TaggedValue};
    match v {
        serde_yaml_ng::Value::Tagged(t) if t.tag == Tag::new("If") => {
            let args = t.value.as_sequence().unwrap();
            let name = args[0].as_str().unwrap();
            let on = conditions
                .iter()
                .find(|(c, _)| *c == name)
                .unwrap_or_else(|| panic!("condition {name} not decided"))
                .1;
            resolve_template(&args[if on { 1 } else { 2 }], conditions)
        }
        serde_yaml_ng::Value::Tagged(t)
            if t.tag == Tag::new("Ref") && t.value.as_str() == Some("AWS::NoValue") =>
        {
            None
        }
        serde_yaml_ng::Value::Tagged(t) => {
            Some(serde_yaml_ng::Value::Tagged(Box::new(TaggedValue {
                tag: t.tag.clone(),
                value: resolve_template(&t.value, conditions)?,
            })))
        }
        serde_yaml_ng::Value::Sequence(items) => Some(serde_yaml_ng::Value::Sequence(
            items
                .iter()
                .filter_map(|i| resolve_template(i, conditions))
                .collect(),
        )),
        serde_yaml_ng::Value::Mapping(m) => Some(serde_yaml_ng::Value::Mapping(
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), resolve_template(v, conditions)?)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// The template's conditions for a combination of its optional indexes.
pub fn template_conditions(indexes: shared::store::Indexes) -> Vec<(&'static str, bool)> {
    vec![
        ("HasToken", false),
        ("HasRoomIndex", indexes.room_time),
        ("HasBoxSearch", indexes.box_search),
        ("HasAllDevicesFeed", indexes.all_devices),
        ("HasRoomAttribute", indexes.room_time || indexes.box_search),
        // The default: the table is protected from deletion.
        ("HasDeletionProtection", true),
        // The default: on demand.
        ("IsProvisioned", false),
        // The default: batches written as blocks.
        ("HasBatchBlocks", true),
    ]
}

/// Every combination of the optional indexes (box search, all-devices feed; docs/cost.md).
pub const INDEX_COMBINATIONS: [(bool, bool); 4] =
    [(false, false), (true, false), (false, true), (true, true)];

/// `template.yaml`, parsed.
pub fn template() -> serde_yaml_ng::Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// Rewrites an embedded store file's day rollups as the build before gas
/// and water were kept wrote them (issue 79): version 4 bodies, without the
/// volumes. How many it rewrote.
pub fn rollups_as_before_volumes(file: &std::path::Path) -> usize {
    use shared::store::format::rollup_body;
    let conn = rusqlite::Connection::open(file).unwrap();
    let bodies: Vec<(i64, i64, Vec<u8>)> = conn
        .prepare("SELECT device, start, body FROM rollups WHERE span = 1")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut rewritten = 0;
    for (device, start, body) in bodies {
        if body[0] != rollup_body::VERSION_5 {
            continue;
        }
        let mut before = rollup_body::decode(&body, start).unwrap();
        before.x = None;
        let old = rollup_body::encode(&before, start).unwrap();
        assert_eq!(old[0], rollup_body::VERSION);
        conn.execute(
            "UPDATE rollups SET body = ?1 WHERE device = ?2 AND span = 1 AND start = ?3",
            rusqlite::params![old, device, start],
        )
        .unwrap();
        rewritten += 1;
    }
    rewritten
}
