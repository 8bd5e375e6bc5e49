//! DynamoStore's part of the storage interface: rollups as the aggregates read them.

use crate::DynamoStore;
use domain::aggregate::rollup::Rollup;
use domain::model::{DeviceId, Span, TimeRange, Timestamp};
use storage::RollupStore;
use storage::StoreError;

use crate::calls;
impl RollupStore for DynamoStore {
    async fn rollup_coverage(&self, devices: &[DeviceId]) -> Result<Option<TimeRange>, StoreError> {
        Ok(self.rollup_cover(devices).await?.map(|(r, _)| r))
    }

    async fn rollup_cover(
        &self,
        devices: &[DeviceId],
    ) -> Result<Option<(TimeRange, Timestamp)>, StoreError> {
        calls::operation(&self.policy, async { self.coverage(devices).await }).await
    }

    async fn rollups(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> Result<Vec<Rollup>, StoreError> {
        calls::operation(&self.policy, async {
            self.read_rollups(device, span, range).await
        })
        .await
    }
}
