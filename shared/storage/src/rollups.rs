//! The rollups part of the storage interface (docs/rollups.md).

use crate::StoreError;
use domain::aggregate::rollup::{Rollup, Tally};
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::{DeviceId, RoomId, Span, TimeRange, Timestamp};
use std::future::Future;

/// A device's hour and day rollups, as the aggregates read them.
pub trait RollupStore: Send + Sync {
    /// The time range over which every one of `devices` has complete rollups
    /// (`None`: none). The embedded store keeps them in the readings' own
    /// transaction, so always; on DynamoDB the stream function keeps them a
    /// little behind, from the hour it first saw each device
    /// (`rollups rebuild` extends that back).
    fn rollup_coverage(
        &self,
        _devices: &[DeviceId],
    ) -> impl Future<Output = Result<Option<TimeRange>, StoreError>> + Send {
        async { Ok(None) }
    }
    /// `rollup_coverage`, and the first day whose day rollups may lag
    /// behind their hours (the open day of the device that has the
    /// earliest one; `Timestamp::MAX` where day rollups are always whole).
    fn rollup_cover(
        &self,
        devices: &[DeviceId],
    ) -> impl Future<Output = Result<Option<(TimeRange, Timestamp)>, StoreError>> + Send {
        async move {
            Ok(self
                .rollup_coverage(devices)
                .await?
                .map(|r| (r, Timestamp::MAX)))
        }
    }
    /// A device's rollups of a span that lie wholly inside `range`, oldest first.
    fn rollups(
        &self,
        _device: &DeviceId,
        _span: Span,
        _range: &TimeRange,
    ) -> impl Future<Output = Result<Vec<Rollup>, StoreError>> + Send {
        async { Ok(Vec::new()) }
    }
    /// The tallies of `rollups`, with their starts: of the readings that
    /// named `room`, or of all of them (`None`; `None` as a tally where no
    /// reading of the span named the room). What a stats answer folds; an
    /// engine may read them without building whole rollups.
    fn rollup_tallies(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
        room: Option<&RoomId>,
    ) -> impl Future<Output = Result<Vec<(Timestamp, Option<Tally>)>, StoreError>> + Send {
        async move {
            Ok(self
                .rollups(device, span, range)
                .await?
                .into_iter()
                .map(|r| r.into_tally(room))
                .collect())
        }
    }
    /// The counters of `rollups` (`RollupCounters`): what an energy answer
    /// folds; an engine may read them without building whole rollups.
    fn rollup_counters(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> impl Future<Output = Result<Vec<RollupCounters>, StoreError>> + Send {
        async move {
            Ok(self
                .rollups(device, span, range)
                .await?
                .iter()
                .map(RollupCounters::from)
                .collect())
        }
    }
}
