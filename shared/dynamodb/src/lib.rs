//! DynamoDB adapter: BatchWriteItem in concurrent chunks of 25 with
//! `UnprocessedItems` retried (exponential backoff, full jitter, bounded total
//! time), every page of a Query read, registry updates as conditional
//! `UpdateItem`s that never move time backwards.

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, ReturnConsumedCapacity, WriteRequest};
use aws_sdk_dynamodb::Client;
use domain::aggregate::rollup::Rollup;
use domain::model::{DeviceId, Name, Reading, RoomId, Span, TimeRange, Timestamp};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::time::Duration;
use storage::keys::zorder::ZKey;
use storage::keys::{
    self, attr, ALL_TIME_INDEX, DEVICE_PARTITION, DEVICE_Z_INDEX, READING_PREFIX, ROOM_PARTITION,
    ROOM_TIME_INDEX, ROOM_Z_INDEX,
};
use storage::{
    now_epoch_seconds, Deduped, DeviceListRequest, DevicePage, DeviceRecord, DeviceUpdate, Expiry,
    Indexes, Order, Page, RangeRequest, RegistrySnapshot, Retention, RoomListRequest, RoomPage,
    RoomRecord, RoomUpdate, Store, StoreError, WriteReport, ZIndex, ZPage, ZRangeRequest,
};

mod alerts;
mod blocks;
mod calls;
pub mod item;
mod presence;
mod registry;
mod registry_pages;
mod reindex;
mod rollup_spans;
mod rollups;
mod upkeep;
pub use rollup_spans::DynamoSpans;
pub mod size;
mod table;

