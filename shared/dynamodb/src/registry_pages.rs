//! The registry a page at a time (issue 76): a device or room list read
//! from the `DEVICE`/`ROOM` partition page by page, a room's devices by
//! `BatchGetItem`, and the rooms of a batch's devices, so that no sandbox
//! reads the whole fleet to answer one page or one write.

use super::calls::{self, Request};
use super::item::{DeviceItem, RoomItem};
use super::{attr, metered, s, unavailable, DynamoStore, Item};
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};
use domain::model::{DeviceId, RoomId};
use serde::Deserialize;
use std::collections::HashMap;
use storage::keys::{DEVICE_PARTITION, ROOM_PARTITION};
use storage::{DeviceListRequest, DevicePage, DeviceRecord, RoomListRequest, RoomPage, StoreError};

/// Most Query requests one page of a filtered list reads before it answers
/// with what it found and a cursor past what it read: a sparse filter over
/// 100,000 devices (35 MB of items) is then several requests of the
/// client's, each well inside the operation's deadline.
const QUERIES_PER_PAGE: usize = 4;

/// Items a filtered Query evaluates at least, so that a sparse filter does
/// not read a fleet a few items at a time.
const FILTERED_QUERY_LIMIT: i32 = 500;

/// Keys in one `BatchGetItem` (DynamoDB's limit).
const BATCH_GET_KEYS: usize = 100;

/// What an ingest reads of a device: its room.
#[derive(Debug, Deserialize)]
struct DeviceRoom {
    sk: String,
    #[serde(default)]
    in_room: Option<String>,
    /// Items from before `in_room`.
    #[serde(default)]
    room: Option<String>,
}

