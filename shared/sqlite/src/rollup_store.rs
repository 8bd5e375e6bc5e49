//! SqliteStore's part of the storage interface: rollups as the aggregates read them.

use crate::SqliteStore;
use domain::aggregate::rollup::{Rollup, Tally};
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::{DeviceId, RoomId, Span, TimeRange, Timestamp};
use storage::RollupStore;
use storage::StoreError;

use crate::rollups;
impl RollupStore for SqliteStore {
    async fn rollup_coverage(
        &self,
        _devices: &[DeviceId],
    ) -> Result<Option<TimeRange>, StoreError> {
        // Kept in the readings' own write transaction: always complete.
        Ok(self
            .rollup_reads
            .then(|| TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN < MAX")))
    }

    async fn rollups(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> Result<Vec<Rollup>, StoreError> {
        let (range, cache) = (*range, self.hours.clone());
        self.metered_rollups(device, (span, &range), move |conn, id, device, sized| {
            rollups::within(conn, (id, device), span, &range, sized, Some(&cache))
        })
        .await
    }

    async fn rollup_tallies(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
        room: Option<&RoomId>,
    ) -> Result<Vec<(Timestamp, Option<Tally>)>, StoreError> {
        let (range, room, cache) = (*range, room.cloned(), self.hours.clone());
        self.metered_rollups(device, (span, &range), move |conn, id, device, sized| {
            let mut bytes = 0;
            let sized = sized.map(|len| (len, &mut bytes));
            let found = match span {
                Span::Day => rollups::day_tallies_within(
                    conn,
                    id,
                    &range,
                    room.as_ref(),
                    sized,
                    Some(&cache),
                )?,
                Span::Hour => rollups::hour_tallies_within(
                    conn,
                    (id, device),
                    &range,
                    room.as_ref(),
                    sized,
                    Some(&cache),
                )?,
            };
            Ok((found, bytes))
        })
        .await
    }

    async fn rollup_counters(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> Result<Vec<RollupCounters>, StoreError> {
        let (range, cache) = (*range, self.hours.clone());
        self.metered_rollups(device, (span, &range), move |conn, id, device, sized| {
            let mut bytes = 0;
            let sized = sized.map(|len| (len, &mut bytes));
            let found = rollups::counters_within(conn, (id, device), span, &range, sized, &cache)?;
            Ok((found, bytes))
        })
        .await
    }
}
