//! DynamoStore's part of the storage interface: readings written and read.

use crate::calls::Request;
use crate::item::decode_reading;
use crate::{metered, s, unavailable, unexpired, DynamoStore, Item, BATCH_WRITE_MAX};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use domain::model::{DeviceId, Reading, RoomId, TimeRange};
use futures_util::StreamExt;
use storage::keys::zorder::ZKey;
use storage::keys::{self, attr, DEVICE_Z_INDEX, READING_PREFIX, ROOM_Z_INDEX};
use storage::{
    Deduped, Order, Page, RangeRequest, StoreError, WriteReport, ZIndex, ZPage, ZRangeRequest,
};
use storage::{ReadingStore, RegistryStore};

use crate::calls;
use crate::reading_item;
impl ReadingStore for DynamoStore {
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

    async fn write_hour_blocks(
        &self,
        device: &DeviceId,
        readings: &[Reading],
    ) -> Result<(), StoreError> {
        calls::operation(
            &self.policy,
            Box::pin(self.hour_blocks_of(device, readings)),
        )
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
            let raw = self.query_pages(unexpired(query), 1);
            let (items, in_blocks) = if self.reads_hour_blocks() {
                // A batch written as blocks may hold the newest reading.
                let blocks = Box::pin(self.newest_in_blocks(device));
                futures_util::future::try_join(raw, blocks).await?
            } else {
                (raw.await?, None)
            };
            let raw = items.0.first().map(decode_reading).transpose()?;
            match (raw, in_blocks) {
                (Some(r), Some(b)) if b.timestamp > r.timestamp => Ok(Some(b)),
                (Some(r), _) => Ok(Some(r)),
                (None, Some(b)) => Ok(Some(b)),
                // Silent for longer than the raw window: its newest block.
                (None, None) => Box::pin(self.latest_before_cutoff(device)).await,
            }
        })
        .await
    }
}
