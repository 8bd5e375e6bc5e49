//! The devices a rollup rebuild covers.

use domain::model::DeviceId;
use storage::{Store, StoreError};

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
