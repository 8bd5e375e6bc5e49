//! Which part of the use case each engine runs, for the edges (the rollups
//! stream function, `ingester-local rollups rebuild` and `blocks rebuild`).

use super::{rebuild, refresh};
use crate::domain::rollup_upkeep::at_once;
use crate::model::{DeviceId, TimeRange, Timestamp};
use crate::store::{DynamoStore, RollupWrites, Store, StoreError};
use std::collections::BTreeSet;
use std::future::Future;

/// An engine the rollups use case runs on.
pub trait Upkeep: Store {
    /// What the rollups stream function does per batch: a device's hours at
    /// `hours` (hour starts) recomputed, and what follows from them. An
    /// engine that keeps rollups in the write transaction has nothing to do.
    fn refresh_rollups(
        &self,
        device: &DeviceId,
        hours: BTreeSet<Timestamp>,
    ) -> impl Future<Output = Result<RollupWrites, StoreError>> + Send;
    /// `rebuild` of a device's rollups over the days overlapping `range`.
    fn rebuild_rollups(
        &self,
        device: &DeviceId,
        range: TimeRange,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// The devices whose rollups `rollups rebuild` builds: `only`, or every
/// device of the registry.
pub async fn devices<S: Store>(
    store: &S,
    only: Option<DeviceId>,
) -> Result<Vec<DeviceId>, StoreError> {
    let registry = store.load_registry().await?;
    Ok(registry
        .devices
        .into_keys()
        .filter(|d| only.as_ref().is_none_or(|o| o == d))
        .collect())
}

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

#[cfg(feature = "sqlite")]
impl Upkeep for crate::store::SqliteStore {
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
