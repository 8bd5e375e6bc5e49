//! What users set on the registry: a device's name and room, a room's
//! name. The sandbox's registry cache is told, so that its lists show the
//! change on their next read.

use super::RegistryCache;
use domain::model::{DeviceId, Name, RoomId};
use storage::{DeviceRecord, RoomRecord, Store, StoreError};

/// Sets a device's name (`None` removes it) and, when given, its room;
/// the device as it now is (it is created if it has not reported yet).
pub async fn set_device_profile<S: Store>(
    store: &S,
    cache: &RegistryCache,
    device: &DeviceId,
    name: Option<&Name>,
    room: Option<&RoomId>,
) -> Result<Option<DeviceRecord>, StoreError> {
    store.set_device_profile(device, name, room).await?;
    cache.invalidate();
    store.device(device).await
}

/// Sets a room's name (`None` removes it); the room as it now is.
pub async fn set_room_name<S: Store>(
    store: &S,
    cache: &RegistryCache,
    room: &RoomId,
    name: Option<&Name>,
) -> Result<Option<RoomRecord>, StoreError> {
    store.set_room_name(room, name).await?;
    cache.invalidate();
    store.room(room).await
}
