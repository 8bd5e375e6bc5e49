//! SqliteStore's part of the storage interface: the registry of devices and rooms.

use crate::{write_with, SqliteStore};
use domain::model::{DeviceId, Name, RoomId};
use storage::RegistryStore;
use storage::{
    DeviceListRequest, DevicePage, DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomListRequest,
    RoomPage, RoomRecord, RoomUpdate, StoreError,
};

use crate::registry;
impl RegistryStore for SqliteStore {
    async fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        self.blocking(|s| s.read(registry::load)).await
    }

    async fn device_page(&self, request: &DeviceListRequest) -> Result<DevicePage, StoreError> {
        self.read(|conn| registry::device_page(conn, request))
    }

    async fn room_page(&self, request: &RoomListRequest) -> Result<RoomPage, StoreError> {
        self.read(|conn| registry::room_page(conn, request))
    }

    async fn rooms_of(
        &self,
        devices: &[DeviceId],
    ) -> Result<Vec<(DeviceId, Option<RoomId>)>, StoreError> {
        self.read(|conn| registry::rooms_of(conn, devices))
    }

    async fn device(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        self.read(|conn| registry::device(conn, device))
    }

    async fn room(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        self.read(|conn| registry::room(conn, room))
    }

    async fn apply_device_update(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        let update = update.clone();
        self.writing(move |w| {
            write_with(w, |tx, names, cache| {
                registry::apply_device(tx, names, &mut cache.registry, &update)
            })
        })
        .await
    }

    async fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        let (device, name, room) = (device.clone(), name.cloned(), room.cloned());
        self.writing(move |w| {
            write_with(w, |tx, names, cache| {
                let records = &mut cache.registry;
                registry::set_device_profile(
                    tx,
                    names,
                    records,
                    &device,
                    name.as_ref(),
                    room.as_ref(),
                )
            })
        })
        .await
    }

    async fn set_room_name(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        let (room, name) = (room.clone(), name.cloned());
        self.writing(move |w| {
            write_with(w, |tx, names, cache| {
                registry::set_room_name(tx, names, &mut cache.registry, &room, name.as_ref())
            })
        })
        .await
    }

    async fn apply_room_update(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        let update = update.clone();
        self.writing(move |w| {
            write_with(w, |tx, names, cache| {
                registry::apply_room(tx, names, &mut cache.registry, &update)
            })
        })
        .await
    }
}
