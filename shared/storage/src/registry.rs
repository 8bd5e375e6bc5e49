//! The registry part of the storage interface.

use crate::{DeviceListRequest, DevicePage, RoomListRequest, RoomPage, StoreError};
use domain::model::{DeviceId, Name, RoomId};
use domain::registry::{DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomRecord, RoomUpdate};
use std::future::Future;

/// The registry of devices and rooms: read whole or a page at a time,
/// updated from readings, and what users set.
pub trait RegistryStore: Send + Sync {
    /// Every device and room (all pages).
    fn load_registry(&self) -> impl Future<Output = Result<RegistrySnapshot, StoreError>> + Send;
    /// One page of the device list in id order, as its filter admits
    /// (`domain::registry_list`).
    fn device_page(
        &self,
        request: &DeviceListRequest,
    ) -> impl Future<Output = Result<DevicePage, StoreError>> + Send;
    /// One page of the room list in id order.
    fn room_page(
        &self,
        request: &RoomListRequest,
    ) -> impl Future<Output = Result<RoomPage, StoreError>> + Send;
    /// The registered room of each of `devices` that has a record (`None`
    /// inside: registered, in no room): what an ingest asks when the
    /// sandbox does not hold the whole registry. An engine may answer in
    /// one request.
    fn rooms_of(
        &self,
        devices: &[DeviceId],
    ) -> impl Future<Output = Result<Vec<(DeviceId, Option<RoomId>)>, StoreError>> + Send {
        async move {
            let mut found = Vec::with_capacity(devices.len());
            for d in devices {
                if let Some(record) = self.device(d).await? {
                    found.push((record.device_id, record.room));
                }
            }
            Ok(found)
        }
    }
    fn device(
        &self,
        device: &DeviceId,
    ) -> impl Future<Output = Result<Option<DeviceRecord>, StoreError>> + Send;
    fn room(
        &self,
        room: &RoomId,
    ) -> impl Future<Output = Result<Option<RoomRecord>, StoreError>> + Send;
    /// Idempotent and monotonic: never moves `last_seen`/`latest` back, `first_seen` only earlier.
    fn apply_device_update(
        &self,
        update: &DeviceUpdate,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn apply_room_update(
        &self,
        update: &RoomUpdate,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// What a user sets on a device: its name (`None` removes it) and, when given, its room.
    /// Creates the registry item if the device has not reported yet.
    fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// A room's name (`None` removes it); creates the registry item if needed.
    fn set_room_name(
        &self,
        room: &RoomId,
        name: Option<&Name>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
