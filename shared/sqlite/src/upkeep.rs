//! Rollups on the embedded store: kept in the readings' own write
//! transaction, rebuilt in one.

use crate::SqliteStore;
use domain::model::{DeviceId, TimeRange, Timestamp};
use domain::rollup_upkeep::{at_once, rebuild};
use std::collections::BTreeSet;
use storage::{RollupWrites, StoreError, Upkeep};

impl Upkeep for SqliteStore {
    async fn refresh_rollups(
        &self,
        _device: &DeviceId,
        _hours: BTreeSet<Timestamp>,
    ) -> Result<RollupWrites, StoreError> {
        // Kept in the readings' own write transaction (`keep`).
        Ok(RollupWrites::default())
    }

    /// In one write transaction.
    async fn rebuild_rollups(
        &self,
        device: &DeviceId,
        range: TimeRange,
    ) -> Result<usize, StoreError> {
        self.in_rollup_transaction(device, move |spans| at_once(rebuild(spans, range)))
            .await
            .map(Option::unwrap_or_default)
    }
}
