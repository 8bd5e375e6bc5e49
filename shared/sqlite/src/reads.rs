//! The reads on the calling thread, metered as DynamoDB would bill them:
//! what the interface's parts run, on the request's task or on tokio's
//! blocking pool.

use super::rows::Bounds;
use super::SqliteStore;
#[cfg(test)]
use crate::write_readings_with;
use crate::{names, registry, rows, series};
use domain::model::{ClimateBox, DeviceId, Reading, RoomId};
use rusqlite::Connection;
use storage::format::billing;
use storage::keys::zorder::ZKey;
#[cfg(test)]
use storage::WriteReport;
use storage::{
    metering, Order, Page, RangeRequest, SealedPage, StoreError, ZIndex, ZPage, ZRangeRequest,
};

/// The operations on the calling thread. The `Store` impl below runs the
/// sweeps on tokio's blocking pool, and the bounded ones (a page of at most
/// 10,000 readings, a record, a latest value; a batch, through `writing`)
/// directly on the request's task: the hand-off to the pool and back was a
/// third of `/latest`'s server CPU and a sixth of a raw day's. A read waits
/// for a connection only when all are busy, each with a read as bounded.
impl SqliteStore {
    /// Writes readings as at `now_ms`, which tells the closed days (written
    /// into blocks) from the open ones (rows).
    #[cfg(test)]
    pub(crate) fn write_readings_at(&self, readings: &[Reading], now_ms: i64) -> WriteReport {
        write_readings_with(&mut self.lock(), readings, now_ms)
    }

    pub(crate) fn device_readings_now(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let bounds = self
            .bounds(request)
            .after(request.order, request.after.as_ref(), device);
        self.read(|conn| {
            let Some(id) = names::find(conn, names::DEVICE, device.as_str())? else {
                return Ok(Page::default());
            };
            let mut readings = series::device_readings(
                conn,
                id,
                device,
                bounds,
                request.order,
                request.limit + 1,
            )?;
            let more = readings.len() > request.limit;
            readings.truncate(request.limit);
            Ok(Page::of(readings, more))
        })
    }

    /// A room's readings: the room's devices (from the registry) read by
    /// their keys, keeping the rows written in the room; no room index.
    pub(crate) fn room_readings_now(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        self.read(|conn| {
            let Some((room_id, devices)) = registry::room_devices(conn, room)? else {
                return Ok(Page::default());
            };
            self.merged(&devices, request, |(id, device), bounds, n| {
                series::room_readings(
                    conn,
                    (room_id, room),
                    (*id, device),
                    bounds,
                    request.order,
                    n,
                )
            })
        })
    }

    /// Every device's readings: their key ranges merged (one seek per device
    /// per page; a household has tens of devices).
    pub(crate) fn all_readings_now(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        self.read(|conn| {
            let devices = names::devices(conn)?;
            self.merged(&devices, request, |(id, device), bounds, n| {
                series::device_readings(conn, *id, device, bounds, request.order, n)
            })
        })
    }

    /// One page of several devices' readings in (time, device) order: each
    /// device's first `limit + 1` after the request's position, merged.
    pub(crate) fn merged(
        &self,
        devices: &[(i64, DeviceId)],
        request: &RangeRequest,
        read: impl Fn(&(i64, DeviceId), Bounds, usize) -> Result<Vec<Reading>, StoreError>,
    ) -> Result<Page, StoreError> {
        let bounds = self.bounds(request);
        let pages = devices
            .iter()
            .map(|device| {
                let bounds = bounds.after(request.order, request.after.as_ref(), &device.1);
                read(device, bounds, request.limit + 1).map(|readings| Page {
                    readings,
                    next: None,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(storage::merge_pages(pages, request))
    }

    pub(crate) fn z_range_now(
        &self,
        index: &Index,
        request: &ZRangeRequest<'_>,
    ) -> Result<ZPage, StoreError> {
        let keep_from = self.keep_from();
        self.read(|conn| {
            let Some((room, devices)) = index.devices(conn)? else {
                return Ok(ZPage::default());
            };
            series::z_range(conn, &devices, room, request, keep_from)
        })
    }

    pub(crate) fn sealed_in_box_now(
        &self,
        index: &Index,
        inside: &ClimateBox,
        after: Option<&ZKey>,
        limit: usize,
    ) -> Result<SealedPage, StoreError> {
        let keep_from = self.keep_from();
        let room = match index {
            Index::Room(room) => Some(room),
            Index::Device(_) => None,
        };
        self.read(|conn| {
            let Some((_, devices)) = index.devices(conn)? else {
                return Ok(SealedPage::default());
            };
            series::sealed_in_box(conn, &devices, room, inside, after, limit, keep_from)
        })
    }

    pub(crate) fn latest_reading_now(
        &self,
        device: &DeviceId,
    ) -> Result<Option<Reading>, StoreError> {
        let bounds = Bounds {
            lo: self
                .keep_from()
                .unwrap_or(domain::model::Timestamp::MIN.millis()),
            hi: domain::model::Timestamp::MAX.millis(),
        };
        self.read(|conn| {
            let Some(id) = names::find(conn, names::DEVICE, device.as_str())? else {
                return Ok(None);
            };
            Ok(
                series::device_readings(conn, id, device, bounds, Order::Desc, 1)?
                    .into_iter()
                    .next(),
            )
        })
    }
}

/// What reading a page would cost on DynamoDB (`storage::format::billing`): the
/// embedded store meters by the same item sizes.
pub(crate) fn meter_page(page: &Page) {
    if !metering::metering() {
        return;
    }
    let bytes = billing::readings_size(&page.readings);
    metering::add_read_units(billing::read_units(bytes));
}

/// What reading `read` items of an index (or readings of decoded blocks)
/// would cost on DynamoDB, at the mean size of those returned.
pub(crate) fn meter_index_read(items: &[(ZKey, Reading)], read: usize) {
    if !metering::metering() || read == 0 {
        return;
    }
    let bytes = billing::readings_size(items.iter().map(|(_, r)| r));
    let mean = bytes / items.len().max(1);
    metering::add_read_units(billing::read_units(bytes.max(mean * read)));
}

/// A room's id (none for a device's index) and the devices it holds.
pub(crate) type IndexDevices = (Option<i64>, Vec<rows::DeviceEntry>);

/// A `ZIndex` owned, to cross onto the blocking pool.
pub(crate) enum Index {
    Room(RoomId),
    Device(DeviceId),
}

impl Index {
    pub(crate) fn of(index: ZIndex<'_>) -> Self {
        match index {
            ZIndex::Room(r) => Index::Room(r.clone()),
            ZIndex::Device(d) => Index::Device(d.clone()),
        }
    }

    /// The devices it holds, with their ids (a room's: every device that has
    /// been in it), and the room's id; `None` when nothing was ever written.
    pub(crate) fn devices(&self, conn: &Connection) -> Result<Option<IndexDevices>, StoreError> {
        Ok(match self {
            Index::Device(device) => names::find(conn, names::DEVICE, device.as_str())?
                .map(|id| (None, vec![(id, device.clone())])),
            Index::Room(room) => registry::room_devices(conn, room)?
                .map(|(room_id, devices)| (Some(room_id), devices)),
        })
    }
}
