//! DynamoDB adapter: BatchWriteItem in concurrent chunks of 25 with
//! `UnprocessedItems` retried (exponential backoff, full jitter, bounded total
//! time), every page of a Query read, registry updates as conditional
//! `UpdateItem`s that never move time backwards.

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, ReturnConsumedCapacity, WriteRequest};
use aws_sdk_dynamodb::Client;
use domain::model::{DeviceId, RoomId, TimeRange};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::time::Duration;
use storage::keys::{self, attr, ALL_TIME_INDEX, ROOM_TIME_INDEX};
use storage::{
    now_epoch_seconds, Capabilities, Expiry, Indexes, Order, Page, RangeRequest, Retention, Store,
    StoreError,
};

mod alerts;
mod batch_blocks;
mod blocks;
mod calls;
pub mod item;
mod presence;
mod reading_store;
mod registry;
mod registry_pages;
mod registry_store;
mod reindex;
mod rollup_spans;
mod rollup_store;
mod rollups;
mod stream_positions;
mod upkeep;
pub use rollup_spans::DynamoSpans;
pub mod size;
mod table;

use item::decode_reading;
pub use item::reading_item;

use calls::Request;
pub use calls::{CallPolicy, DeadlineExceeded};
pub use reindex::{ReindexPage, ScanKey};

type Item = HashMap<String, AttributeValue>;

/// How far behind now the rollups stream function is assumed to be at worst:
/// its batching window (300 s) with room for retries. Aggregates read the
/// readings for the hours after that.
pub const DEFAULT_ROLLUP_LAG: Duration = Duration::from_secs(15 * 60);

/// BatchWriteItem's hard limit.
pub const BATCH_WRITE_MAX: usize = 25;

#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    policy: CallPolicy,
    /// Page size of registry loads; `None` lets DynamoDB fill 1 MB pages.
    registry_page_limit: Option<i32>,
    retention: Option<Retention>,
    /// How long a reading's own item is kept (`RAW_READING_DAYS`): past it,
    /// the reading is read from its hour's block (`blocks`). `None`: forever.
    raw: Option<Retention>,
    shards: u32,
    /// Answer aggregates from rollups up to this far behind now; `None`: never.
    rollup_lag: Option<Duration>,
    /// The optional indexes the table has, and readings carry keys for.
    indexes: Indexes,
    /// Whether batches of closed hours are written as hour blocks, and
    /// reads of the raw stretch take hour blocks too (`BATCH_BLOCKS`,
    /// docs/batches.md).
    hour_blocks: bool,
}

