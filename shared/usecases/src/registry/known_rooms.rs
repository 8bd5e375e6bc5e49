//! The rooms an ingest knows of the devices it parses: where a climate
//! reading that names no room was taken. From the whole registry where a
//! sandbox holds it; over a fleet, from the rooms it keeps and what the
//! store said of the batch's devices, noting the devices it was asked
//! about and did not know (`RegistryCache::parse_with_rooms` reads those).

use domain::model::{DeviceId, FastMap, RoomId};
use std::sync::{Arc, Mutex};
use storage::RegistrySnapshot;

pub struct KnownRooms {
    whole: Option<Arc<RegistrySnapshot>>,
    kept: Arc<FastMap<DeviceId, Option<RoomId>>>,
    /// What the store said of this batch's devices.
    read: FastMap<DeviceId, Option<RoomId>>,
    /// Devices asked about that neither knew (over a fleet).
    unknown: Mutex<Vec<DeviceId>>,
}

impl Default for KnownRooms {
    /// No device in a room (an empty registry).
    fn default() -> Self {
        Self::whole(Arc::default())
    }
}

impl KnownRooms {
    /// Every device's room, from the whole registry.
    pub fn whole(snapshot: Arc<RegistrySnapshot>) -> Self {
        Self {
            whole: Some(snapshot),
            kept: Arc::default(),
            read: FastMap::default(),
            unknown: Mutex::new(Vec::new()),
        }
    }

    /// The rooms a sandbox over a fleet keeps.
    pub fn fleet(kept: Arc<FastMap<DeviceId, Option<RoomId>>>) -> Self {
        Self {
            whole: None,
            kept,
            read: FastMap::default(),
            unknown: Mutex::new(Vec::new()),
        }
    }

    /// These, and what the store said of the devices asked about.
    pub fn with(&self, read: Vec<(DeviceId, Option<RoomId>)>) -> Self {
        Self {
            whole: self.whole.clone(),
            kept: self.kept.clone(),
            read: read.into_iter().collect(),
            unknown: Mutex::new(Vec::new()),
        }
    }

    /// The registered room of `device`, where known.
    pub fn room_of(&self, device: &DeviceId) -> Option<RoomId> {
        if let Some(snapshot) = &self.whole {
            return snapshot.room_of(device);
        }
        match self.kept.get(device).or_else(|| self.read.get(device)) {
            Some(room) => room.clone(),
            None => {
                let mut unknown = self.unknown.lock().unwrap_or_else(|p| p.into_inner());
                if !unknown.contains(device) {
                    unknown.push(device.clone());
                }
                None
            }
        }
    }

    /// The devices asked about that were not known.
    pub fn unknown_asked(&self) -> Vec<DeviceId> {
        self.unknown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> DeviceId {
        DeviceId::parse(s).unwrap()
    }

    #[test]
    fn a_fleet_s_unknown_devices_are_noted_once_and_read_rooms_answer() {
        let kitchen = RoomId::parse("kitchen").unwrap();
        let kept = Arc::new(FastMap::from_iter([(id("a"), Some(kitchen.clone()))]));
        let rooms = KnownRooms::fleet(kept);
        assert_eq!(rooms.room_of(&id("a")), Some(kitchen.clone()));
        assert_eq!(rooms.room_of(&id("b")), None);
        assert_eq!(rooms.room_of(&id("b")), None);
        assert_eq!(rooms.unknown_asked(), vec![id("b")]);
        let read = rooms.with(vec![(id("b"), Some(kitchen.clone()))]);
        assert_eq!(read.room_of(&id("b")), Some(kitchen));
        assert!(read.unknown_asked().is_empty());
    }

    #[test]
    fn the_whole_registry_never_asks() {
        let rooms = KnownRooms::whole(Arc::default());
        assert_eq!(rooms.room_of(&id("new")), None);
        assert!(rooms.unknown_asked().is_empty());
    }
}
