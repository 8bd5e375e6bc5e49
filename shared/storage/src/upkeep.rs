//! Which part of rollup upkeep (`domain::rollup_upkeep`) an engine runs, for
//! the edges (the rollups stream function, `ingester-local rollups rebuild`
//! and `blocks rebuild`): each engine's crate implements it.

use crate::{RollupWrites, Store, StoreError};
use domain::model::{DeviceId, TimeRange, Timestamp};
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