pub use item::reading_item;
use item::{decode_reading, DeviceItem, RoomItem};
use registry::{device_sets, RegistryWrite};

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
        }
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
    fn indexes(&self) -> Indexes {
        self.indexes
    }

    fn answers_from_rollups(&self) -> bool {
        self.rollup_lag.is_some()
    }

    async fn rollup_coverage(&self, devices: &[DeviceId]) -> Result<Option<TimeRange>, StoreError> {
        Ok(self.rollup_cover(devices).await?.map(|(r, _)| r))
    }

    async fn rollup_cover(
        &self,
        devices: &[DeviceId],
    ) -> Result<Option<(TimeRange, Timestamp)>, StoreError> {
        calls::operation(&self.policy, async { self.coverage(devices).await }).await
    }

    async fn rollups(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> Result<Vec<Rollup>, StoreError> {
        calls::operation(&self.policy, async {
            self.read_rollups(device, span, range).await
        })
        .await
    }

    async fn write_readings(&self, readings: &[Reading]) -> WriteReport {
        calls::operation(&self.policy, async {
            let deduped = Deduped::new(readings);
            let expiry = self.expiry();
            let items: Vec<(usize, Item)> = deduped
                .winners
                .iter()
                .enumerate()
                .map(|(slot, &i)| {
                    (
                        slot,
                        reading_item(&readings[i], &expiry, self.shards, self.indexes),
                    )
                })
                .collect();
            let mut chunks = Vec::with_capacity(items.len().div_ceil(BATCH_WRITE_MAX));
            let mut iter = items.into_iter().peekable();
            while iter.peek().is_some() {
                chunks.push(iter.by_ref().take(BATCH_WRITE_MAX).collect::<Vec<_>>());
            }
            let results: Vec<Vec<usize>> = futures_util::stream::iter(chunks)
                .map(|chunk| self.write_chunk(chunk))
                .buffer_unordered(self.policy.chunk_concurrency.max(1))
                .collect()
                .await;
            let failed: Vec<usize> = results.into_iter().flatten().collect();
            deduped.report(&failed)
        })
        .await
    }

    async fn device_readings(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        calls::operation(&self.policy, Box::pin(self.device_page(device, request))).await
    }

    async fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        calls::operation(&self.policy, async {
            if !self.indexes.room_time {
                return Box::pin(self.room_from_devices(room, request)).await;
            }
            let Some(cutoff) = self.raw_cutoff().filter(|c| request.range.from() < *c) else {
                return self.room_index_page(room, request).await;
            };
            // Before the cutoff, the room's devices' blocks; after it, the index.
            let devices: Vec<DeviceId> = match self.room(room).await? {
                Some(r) => r.devices.into_iter().collect(),
                None => Vec::new(),
            };
            let before = TimeRange::new(request.range.from(), request.range.to().min(cutoff)).ok();
            let after = TimeRange::new(request.range.from().max(cutoff), request.range.to()).ok();
            let mut parts = [(true, before), (false, after)];
            if request.order == Order::Desc {
                parts.reverse();
            }
            let mut readings = Vec::new();
            for (old, part) in parts {
                let Some(part) = part else { continue };
                if readings.len() == request.limit {
                    return Ok(Page::of(readings, true));
                }
                let mut sub = RangeRequest {
                    range: part,
                    order: request.order,
                    limit: request.limit - readings.len(),
                    after: request.after.clone(),
                };
                let page = if old {
                    Box::pin(self.room_before_cutoff(room, &sub, &devices)).await?
                } else {
                    // The index's start key must lie in the part's range.
                    if let Some(p) = &sub.after {
                        let (skip, drop) = match request.order {
                            Order::Asc => (p.timestamp >= part.to(), p.timestamp < part.from()),
                            Order::Desc => (p.timestamp < part.from(), p.timestamp >= part.to()),
                        };
                        if skip {
                            continue;
                        }
                        if drop {
                            sub.after = None;
                        }
                    }
                    self.room_index_page(room, &sub).await?
                };
                let more = page.next.is_some();
                readings.extend(page.readings);
                if more {
                    return Ok(Page::of(readings, true));
                }
            }
            Ok(Page::of(readings, false))
        })
        .await
    }

    async fn all_readings(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        calls::operation(&self.policy, async {
            let pages = futures_util::future::try_join_all(
                (1..=self.shards).map(|shard| self.shard_readings(shard, request)),
            )
            .await?;
            Ok(storage::merge_pages(pages, request))
        })
        .await
    }

    async fn z_range(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> Result<ZPage, StoreError> {
        calls::operation(&self.policy, async {
            let (index_name, part_attr, part_value) = match index {
                ZIndex::Room(room) => (ROOM_Z_INDEX, attr::ROOM, room.as_str()),
                ZIndex::Device(device) => (DEVICE_Z_INDEX, attr::PK, keys::reading_pk(device)),
            };
            let start = match request.after {
                None => None,
                Some(after) => {
                    // An index's start key is its own key plus the table's.
                    let (device, t) = after.parts().ok_or_else(|| {
                        StoreError::Corrupt(format!("z key {:?}", after.as_str()))
                    })?;
                    let mut key = Item::with_capacity(4);
                    key.insert(attr::PK.to_owned(), s(keys::reading_pk(&device)));
                    key.insert(attr::SK.to_owned(), AttributeValue::S(keys::reading_sk(t)));
                    key.insert(attr::Z.to_owned(), s(after.as_str()));
                    key.insert(part_attr.to_owned(), s(part_value));
                    Some(key)
                }
            };
            let query = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index_name)
                .key_condition_expression("#part = :part AND #z BETWEEN :from AND :to")
                .expression_attribute_names("#part", part_attr)
                .expression_attribute_names("#z", attr::Z)
                .expression_attribute_values(":part", s(part_value))
                .expression_attribute_values(":from", s(request.from.as_str()))
                .expression_attribute_values(":to", s(request.to.as_str()))
                .set_exclusive_start_key(start)
                .limit(request.limit.min(i32::MAX as usize) as i32);
            let out = unexpired(query)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            metered(out.consumed_capacity());
            let z_of = |item: &Item| -> Result<ZKey, StoreError> {
                item.get(attr::Z)
                    .and_then(|v| v.as_s().ok())
                    .and_then(|z| ZKey::parse(z))
                    .ok_or_else(|| StoreError::Corrupt("index item without a valid z".into()))
            };
            let items = out
                .items()
                .iter()
                .map(|item| Ok((z_of(item)?, decode_reading(item)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(ZPage {
                items,
                scanned: out.scanned_count().max(0) as usize,
                last_read: out.last_evaluated_key().map(z_of).transpose()?,
            })
        })
        .await
    }

    async fn latest_reading(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        calls::operation(&self.policy, async {
            let query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_names("#sk", attr::SK)
                .expression_attribute_values(":pk", s(keys::reading_pk(device)))
                .expression_attribute_values(":prefix", s(READING_PREFIX))
                .scan_index_forward(false);
            // With a filter, Limit counts items read before filtering: keep reading pages until one passes.
            let (items, _) = self.query_pages(unexpired(query), 1).await?;
            match items.first() {
                Some(item) => decode_reading(item).map(Some),
                // Silent for longer than the raw window: its newest block.
                None => Box::pin(self.latest_before_cutoff(device)).await,
            }
        })
        .await
    }

    async fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        calls::operation(&self.policy, async {
            let (devices, rooms) = tokio::try_join!(
                self.partition::<DeviceItem>(DEVICE_PARTITION),
                self.partition::<RoomItem>(ROOM_PARTITION)
            )?;
            let mut snapshot = RegistrySnapshot::default();
            for d in devices {
                let record = d.into_record().map_err(StoreError::Corrupt)?;
                snapshot.devices.insert(record.device_id.clone(), record);
            }
            for r in rooms {
                let record = r.into_record().map_err(StoreError::Corrupt)?;
                snapshot.rooms.insert(record.room_id.clone(), record);
            }
            Ok(snapshot)
        })
        .await
    }

    async fn device_page(&self, request: &DeviceListRequest) -> Result<DevicePage, StoreError> {
        calls::operation(&self.policy, self.device_list_page(request)).await
    }

    async fn room_page(&self, request: &RoomListRequest) -> Result<RoomPage, StoreError> {
        calls::operation(&self.policy, self.room_list_page(request)).await
    }

    async fn rooms_of(
        &self,
        devices: &[DeviceId],
    ) -> Result<Vec<(DeviceId, Option<RoomId>)>, StoreError> {
        calls::operation(&self.policy, self.batch_rooms(devices)).await
    }

    async fn device(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        calls::operation(&self.policy, async {
            self.get::<DeviceItem>(DEVICE_PARTITION, device.as_str())
                .await?
                .map(|d| d.into_record().map_err(StoreError::Corrupt))
                .transpose()
        })
        .await
    }

    async fn room(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        calls::operation(&self.policy, async {
            self.get::<RoomItem>(ROOM_PARTITION, room.as_str())
                .await?
                .map(|r| r.into_record().map_err(StoreError::Corrupt))
                .transpose()
        })
        .await
    }

    async fn apply_device_update(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.apply_registry_update(RegistryWrite {
                pk: DEVICE_PARTITION,
                sk: update.device_id.as_str(),
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: device_sets(update),
                room: update.room.as_ref(),
                presence_since: None,
            })
            .await
        })
        .await
    }

    async fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.set_user_attributes(DEVICE_PARTITION, device.as_str(), name, room)
                .await
        })
        .await
    }

    async fn set_room_name(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.set_user_attributes(ROOM_PARTITION, room.as_str(), name, None)
                .await
        })
        .await
    }

    async fn apply_room_update(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            // Presence first: a ROOM item never names a device whose days
            // are not there yet.
            self.put_presence(&update.room_id, &update.presence).await?;
            if !update.record {
                return Ok(());
            }
            // A room first seen by this version: presence is complete from
            // the next UTC day (readings earlier that day may have gone by
            // an older registry function).
            let since = Span::Day.end_of(Span::Day.start_of(update.first_seen));
            self.apply_registry_update(RegistryWrite {
                pk: ROOM_PARTITION,
                sk: update.room_id.as_str(),
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: vec![(
                    "devices",
                    update.devices.iter().map(|d| d.to_string()).collect(),
                )],
                room: None,
                presence_since: Some(since),
            })
            .await
        })
        .await
    }
}
