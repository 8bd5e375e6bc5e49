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
    /// The devices whose stored rollups an earlier version wrote in a shape
    /// that does not stand for all they report (a gas or water meter's
    /// rollups from before those counters were kept), and the span they
    /// cover: what an upgrade rebuilds (`rollups::catch_up`). An engine
    /// whose own upkeep rewrites them has none to name.
    fn stale_rollups(
        &self,
    ) -> impl Future<Output = Result<Vec<(DeviceId, TimeRange)>, StoreError>> + Send {
        async { Ok(Vec::new()) }
    }
}