impl DynamoStore {
    pub(super) async fn device_list_page(
        &self,
        request: &DeviceListRequest,
    ) -> Result<DevicePage, StoreError> {
        if let Some(room) = &request.filter.room {
            return self.room_device_page(room, request).await;
        }
        let filter = &request.filter;
        let mut conditions = Vec::new();
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_values(":pk", s(DEVICE_PARTITION));
        query = match &filter.prefix {
            Some(prefix) => query
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", attr::SK)
                .expression_attribute_values(":prefix", s(prefix)),
            None => query.key_condition_expression("#pk = :pk"),
        };
        if let Some(kind) = filter.kind {
            conditions.push("contains(#types, :type)");
            query = query
                .expression_attribute_names("#types", "types")
                .expression_attribute_values(":type", s(kind.as_str()));
        }
        if let Some(t) = filter.silent_since {
            conditions.push("(attribute_not_exists(#last_seen) OR #last_seen < :silent)");
            query = query
                .expression_attribute_names("#last_seen", "last_seen")
                .expression_attribute_values(":silent", s(&t.to_string()));
        }
        // The text filter (any case) is applied as items are kept.
        let filtered = !conditions.is_empty() || filter.text.is_some();
        if !conditions.is_empty() {
            query = query.filter_expression(conditions.join(" AND "));
        }
        if let Some(after) = &request.after {
            query = query.set_exclusive_start_key(Some(key(DEVICE_PARTITION, after.as_str())));
        }
        let (items, stopped_at) = self
            .list_pages(query, request.limit, filtered, |item| {
                let record = decode::<DeviceItem>(item)?
                    .into_record()
                    .map_err(StoreError::Corrupt)?;
                Ok(filter.admits(&record).then_some(record))
            })
            .await?;
        let stopped_at = stopped_at
            .map(|sk| DeviceId::parse(&sk).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()?;
        Ok(DevicePage::of(items, request.limit, stopped_at))
    }

    pub(super) async fn room_list_page(
        &self,
        request: &RoomListRequest,
    ) -> Result<RoomPage, StoreError> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_values(":pk", s(ROOM_PARTITION));
        query = match &request.filter.prefix {
            Some(prefix) => query
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", attr::SK)
                .expression_attribute_values(":prefix", s(prefix)),
            None => query.key_condition_expression("#pk = :pk"),
        };
        if let Some(after) = &request.after {
            query = query.set_exclusive_start_key(Some(key(ROOM_PARTITION, after.as_str())));
        }
        let filtered = request.filter.text.is_some();
        let (items, stopped_at) = self
            .list_pages(query, request.limit, filtered, |item| {
                let record = decode::<RoomItem>(item)?
                    .into_record()
                    .map_err(StoreError::Corrupt)?;
                Ok(request.filter.admits(&record).then_some(record))
            })
            .await?;
        let stopped_at = stopped_at
            .map(|sk| RoomId::parse(&sk).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()?;
        Ok(RoomPage::of(items, request.limit, stopped_at))
    }

    /// Reads a list's Query until one more than `limit` records are kept,
    /// the partition ends, or (`filtered`) `QUERIES_PER_PAGE` requests were
    /// made: then the sort key it read last, to go on after.
    async fn list_pages<T>(
        &self,
        mut query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
        filtered: bool,
        mut keep: impl FnMut(&Item) -> Result<Option<T>, StoreError>,
    ) -> Result<(Vec<T>, Option<String>), StoreError> {
        let mut kept = Vec::new();
        for request in 1.. {
            let wanted = (limit + 1 - kept.len()).min(i32::MAX as usize) as i32;
            let evaluate = if filtered {
                wanted.max(FILTERED_QUERY_LIMIT)
            } else {
                wanted
            };
            let out = query
                .clone()
                .limit(evaluate)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            metered(out.consumed_capacity());
            for item in out.items() {
                if let Some(record) = keep(item)? {
                    kept.push(record);
                }
            }
            let Some(last) = out.last_evaluated_key() else {
                return Ok((kept, None));
            };
            if kept.len() > limit {
                return Ok((kept, None));
            }
            if request >= QUERIES_PER_PAGE && filtered {
                let sk = last
                    .get(attr::SK)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
                    .ok_or_else(|| StoreError::Corrupt("a list page's last key".into()))?;
                return Ok((kept, Some(sk)));
            }
            query = query.set_exclusive_start_key(Some(last.clone()));
        }
        unreachable!("the loop returns")
    }

    /// A page of the devices that reported in `room`: the room item's
    /// device set in id order, read by `BatchGetItem`.
    async fn room_device_page(
        &self,
        room: &RoomId,
        request: &DeviceListRequest,
    ) -> Result<DevicePage, StoreError> {
        let Some(item) = self.get::<RoomItem>(ROOM_PARTITION, room.as_str()).await? else {
            return Ok(DevicePage::of(Vec::new(), request.limit, None));
        };
        let mut ids: Vec<String> = item.devices;
        ids.sort();
        let after = request.after.as_ref().map(|d| d.as_str());
        let prefix = request.filter.prefix.as_deref().unwrap_or("");
        let ids: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| after.is_none_or(|a| *id > a) && id.starts_with(prefix))
            .collect();
        let mut kept: Vec<DeviceRecord> = Vec::new();
        for chunk in ids.chunks(BATCH_GET_KEYS) {
            let mut records = Vec::with_capacity(chunk.len());
            for item in self.batch_get(DEVICE_PARTITION, chunk, None).await? {
                let record = decode::<DeviceItem>(&item)?
                    .into_record()
                    .map_err(StoreError::Corrupt)?;
                if request.filter.admits(&record) {
                    records.push(record);
                }
            }
            records.sort_by(|a, b| a.device_id.cmp(&b.device_id));
            kept.append(&mut records);
            if kept.len() > request.limit {
                break;
            }
        }
        Ok(DevicePage::of(kept, request.limit, None))
    }

