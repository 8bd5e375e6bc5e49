//! Queries: time ranges of a device or a room (one page, with an opaque cursor),
//! latest reading, and registry lookups that fall back to the table on a cache miss.

use crate::keys::{CursorError, CursorScope};
use crate::model::{DeviceId, Reading, RoomId, TimeRange};
use crate::registry::RegistryCache;
use crate::store::{DeviceRecord, Order, RangeRequest, RoomRecord, Store, StoreError};

/// A validated range query (from the HTTP parameters).
#[derive(Debug, Clone)]
pub struct ReadingsQuery {
    pub range: TimeRange,
    pub order: Order,
    pub limit: usize,
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadingsPage {
    pub readings: Vec<Reading>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("cursor {0}")]
    Cursor(#[from] CursorError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub enum Partition<'a> {
    Device(&'a DeviceId),
    Room(&'a RoomId),
}

/// One page of readings of a device or room.
pub async fn readings<S: Store>(
    store: &S,
    partition: Partition<'_>,
    q: &ReadingsQuery,
) -> Result<ReadingsPage, QueryError> {
    let descending = q.order == Order::Desc;
    let scope = match partition {
        Partition::Device(device) => CursorScope::Device {
            device,
            range: &q.range,
            descending,
        },
        Partition::Room(room) => CursorScope::Room {
            room,
            range: &q.range,
            descending,
        },
    };
    let after = q.cursor.as_deref().map(|c| scope.decode(c)).transpose()?;
    let request = RangeRequest {
        range: q.range,
        order: q.order,
        limit: q.limit,
        after,
    };
    let page = match partition {
        Partition::Device(device) => store.device_readings(device, &request).await?,
        Partition::Room(room) => store.room_readings(room, &request).await?,
    };
    Ok(ReadingsPage {
        next_cursor: page.next.as_ref().map(|p| scope.encode(p)),
        readings: page.readings,
    })
}

/// A device from the cache, or from the table when the cache has not seen it yet.
pub async fn device<S: Store>(
    store: &S,
    cache: &RegistryCache,
    id: &DeviceId,
) -> Result<Option<DeviceRecord>, StoreError> {
    match cache.current(store).await.devices.get(id) {
        Some(d) => Ok(Some(d.clone())),
        None => store.device(id).await,
    }
}

/// A room from the cache, or from the table when the cache has not seen it yet.
pub async fn room<S: Store>(
    store: &S,
    cache: &RegistryCache,
    id: &RoomId,
) -> Result<Option<RoomRecord>, StoreError> {
    match cache.current(store).await.rooms.get(id) {
        Some(r) => Ok(Some(r.clone())),
        None => store.room(id).await,
    }
}