impl DynamoStore {
    /// How many `all-time` shards readings are written to.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// One page of one `all-time` shard: readings of any device in the range,
    /// ordered by (time, device), after `request.after`.
    async fn shard_readings(&self, shard: u32, request: &RangeRequest) -> Result<Page, StoreError> {
        let (lo, hi) = keys::all_time_sk_bounds(&request.range);
        let pk = keys::all_time_pk(shard);
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(ALL_TIME_INDEX)
            .key_condition_expression("#shard = :shard AND #ats BETWEEN :lo AND :hi")
            .expression_attribute_names("#shard", attr::SHARD)
            .expression_attribute_names("#ats", attr::ATS)
            .expression_attribute_values(":shard", s(&pk))
            .expression_attribute_values(":lo", s(&lo))
            .expression_attribute_values(":hi", s(&hi))
            .scan_index_forward(request.order == Order::Asc)
            .set_exclusive_start_key(request.after.as_ref().map(|p| {
                HashMap::from([
                    (attr::SHARD.to_owned(), s(&pk)),
                    (
                        attr::ATS.to_owned(),
                        AttributeValue::S(keys::all_time_sk(p.timestamp, &p.device_id)),
                    ),
                    (attr::PK.to_owned(), s(keys::reading_pk(&p.device_id))),
                    (
                        attr::SK.to_owned(),
                        AttributeValue::S(keys::reading_sk(p.timestamp)),
                    ),
                ])
            }));
        let (items, more) = self.query_pages(unexpired(query), request.limit).await?;
        page_of(items, more)
    }

    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            policy: CallPolicy::default(),
            registry_page_limit: None,
            retention: None,
            raw: None,
            shards: keys::DEFAULT_SHARDS,
            rollup_lag: Some(DEFAULT_ROLLUP_LAG),
            indexes: Indexes::ALL,
            hour_blocks: false,
        }
    }

    /// Whether batches are written as hour blocks: asked for, with rollups
    /// kept, and with no optional index on (a reading in a block enters no
    /// index; with one on, readings stay items so that it holds every one).
    pub(crate) fn writes_hour_blocks(&self) -> bool {
        self.hour_blocks && self.rollup_lag.is_some() && self.indexes == Indexes::NONE
    }

    /// Whether the raw window is read with the hour blocks beside the items:
    /// wherever batches may have been written as blocks, whatever indexes
    /// are on now (one turned on later does not hide them), and whether
    /// aggregates use rollups or not.
    pub(crate) fn reads_hour_blocks(&self) -> bool {
        self.hour_blocks
    }

    /// Batches of closed hours written as hour blocks (`BATCH_BLOCKS`), and
    /// the raw stretch read with the hour blocks beside its items.
    pub fn with_hour_blocks(mut self, on: bool) -> Self {
        self.hour_blocks = on;
        self
    }

    /// The optional indexes: readings carry the keys of the enabled ones
    /// only, and `create_table` creates those only.
    pub fn with_indexes(mut self, indexes: Indexes) -> Self {
        self.indexes = indexes;
        self
    }

    /// How far behind now aggregates may use rollups (`None`: never, the
    /// readings answer everything; a baseline in tests and benches).
    pub fn with_rollup_lag(mut self, lag: Option<Duration>) -> Self {
        self.rollup_lag = lag;
        self
    }

    /// The adapter's retries, budget and write concurrency (`calls`).
    pub fn with_policy(mut self, policy: CallPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Writes readings with `expires_at` (`RETENTION_DAYS`).
    pub fn with_retention(mut self, retention: Option<Retention>) -> Self {
        self.retention = retention;
        self
    }

    /// Writes readings with a raw window (`RAW_READING_DAYS`): their items
    /// expire after it, and reads take older readings from hour blocks.
    pub fn with_raw_window(mut self, raw: Option<Retention>) -> Self {
        self.raw = raw;
        self
    }

    /// When the items written now expire.
    pub(crate) fn expiry(&self) -> Expiry {
        Expiry {
            retention: self.retention,
            raw: self.raw,
            now: now_epoch_seconds(),
        }
    }

    /// Writes readings to `shards` `all-time` shards and reads all of them
    /// (`ALL_DEVICES_SHARDS`; changing it needs the re-index of `docs/all-devices.md`).
    pub fn with_shards(mut self, shards: u32) -> Self {
        self.shards = shards.max(1);
        self
    }

    /// Smaller registry pages (tests use it to prove that every page is read).
    pub fn with_registry_page_limit(mut self, limit: i32) -> Self {
        self.registry_page_limit = Some(limit);
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// A room's page from the `room-time` index (raw items).
    async fn room_index_page(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let (lo, hi) = keys::reading_sk_bounds(&request.range);
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(ROOM_TIME_INDEX)
            .key_condition_expression("#room = :room AND #sk BETWEEN :lo AND :hi")
            .expression_attribute_names("#room", attr::ROOM)
            .expression_attribute_names("#sk", attr::SK)
            .expression_attribute_values(":room", s(room.as_str()))
            .expression_attribute_values(":lo", s(&lo))
            .expression_attribute_values(":hi", s(&hi))
            .scan_index_forward(request.order == Order::Asc)
            .set_exclusive_start_key(request.after.as_ref().map(|p| {
                HashMap::from([
                    (attr::ROOM.to_owned(), s(room.as_str())),
                    (
                        attr::SK.to_owned(),
                        AttributeValue::S(keys::reading_sk(p.timestamp)),
                    ),
                    (attr::PK.to_owned(), s(keys::reading_pk(&p.device_id))),
                ])
            }));
        // The index projects temperature and humidity: a reading in the room with
        // neither (a CO2 or light sensor) is not the room route's. Filtered
        // items still advance the paging (Limit counts what is read).
        let query = query
            .expression_attribute_names("#temperature", "temperature")
            .expression_attribute_names("#humidity", "humidity");
        let condition = "attribute_exists(#temperature) OR attribute_exists(#humidity)";
        let (items, more) = self
            .query_pages(unexpired_and(query, Some(condition)), request.limit)
            .await?;
        page_of(items, more)
    }

    /// Writes one chunk; returns the slots that are still unwritten when it
    /// gives up. The one loop that retries `BatchWriteItem`: transient
    /// errors and `UnprocessedItems` alike, inside the operation's deadline.
    async fn write_chunk(&self, chunk: Vec<(usize, Item)>) -> Vec<usize> {
        let pending: std::sync::Mutex<Vec<(usize, WriteRequest)>> = std::sync::Mutex::new(
            chunk
                .into_iter()
                .map(|(slot, item)| {
                    let put = PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .expect("item is set");
                    (slot, WriteRequest::builder().put_request(put).build())
                })
                .collect(),
        );
        let pending_ref = &pending;
        let attempt = move || async move {
            let requests: Vec<WriteRequest> =
                lock(pending_ref).iter().map(|(_, w)| w.clone()).collect();
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table, requests)
                .send_once()
                .await
                .map_err(|e| ChunkError::Failed(Box::new(e)))?;
            let unprocessed = out
                .unprocessed_items()
                .and_then(|m| m.get(&self.table))
                .map(|v| v.as_slice())
                .unwrap_or_default();
            if unprocessed.is_empty() {
                lock(pending_ref).clear();
                return Ok(());
            }
            let left: Vec<(String, String)> = unprocessed.iter().filter_map(request_key).collect();
            let mut pending = lock(pending_ref);
            pending.retain(|(_, w)| request_key(w).is_some_and(|k| left.contains(&k)));
            Err(ChunkError::Unprocessed(pending.len()))
        };
        let result = calls::retrying(
            &self.policy,
            "BatchWriteItem",
            attempt,
            |e| match e {
                ChunkError::Failed(err) => calls::is_transient(err),
                ChunkError::Unprocessed(_) => true,
            },
            || ChunkError::Failed(Box::new(calls::deadline_exceeded(&self.policy))),
        )
        .await;
        let left: Vec<usize> = lock(&pending).iter().map(|(s, _)| *s).collect();
        if let Err(err) = result {
            tracing::error!(error = %DisplayErrorContext(&err), unwritten = left.len(), "BatchWriteItem gave up");
        }
        left
    }

    /// Reads pages of a Query until `limit` items or the end; returns items and
    /// whether more may follow.
    async fn query_pages(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
    ) -> Result<(Vec<Item>, bool), StoreError> {
        self.query_kept(query, limit, |item| Ok(Some(item.clone())))
            .await
    }

    /// `query_pages`, each item turned into what `keep` makes of it (`None`:
    /// dropped, and not counted against `limit`).
    async fn query_kept<T>(
        &self,
        mut query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
        mut keep: impl FnMut(&Item) -> Result<Option<T>, StoreError>,
    ) -> Result<(Vec<T>, bool), StoreError> {
        let mut items = Vec::new();
        loop {
            let remaining = (limit - items.len()).min(i32::MAX as usize) as i32;
            let out = query
                .clone()
                .limit(remaining)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            metered(out.consumed_capacity());
            for item in out.items() {
                if let Some(kept) = keep(item)? {
                    items.push(kept);
                }
            }
            match out.last_evaluated_key() {
                Some(lek) if items.len() < limit => {
                    query = query.set_exclusive_start_key(Some(lek.clone()));
                }
                Some(_) => return Ok((items, true)),
                None => return Ok((items, false)),
            }
        }
    }

    /// A Query of one partition's sort keys from `lo` to `hi`, inclusive.
    fn sk_range_query(
        &self,
        pk: &str,
        lo: String,
        hi: String,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#sk", attr::SK)
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":lo", AttributeValue::S(lo))
            .expression_attribute_values(":hi", AttributeValue::S(hi))
    }

    /// A Query of a device's readings in `range`.
    fn readings_query(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let (lo, hi) = keys::reading_sk_bounds(range);
        self.sk_range_query(keys::reading_pk(device), lo, hi)
    }

    /// Every item of one registry partition, all pages.
    async fn partition<T: DeserializeOwned>(&self, pk: &str) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":pk", s(pk))
                .set_exclusive_start_key(start.take())
                .set_limit(self.registry_page_limit)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            metered(page.consumed_capacity());
            for item in page.items() {
                out.push(
                    serde_dynamo::from_item(item.clone())
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                );
            }
            match page.last_evaluated_key() {
                Some(lek) => start = Some(lek.clone()),
                None => return Ok(out),
            }
        }
    }

    async fn get<T: DeserializeOwned>(&self, pk: &str, sk: &str) -> Result<Option<T>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(pk))
            .key(attr::SK, s(sk))
            .retried(self)
            .await
            .map_err(unavailable)?;
        out.item()
            .map(|i| {
                serde_dynamo::from_item(i.clone()).map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .transpose()
    }
}

