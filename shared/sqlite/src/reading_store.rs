//! SqliteStore's part of the storage interface: readings written and read.

use crate::{meter_index_read, meter_page, write_readings_with, Index, SqliteStore};
use domain::model::{ClimateBox, DeviceId, Reading, RoomId, Timestamp};
use storage::keys::zorder::ZKey;
use storage::ReadingStore;
use storage::{
    Page, RangeRequest, SealedPage, StoreError, WriteReport, ZIndex, ZPage, ZRangeRequest,
};

impl ReadingStore for SqliteStore {
    async fn write_readings(&self, readings: &[Reading]) -> WriteReport {
        self.write_owned_readings(readings.to_vec()).await
    }

    async fn write_owned_readings(&self, readings: Vec<Reading>) -> WriteReport {
        self.writing(move |w| write_readings_with(w, &readings, Timestamp::now().millis()))
            .await
    }

    async fn device_readings(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        self.device_readings_now(device, request)
            .inspect(meter_page)
    }

    async fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        self.room_readings_now(room, request).inspect(meter_page)
    }

    async fn all_readings(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        self.all_readings_now(request).inspect(meter_page)
    }

    async fn z_range(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> Result<ZPage, StoreError> {
        let index = Index::of(index);
        let (from, to, after, limit): (ZKey, ZKey, Option<ZKey>, usize) = (
            request.from.clone(),
            request.to.clone(),
            request.after.cloned(),
            request.limit,
        );
        self.blocking(move |s| {
            let request = ZRangeRequest {
                from: &from,
                to: &to,
                after: after.as_ref(),
                limit,
            };
            s.z_range_now(&index, &request)
        })
        .await
        .inspect(|page| meter_index_read(&page.items, page.scanned))
    }

    async fn sealed_in_box(
        &self,
        index: ZIndex<'_>,
        inside: &ClimateBox,
        after: Option<&ZKey>,
        limit: usize,
    ) -> Result<SealedPage, StoreError> {
        let (index, inside, after) = (Index::of(index), *inside, after.cloned());
        self.blocking(move |s| s.sealed_in_box_now(&index, &inside, after.as_ref(), limit))
            .await
            .inspect(|page| meter_index_read(&page.items, page.decoded))
    }

    async fn latest_reading(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        self.latest_reading_now(device)
    }
}
