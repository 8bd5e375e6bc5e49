//! `ingester-local reindex`: gives every stored reading the keys of the
//! optional indexes this store keeps (`z` for box search, `shard` and `ats`
//! for the all-devices feed), so that turning an index on later, changing the
//! shard count, or a table from before the index, answers for all its
//! readings. One page of one Scan segment at a time, so that segments run in
//! parallel and a stopped run resumes from the last key of each (the caller
//! keeps them). Nothing is removed: turning an index off leaves its keys on
//! the readings, where they cost only their bytes. It also back-fills room
//! presence and moves DEVICE items' `room` to `in_room` (issue 25).

use super::calls::Request;
use super::{decode_reading, reading_item, s, unavailable, DynamoStore, Item};
use crate::item::{DeviceItem, ReadingItem, RoomItem};
use aws_sdk_dynamodb::types::AttributeValue;
use domain::model::{DeviceId, RoomId, Span, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use storage::keys::{attr, DEVICE_PARTITION, READING_PREFIX, ROOM_PARTITION};
use storage::StoreError;

/// Where a Scan segment stands: the key of the last item it read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScanKey {
    pub pk: String,
    pub sk: String,
}

/// One page of one segment.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReindexPage {
    /// Reading items read.
    pub scanned: usize,
    /// Readings given keys they lacked (or had for another shard count).
    pub updated: usize,
    /// Where the segment goes on; `None` when it is done.
    pub next: Option<ScanKey>,
}

/// The attributes an index keys on, written by `reindex`.
const INDEX_KEYS: [&str; 3] = [attr::Z, attr::SHARD, attr::ATS];

impl DynamoStore {
    /// An estimate of the table's items (DescribeTable, updated by DynamoDB
    /// about every six hours): the progress bar's length.
    pub async fn approximate_item_count(&self) -> Result<u64, StoreError> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table)
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(out.table().and_then(|t| t.item_count()).unwrap_or(0).max(0) as u64)
    }

    /// Reads one page of Scan segment `segment` of `segments`, from `start`,
    /// and gives each reading on it the index keys it lacks.
    pub async fn reindex_page(
        &self,
        segment: i32,
        segments: i32,
        start: Option<&ScanKey>,
        page_size: i32,
    ) -> Result<ReindexPage, StoreError> {
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .segment(segment)
            .total_segments(segments)
            .limit(page_size)
            .filter_expression("begins_with(#sk, :ts)")
            .expression_attribute_names("#sk", attr::SK)
            .expression_attribute_values(":ts", s(READING_PREFIX))
            .set_exclusive_start_key(start.map(|k| {
                Item::from([
                    (attr::PK.to_owned(), s(&k.pk)),
                    (attr::SK.to_owned(), s(&k.sk)),
                ])
            }))
            .retried(self)
            .await
            .map_err(unavailable)?;
        let mut page = ReindexPage {
            next: out.last_evaluated_key().and_then(|k| {
                Some(ScanKey {
                    pk: k.get(attr::PK)?.as_s().ok()?.clone(),
                    sk: k.get(attr::SK)?.as_s().ok()?.clone(),
                })
            }),
            ..ReindexPage::default()
        };
        // Room presence from before presence was kept (issue 25): once per
        // (room, day, device) on the page; a put is idempotent.
        let mut presence: BTreeMap<RoomId, BTreeSet<(DeviceId, Timestamp)>> = BTreeMap::new();
        for item in out.items() {
            let (Some(AttributeValue::S(pk)), Some(AttributeValue::S(sk))) =
                (item.get(attr::PK), item.get(attr::SK))
            else {
                continue;
            };
            if !ReadingItem::is_reading_key(pk, sk) {
                continue;
            }
            page.scanned += 1;
            let reading = decode_reading(item)?;
            if let Some(room) = reading.room() {
                presence.entry(room.clone()).or_default().insert((
                    reading.device_id.clone(),
                    Span::Day.start_of(reading.timestamp),
                ));
            }
            let wanted = reading_item(&reading, &self.expiry(), self.shards, self.indexes);
            let missing: Vec<(&str, &AttributeValue)> = INDEX_KEYS
                .iter()
                .filter_map(|name| Some((*name, wanted.get(*name)?)))
                .filter(|(name, v)| item.get(*name) != Some(*v))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(pk))
                .key(attr::SK, s(sk))
                // Never bring back a reading deleted meanwhile (TTL, by hand).
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK);
            let mut sets = Vec::new();
            for (i, (name, value)) in missing.iter().enumerate() {
                sets.push(format!("#a{i} = :v{i}"));
                update = update
                    .expression_attribute_names(format!("#a{i}"), *name)
                    .expression_attribute_values(format!(":v{i}"), (*value).clone());
            }
            match update
                .update_expression(format!("SET {}", sets.join(", ")))
                .retried(self)
                .await
            {
                Ok(_) => page.updated += 1,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(unavailable(e)),
            }
        }
        for (room, days) in &presence {
            self.put_presence(room, days).await?;
        }
        Ok(page)
    }

    /// After every segment of a reindex is done: every room's presence is
    /// complete (`presence_since` from the beginning), and DEVICE items from
    /// before `in_room` get it in place of `room`, leaving the `room-time`
    /// index (issue 25).
    pub async fn finish_registry_upgrade(&self) -> Result<(), StoreError> {
        let rooms: Vec<RoomItem> = self.partition(ROOM_PARTITION).await?;
        for room in rooms {
            self.client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(ROOM_PARTITION))
                .key(attr::SK, s(&room.sk))
                .update_expression("SET #since = :since")
                .expression_attribute_names("#since", attr::PRESENCE_SINCE)
                .expression_attribute_values(":since", s(&Timestamp::MIN.to_string()))
                .retried(self)
                .await
                .map_err(unavailable)?;
        }
        let devices: Vec<DeviceItem> = self.partition(DEVICE_PARTITION).await?;
        for device in devices {
            let (None, Some(room)) = (&device.in_room, &device.room) else {
                continue;
            };
            self.client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(DEVICE_PARTITION))
                .key(attr::SK, s(&device.sk))
                .update_expression("SET #in_room = if_not_exists(#in_room, :room) REMOVE #room")
                .expression_attribute_names("#in_room", attr::DEVICE_ROOM)
                .expression_attribute_names("#room", attr::ROOM)
                .expression_attribute_values(":room", s(room))
                .retried(self)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}
