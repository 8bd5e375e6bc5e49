//! Rollups on DynamoDB: refreshed behind the writes by the rollups stream
//! function, rebuilt request by request.

use crate::DynamoStore;
use domain::model::{DeviceId, TimeRange, Timestamp};
use domain::rollup_upkeep::{rebuild, refresh};
use std::collections::BTreeSet;
use storage::{RollupWrites, StoreError, Upkeep};

/// Maintenance, not a client's request: it may make thousands of requests,
/// so each has its own budget rather than sharing one.
impl Upkeep for DynamoStore {
    async fn refresh_rollups(
        &self,
        device: &DeviceId,
        hours: BTreeSet<Timestamp>,
    ) -> Result<RollupWrites, StoreError> {
        // Boxed: a deep future, polled under the stream handler's.
        Box::pin(refresh(&mut self.rollup_spans(device), hours)).await
    }

    async fn rebuild_rollups(
        &self,
        device: &DeviceId,
        range: TimeRange,
    ) -> Result<usize, StoreError> {
        Box::pin(rebuild(&mut self.rollup_spans(device), range)).await
    }
}
