//! A stream batch's hours refreshed on the engine that keeps rollups behind
//! its writes (`storage::Upkeep`; on the embedded store there is nothing to
//! do: its writes kept them).

use domain::model::{DeviceId, Timestamp};
use std::collections::BTreeSet;
use storage::{RollupWrites, StoreError, Upkeep};

/// A device's rollups at `hours` (hour starts) recomputed, and what follows
/// from them.
pub async fn refresh_hours<S: Upkeep>(
    store: &S,
    device: &DeviceId,
    hours: BTreeSet<Timestamp>,
) -> Result<RollupWrites, StoreError> {
    store.refresh_rollups(device, hours).await
}
