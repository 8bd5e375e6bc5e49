//! The readings part of the storage interface.

use crate::keys::zorder::ZKey;
use crate::{
    Page, RangeRequest, SealedPage, StoreError, WriteReport, ZIndex, ZPage, ZRangeRequest,
};
use domain::model::{ClimateBox, DeviceId, Reading, RoomId};
use std::future::Future;

/// Readings written and read: by device, by room, across devices, by box.
pub trait ReadingStore: Send + Sync {
    /// Writes readings, last one wins for duplicate keys, and reports what is not stored.
    fn write_readings(&self, readings: &[Reading]) -> impl Future<Output = WriteReport> + Send;
    /// The same, for a caller that is done with the readings: an engine that
    /// writes on another thread takes them without a copy.
    fn write_owned_readings(
        &self,
        readings: Vec<Reading>,
    ) -> impl Future<Output = WriteReport> + Send {
        async move { self.write_readings(&readings).await }
    }
    /// Writes one device's readings of closed hours straight into those
    /// hours' blocks and rollups, with no item per reading (issue 78,
    /// docs/batches.md). Only where `capabilities().hour_blocks_from_batches`;
    /// on an error some hours may be written: the caller writes the readings
    /// again as items, which reads and rollups take as the same readings.
    fn write_hour_blocks(
        &self,
        _device: &DeviceId,
        _readings: &[Reading],
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async {
            Err(StoreError::Unavailable(
                "this store writes no hour blocks from batches".into(),
            ))
        }
    }
    fn device_readings(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// Climate readings of every device in a room (through the `room-time` index).
    fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// One page of every device's readings in the range, ordered by (time,
    /// device), after `request.after`. (How: the engine's business; DynamoDB
    /// reads its `all-time` shards concurrently and merges them.)
    fn all_readings(
        &self,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// One read of a Z-order index, as DynamoDB's Query with `Limit` reads.
    /// An engine that seals spans into blocks indexes its unsealed readings
    /// only; `sealed_in_box` finds the rest.
    fn z_range(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> impl Future<Output = Result<ZPage, StoreError>> + Send;
    /// The sealed readings of a room or device inside a box, in Z order
    /// after `after`, at most `limit`: blocks whose header (times, minimum
    /// and maximum) meets the box, decoded. None on an engine without blocks.
    fn sealed_in_box(
        &self,
        _index: ZIndex<'_>,
        _inside: &ClimateBox,
        _after: Option<&ZKey>,
        _limit: usize,
    ) -> impl Future<Output = Result<SealedPage, StoreError>> + Send {
        async { Ok(SealedPage::default()) }
    }
    fn latest_reading(
        &self,
        device: &DeviceId,
    ) -> impl Future<Output = Result<Option<Reading>, StoreError>> + Send;
}
