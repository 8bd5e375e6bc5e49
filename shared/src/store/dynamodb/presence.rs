//! Room presence on DynamoDB (issue 25; docs/access-patterns.md): one small
//! item per (room, UTC day, device) in the room's presence partition,
//! `pk=ROOM#<room>`, `sk=<day>#<device>`, put by the registry function the
//! first time it sees the device in the room that day. With `RoomIndex`
//! disabled, a room's readings are its devices' readings naming it, read
//! from their own partitions over the stretches `domain::room_presence`
//! gives, and merged in (time, device) order as the index would order them.

use super::blocks::after_position;
use super::calls::Request;
use super::item::RoomItem;
use super::{metered_write, s, unavailable, DynamoStore};
use crate::domain::room_presence::{stretches, RoomPresence};
use crate::keys::{self, attr, ROOM_PARTITION};
use crate::model::{DeviceId, Quantity, Reading, RoomId, TimeRange, Timestamp};
use crate::store::{Order, Page, RangeRequest, StoreError};
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use std::collections::BTreeSet;

/// What a room's reading must be to be the room route's: taken in the room,
/// with a temperature or a humidity (as the `room-time` index projects).
pub(super) fn in_room(room: &RoomId) -> impl Fn(&Reading) -> bool + '_ {
    move |r: &Reading| {
        r.room() == Some(room)
            && r.measurement
                .values()
                .iter()
                .any(|(q, _)| matches!(q, Quantity::Temperature | Quantity::Humidity))
    }
}

impl DynamoStore {
    /// Puts a room's presence items.
    pub(super) async fn put_presence(
        &self,
        room: &RoomId,
        presence: &BTreeSet<(DeviceId, Timestamp)>,
    ) -> Result<(), StoreError> {
        let pk = keys::presence_pk(room);
        for (device, day) in presence {
            let out = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(attr::PK, s(&pk))
                .item(attr::SK, s(&keys::presence_sk(*day, device)))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            metered_write(out.consumed_capacity());
        }
        Ok(())
    }

    /// What the registry knows of a room's devices over `range`: the ROOM
    /// item's devices and `presence_since`, and the presence items of the
    /// days `range` touches.
    pub(super) async fn room_presence(
        &self,
        room: &RoomId,
        range: &TimeRange,
    ) -> Result<RoomPresence, StoreError> {
        let Some(item) = self.get::<RoomItem>(ROOM_PARTITION, room.as_str()).await? else {
            return Ok(RoomPresence::default());
        };
        let since = item
            .presence_since
            .as_deref()
            .map(|t| {
                Timestamp::parse(t)
                    .map_err(|e| StoreError::Corrupt(format!("room {room}: presence_since: {e}")))
            })
            .transpose()?;
        let devices = item
            .devices
            .iter()
            .map(|d| DeviceId::parse(d).map_err(|e| StoreError::Corrupt(format!("{d:?}: {e}"))))
            .collect::<Result<_, _>>()?;
        let (lo, hi) = keys::presence_sk_bounds(range);
        let query = self
            .sk_range_query(&keys::presence_pk(room), lo, hi)
            .projection_expression("#sk");
        let (days, _) = self
            .query_kept(query, usize::MAX, |item| {
                let sk = item.get(attr::SK).and_then(|v| v.as_s().ok());
                sk.and_then(|sk| keys::parse_presence_sk(sk))
                    .map(|(day, device)| Some((device, day)))
                    .ok_or_else(|| StoreError::Corrupt(format!("a presence key {sk:?}")))
            })
            .await?;
        Ok(RoomPresence {
            since,
            devices,
            days: days.into_iter().collect(),
        })
    }

    /// A room's page merged from its devices' partitions (module comment).
    pub(super) async fn room_from_devices(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let presence = self.room_presence(room, &request.range).await?;
        let keep = in_room(room);
        let keep: &(dyn Fn(&Reading) -> bool + Sync) = &keep;
        let pages = futures_util::future::try_join_all(
            stretches(&request.range, &presence).into_iter().map(
                |(device, stretches)| async move {
                    let Some(left) = after_position(
                        &request.range,
                        request.order,
                        request.after.as_ref(),
                        &device,
                    ) else {
                        return Ok(Page::default());
                    };
                    let mut parts: Vec<TimeRange> = stretches
                        .iter()
                        .filter_map(|s| {
                            TimeRange::new(s.from().max(left.from()), s.to().min(left.to())).ok()
                        })
                        .collect();
                    if request.order == Order::Desc {
                        parts.reverse();
                    }
                    let mut readings = Vec::new();
                    let last = parts.len().saturating_sub(1);
                    for (i, part) in parts.into_iter().enumerate() {
                        let want = request.limit - readings.len();
                        let (mut got, more) =
                            Box::pin(self.device_part(&device, &part, request.order, want, keep))
                                .await?;
                        readings.append(&mut got);
                        if more || (readings.len() == request.limit && i < last) {
                            return Ok(Page::of(readings, true));
                        }
                    }
                    Ok::<_, StoreError>(Page::of(readings, false))
                },
            ),
        )
        .await?;
        Ok(crate::store::merge_pages(pages, request))
    }
}