    /// The rooms of the devices of a batch, by `BatchGetItem` of their
    /// `in_room` only.
    pub(super) async fn batch_rooms(
        &self,
        devices: &[DeviceId],
    ) -> Result<Vec<(DeviceId, Option<RoomId>)>, StoreError> {
        let mut ids: Vec<&str> = devices.iter().map(|d| d.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH_GET_KEYS) {
            for item in self
                .batch_get(DEVICE_PARTITION, chunk, Some("#sk, #in_room, #room"))
                .await?
            {
                let d: DeviceRoom = decode(&item)?;
                let device =
                    DeviceId::parse(&d.sk).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let room = d
                    .in_room
                    .or(d.room)
                    .map(|r| RoomId::parse(&r).map_err(|e| StoreError::Corrupt(e.to_string())))
                    .transpose()?;
                found.push((device, room));
            }
        }
        Ok(found)
    }

    /// The items of `sks` in partition `pk` (at most `BATCH_GET_KEYS`), in
    /// no order; `UnprocessedKeys` asked again inside the operation's
    /// deadline, by the adapter's one retry loop.
    async fn batch_get(
        &self,
        pk: &str,
        sks: &[&str],
        projection: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        let pending = std::sync::Mutex::new(
            sks.iter()
                .map(|sk| key(pk, sk))
                .collect::<Vec<HashMap<String, AttributeValue>>>(),
        );
        let found = std::sync::Mutex::new(Vec::new());
        let (pending_ref, found_ref) = (&pending, &found);
        let attempt = move || async move {
            let keys = lock(pending_ref).clone();
            if keys.is_empty() {
                return Ok(());
            }
            let mut wanted = KeysAndAttributes::builder().set_keys(Some(keys));
            if let Some(p) = projection {
                wanted = wanted
                    .projection_expression(p)
                    .expression_attribute_names("#sk", attr::SK)
                    .expression_attribute_names("#in_room", attr::DEVICE_ROOM)
                    .expression_attribute_names("#room", attr::ROOM);
            }
            let out = self
                .client
                .batch_get_item()
                .request_items(
                    &self.table,
                    wanted
                        .build()
                        .map_err(|e| BatchGetError::Build(e.to_string()))?,
                )
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| BatchGetError::Failed(Box::new(e)))?;
            for c in out.consumed_capacity() {
                metered(Some(c));
            }
            if let Some(items) = out.responses().and_then(|r| r.get(&self.table)) {
                lock(found_ref).extend(items.iter().cloned());
            }
            let left = out
                .unprocessed_keys()
                .and_then(|m| m.get(&self.table))
                .map(|k| k.keys().to_vec())
                .unwrap_or_default();
            let unprocessed = left.len();
            *lock(pending_ref) = left;
            if unprocessed == 0 {
                Ok(())
            } else {
                Err(BatchGetError::Unprocessed(unprocessed))
            }
        };
        calls::retrying(
            &self.policy,
            "BatchGetItem",
            attempt,
            |e| match e {
                BatchGetError::Failed(err) => calls::is_transient(err),
                BatchGetError::Unprocessed(_) => true,
                BatchGetError::Build(_) => false,
            },
            || BatchGetError::Failed(Box::new(calls::deadline_exceeded(&self.policy))),
        )
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()))
    }
}

#[derive(Debug, thiserror::Error)]
enum BatchGetError {
    #[error("BatchGetItem failed: {}", DisplayErrorContext(.0))]
    Failed(
        Box<
            aws_sdk_dynamodb::error::SdkError<
                aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemError,
                aws_sdk_dynamodb::config::http::HttpResponse,
            >,
        >,
    ),
    #[error("BatchGetItem left {0} keys unprocessed")]
    Unprocessed(usize),
    #[error("BatchGetItem request: {0}")]
    Build(String),
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn key(pk: &str, sk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([(attr::PK.to_owned(), s(pk)), (attr::SK.to_owned(), s(sk))])
}

fn decode<T: serde::de::DeserializeOwned>(item: &Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item.clone()).map_err(|e| StoreError::Corrupt(e.to_string()))
}