/// Hides readings past `expires_at` that TTL has not deleted yet.
fn unexpired(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
    unexpired_and(query, None)
}

/// `unexpired`, and a further condition on the items.
fn unexpired_and(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    condition: Option<&str>,
) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
    let live = "(attribute_not_exists(#expires_at) OR #expires_at > :now)";
    query
        .filter_expression(match condition {
            Some(c) => format!("{live} AND ({c})"),
            None => live.to_owned(),
        })
        .expression_attribute_names("#expires_at", "expires_at")
        .expression_attribute_values(":now", AttributeValue::N(now_epoch_seconds().to_string()))
}

/// Counts what a response says it consumed against the metered request
/// (`store::metering`).
fn metered(consumed: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>) {
    if let Some(units) = consumed.and_then(|c| c.capacity_units()) {
        storage::metering::add_read_units(units);
    }
}

/// Counts what a write says it consumed against the metered writes
/// (`store::metering::metered_writes`); returns the units.
fn metered_write(consumed: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>) -> f64 {
    let units = consumed.and_then(|c| c.capacity_units()).unwrap_or(0.0);
    storage::metering::add_write_units(units);
    units
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

/// Why a `BatchWriteItem` attempt did not write its whole chunk.
#[derive(Debug, thiserror::Error)]
enum ChunkError {
    #[error("BatchWriteItem failed: {}", DisplayErrorContext(.0))]
    Failed(
        Box<
            SdkError<
                aws_sdk_dynamodb::operation::batch_write_item::BatchWriteItemError,
                aws_sdk_dynamodb::config::http::HttpResponse,
            >,
        >,
    ),
    #[error("BatchWriteItem left {0} items unprocessed")]
    Unprocessed(usize),
}

/// The chunk's pending requests (no attempt holds the lock across an await).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn request_key(w: &WriteRequest) -> Option<(String, String)> {
    let item = w.put_request()?.item();
    Some((
        item.get(attr::PK)?.as_s().ok()?.clone(),
        item.get(attr::SK)?.as_s().ok()?.clone(),
    ))
}

fn is_condition_failed<R>(
    err: &SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError, R>,
) -> bool {
    err.as_service_error()
        .is_some_and(|e| e.is_conditional_check_failed_exception())
}

fn unavailable<
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
>(
    err: SdkError<E, R>,
) -> StoreError {
    StoreError::Unavailable(DisplayErrorContext(&err).to_string())
}

fn page_of(items: Vec<Item>, more: bool) -> Result<Page, StoreError> {
    let readings = items
        .iter()
        .map(decode_reading)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::of(readings, more))
}

impl Store for DynamoStore {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            indexes: self.indexes,
            answers_from_rollups: self.rollup_lag.is_some(),
            // A reading in a block enters no index: with one on, readings
            // stay items, so that the index holds every one.
            hour_blocks_from_batches: self.writes_hour_blocks(),
            ..Capabilities::default()
        }
    }
}
