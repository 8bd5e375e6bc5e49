//! DynamoStore's part of the storage interface: the registry of devices and rooms.

use crate::item::{DeviceItem, RoomItem};
use crate::registry::{device_sets, RegistryWrite};
use crate::DynamoStore;
use domain::model::{DeviceId, Name, RoomId, Span};
use storage::keys::{DEVICE_PARTITION, ROOM_PARTITION};
use storage::RegistryStore;
use storage::{
    DeviceListRequest, DevicePage, DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomListRequest,
    RoomPage, RoomRecord, RoomUpdate, StoreError,
};

use crate::calls;
impl RegistryStore for DynamoStore {
    async fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        calls::operation(&self.policy, async {
            let (devices, rooms) = tokio::try_join!(
                self.partition::<DeviceItem>(DEVICE_PARTITION),
                self.partition::<RoomItem>(ROOM_PARTITION)
            )?;
            let mut snapshot = RegistrySnapshot::default();
            for d in devices {
                let record = d.into_record().map_err(StoreError::Corrupt)?;
                snapshot.devices.insert(record.device_id.clone(), record);
            }
            for r in rooms {
                let record = r.into_record().map_err(StoreError::Corrupt)?;
                snapshot.rooms.insert(record.room_id.clone(), record);
            }
            Ok(snapshot)
        })
        .await
    }

    async fn device_page(&self, request: &DeviceListRequest) -> Result<DevicePage, StoreError> {
        calls::operation(&self.policy, self.device_list_page(request)).await
    }

    async fn room_page(&self, request: &RoomListRequest) -> Result<RoomPage, StoreError> {
        calls::operation(&self.policy, self.room_list_page(request)).await
    }

    async fn rooms_of(
        &self,
        devices: &[DeviceId],
    ) -> Result<Vec<(DeviceId, Option<RoomId>)>, StoreError> {
        calls::operation(&self.policy, self.batch_rooms(devices)).await
    }

    async fn device(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        calls::operation(&self.policy, async {
            self.get::<DeviceItem>(DEVICE_PARTITION, device.as_str())
                .await?
                .map(|d| d.into_record().map_err(StoreError::Corrupt))
                .transpose()
        })
        .await
    }

    async fn room(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        calls::operation(&self.policy, async {
            self.get::<RoomItem>(ROOM_PARTITION, room.as_str())
                .await?
                .map(|r| r.into_record().map_err(StoreError::Corrupt))
                .transpose()
        })
        .await
    }

    async fn apply_device_update(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.apply_registry_update(RegistryWrite {
                pk: DEVICE_PARTITION,
                sk: update.device_id.as_str(),
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: device_sets(update),
                room: update.room.as_ref(),
                presence_since: None,
            })
            .await
        })
        .await
    }

    async fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.set_user_attributes(DEVICE_PARTITION, device.as_str(), name, room)
                .await
        })
        .await
    }

    async fn set_room_name(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.set_user_attributes(ROOM_PARTITION, room.as_str(), name, None)
                .await
        })
        .await
    }

    async fn apply_room_update(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            // Presence first: a ROOM item never names a device whose days
            // are not there yet.
            self.put_presence(&update.room_id, &update.presence).await?;
            if !update.record {
                return Ok(());
            }
            // A room first seen by this version: presence is complete from
            // the next UTC day (readings earlier that day may have gone by
            // an older registry function).
            let since = Span::Day.end_of(Span::Day.start_of(update.first_seen));
            self.apply_registry_update(RegistryWrite {
                pk: ROOM_PARTITION,
                sk: update.room_id.as_str(),
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: vec![(
                    "devices",
                    update.devices.iter().map(|d| d.to_string()).collect(),
                )],
                room: None,
                presence_since: Some(since),
            })
            .await
        })
        .await
    }
}
