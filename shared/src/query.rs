//! Queries: time ranges of a device or a room (one page, with an opaque cursor),
//! latest reading, and registry lookups that fall back to the table on a cache miss.

use crate::aggregate::{BucketStats, Bucketing, EnergyBucket, EnergyFold, StatsFold};
use crate::keys::{CursorError, CursorScope, Position};
use crate::model::{DeviceId, Measurement, Reading, RoomId, TimeRange, Timestamp};
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

/// A validated aggregate query (from the HTTP parameters).
#[derive(Debug, Clone, Copy)]
pub struct StatsQuery {
    pub range: TimeRange,
    pub bucketing: Bucketing,
}

/// Readings per page while aggregating: memory holds one page and the buckets.
const AGGREGATE_PAGE: usize = 1000;

async fn page<S: Store>(
    store: &S,
    partition: &Partition<'_>,
    request: &RangeRequest,
) -> Result<crate::store::Page, StoreError> {
    match partition {
        Partition::Device(d) => store.device_readings(d, request).await,
        Partition::Room(r) => store.room_readings(r, request).await,
    }
}

/// Visits every reading of a range, oldest first, one page at a time.
async fn each_reading<S: Store>(
    store: &S,
    partition: &Partition<'_>,
    range: TimeRange,
    mut visit: impl FnMut(&Reading),
) -> Result<(), StoreError> {
    let mut after: Option<Position> = None;
    loop {
        let request = RangeRequest {
            range,
            order: Order::Asc,
            limit: AGGREGATE_PAGE,
            after: after.take(),
        };
        let page = page(store, partition, &request).await?;
        page.readings.iter().for_each(&mut visit);
        match page.next {
            Some(p) => after = Some(p),
            None => return Ok(()),
        }
    }
}

/// min/max/mean/count per bucket and numeric field; empty buckets omitted.
pub async fn stats<S: Store>(
    store: &S,
    partition: Partition<'_>,
    q: &StatsQuery,
) -> Result<Vec<BucketStats>, StoreError> {
    let mut fold = StatsFold::new(q.bucketing);
    each_reading(store, &partition, q.range, |r| fold.add(r)).await?;
    Ok(fold.finish())
}

fn counters(r: &Reading) -> Option<(f64, f64)> {
    match &r.measurement {
        Measurement::Power(p) => Some((p.cumulative_kwh_p(), p.cumulative_kwh_n())),
        Measurement::Climate(_) => None,
    }
}

/// The nearest power reading outside the range, on one side.
async fn neighbour<S: Store>(
    store: &S,
    device: &DeviceId,
    range: Option<TimeRange>,
    order: Order,
) -> Result<Option<Reading>, StoreError> {
    let Some(range) = range else { return Ok(None) };
    let request = RangeRequest {
        range,
        order,
        limit: 100,
        after: None,
    };
    let page = store.device_readings(device, &request).await?;
    Ok(page.readings.into_iter().find(|r| counters(r).is_some()))
}

/// kWh bought and sold per bucket from the cumulative counters (rules in `aggregate::EnergyFold`).
pub async fn energy<S: Store>(
    store: &S,
    device: &DeviceId,
    q: &StatsQuery,
) -> Result<Vec<EnergyBucket>, StoreError> {
    let before = TimeRange::new(Timestamp::MIN, q.range.from()).ok();
    let after = TimeRange::new(q.range.to(), Timestamp::MAX).ok();
    let mut fold = EnergyFold::new(q.bucketing, q.range);
    let mut feed = |r: &Reading| {
        if let Some((p, n)) = counters(r) {
            fold.add(r.timestamp, p, n);
        }
    };
    if let Some(r) = neighbour(store, device, before, Order::Desc).await? {
        feed(&r);
    }
    each_reading(store, &Partition::Device(device), q.range, &mut feed).await?;
    if let Some(r) = neighbour(store, device, after, Order::Asc).await? {
        feed(&r);
    }
    Ok(fold.finish())
}
