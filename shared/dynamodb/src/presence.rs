//! Room presence on DynamoDB (issue 25; docs/access-patterns.md): one small
//! item per (room, UTC day, device) in the room's presence partition,
//! `pk=ROOM#<room>`, `sk=<day>#<device>`, put by the registry function the
//! first time it sees the device in the room that day. With `RoomIndex`
//! disabled, a room's readings are its devices' readings naming it, read
//! from their own partitions over the stretches `domain::room_presence`
//! gives, and merged in (time, device) order as the index would order them.

use super::calls::Request;
use super::item::RoomItem;
use super::{metered_write, s, unavailable, DynamoStore};
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use domain::model::{DeviceId, Reading, RoomId, TimeRange, Timestamp};
use domain::room_presence::{in_room, stretches, RoomPresence};
use std::collections::{BTreeSet, VecDeque};
use storage::keys::{self, attr, ROOM_PARTITION};
use storage::{after_position, Order, Page, RangeRequest, StoreError};

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
    ///
    /// A bounded k-way merge: each device is read a chunk at a time (a fair
    /// share of the page first, then twice as much each time it is the one
    /// holding the page back), so a room of k devices reads about a page,
    /// not k pages. A reading is placed once every device that may still
    /// hold an earlier one (in (time, device) order) has been read past it.
    pub(super) async fn room_from_devices(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let presence = self.room_presence(room, &request.range).await?;
        let keep = in_room(room);
        let keep: &(dyn Fn(&Reading) -> bool + Sync) = &keep;
        let mut cursors: Vec<DeviceCursor> = stretches(&request.range, &presence)
            .into_iter()
            .filter_map(|(device, stretches)| {
                let left = after_position(
                    &request.range,
                    request.order,
                    request.after.as_ref(),
                    &device,
                )?;
                let mut parts: VecDeque<TimeRange> = stretches
                    .iter()
                    .filter_map(|s| {
                        TimeRange::new(s.from().max(left.from()), s.to().min(left.to())).ok()
                    })
                    .collect();
                if request.order == Order::Desc {
                    parts = parts.into_iter().rev().collect();
                }
                Some(DeviceCursor {
                    device,
                    parts,
                    read: Vec::new(),
                    done: false,
                    chunk: 0,
                })
            })
            .collect();
        let share = request.limit.div_ceil(cursors.len().max(1));
        let first_chunk = (share + share / 4 + 8).min(request.limit);
        for c in &mut cursors {
            c.chunk = first_chunk;
        }
        let before = |a: (Timestamp, &DeviceId), b: (Timestamp, &DeviceId)| match request.order {
            Order::Asc => a < b,
            Order::Desc => a > b,
        };
        loop {
            // The devices that may still hold a reading of the page.
            let mut keys: Vec<(Timestamp, &DeviceId)> = cursors
                .iter()
                .flat_map(|c| c.read.iter().map(|r| (r.timestamp, &r.device_id)))
                .collect();
            let bound = if request.limit > 0 && keys.len() >= request.limit {
                keys.select_nth_unstable_by(request.limit - 1, |a, b| match request.order {
                    Order::Asc => a.cmp(b),
                    Order::Desc => b.cmp(a),
                });
                Some(keys[request.limit - 1])
            } else {
                None
            };
            let behind: Vec<bool> = cursors
                .iter()
                .map(|c| {
                    !c.done
                        && match (c.read.last(), bound) {
                            (Some(last), Some(b)) => before((last.timestamp, &last.device_id), b),
                            _ => true,
                        }
                })
                .collect();
            drop(keys);
            if !behind.contains(&true) {
                break;
            }
            let reads = cursors
                .iter_mut()
                .zip(&behind)
                .filter(|(_, behind)| **behind)
                .map(|(c, _)| c.read_more(self, request.order, keep));
            futures_util::future::try_join_all(reads).await?;
        }
        let unread = cursors.iter().any(|c| !c.done);
        let pages: Vec<Page> = cursors
            .into_iter()
            .map(|c| Page::of(c.read, false))
            .collect();
        let mut page = storage::merge_pages(pages, request);
        if unread && page.next.is_none() {
            page = Page::of(page.readings, true);
        }
        page.readings = room_views(room, page.readings);
        Ok(page)
    }
}

/// A room's page as the `room-time` index projects it (`room_view`): its
/// temperature and humidity alone, on either path.
pub(super) fn room_views(room: &RoomId, readings: Vec<Reading>) -> Vec<Reading> {
    readings
        .into_iter()
        .filter_map(|r| domain::room_presence::room_view(room, r))
        .collect()
}

/// One device's readings for a room's page, read a chunk at a time.
struct DeviceCursor {
    device: DeviceId,
    /// What is left to read, in reading order.
    parts: VecDeque<TimeRange>,
    read: Vec<Reading>,
    /// Every part read to its end.
    done: bool,
    /// How many to read next time.
    chunk: usize,
}

impl DeviceCursor {
    /// Reads the next `chunk` readings (fewer at the end), and doubles `chunk`.
    async fn read_more(
        &mut self,
        store: &DynamoStore,
        order: Order,
        keep: &(dyn Fn(&Reading) -> bool + Sync),
    ) -> Result<(), StoreError> {
        let mut want = self.chunk;
        self.chunk = self.chunk.saturating_mul(2);
        while want > 0 {
            let Some(part) = self.parts.front().copied() else {
                self.done = true;
                return Ok(());
            };
            let (got, more) =
                Box::pin(store.device_part(&self.device, &part, order, want, keep)).await?;
            want = want.saturating_sub(got.len());
            match (more, got.last()) {
                // The part goes on after its last reading (one a millisecond per device).
                (true, Some(last)) => {
                    let t = last.timestamp;
                    let rest = match order {
                        Order::Asc => TimeRange::new(t.saturating_add_millis(1), part.to()),
                        Order::Desc => TimeRange::new(part.from(), t),
                    };
                    match rest {
                        Ok(rest) => self.parts[0] = rest,
                        Err(_) => {
                            self.parts.pop_front();
                        }
                    }
                }
                _ => {
                    self.parts.pop_front();
                }
            }
            self.read.extend(got);
        }
        if self.parts.is_empty() {
            self.done = true;
        }
        Ok(())
    }
}
