//! A rollup rebuild (`rollups rebuild`, `blocks rebuild`): the devices it
//! covers, and each device's rebuild.

use domain::model::{DeviceId, TimeRange};
use storage::{Store, StoreError, Upkeep};

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

/// Rebuilds a device's rollups over `range` from its readings; the rollups
/// written.
pub async fn rebuild_device<S: Upkeep>(
    store: &S,
    device: &DeviceId,
    range: TimeRange,
) -> Result<usize, StoreError> {
    store.rebuild_rollups(device, range).await
}
