//! Which registry updates are worth a write (issue 25). The registry
//! function remembers, while warm, what it last wrote for each device and
//! room; an update is written when it changes something other than the
//! latest values (a new device or room, a move, a new type or quantity, an
//! earlier first reading, a new device in a room), and otherwise only when
//! its latest reading is at least `interval` newer than the one written.
//! A cold function remembers nothing and writes every update once.
//!
//! The rule works in reading time, not wall time: a replay or a back-fill
//! of old readings writes as rarely as live readings do. Lists may show a
//! latest value up to `interval` older than the device's newest reading;
//! a device's own page reads its newest reading from its partition.
//!
//! Presence (which device reported in which room on which UTC day, for
//! room reads without the `room-time` index) is written once per
//! (room, device, day): remembered the same way.

use super::registry::{DeviceUpdate, RegistryPlan, RoomUpdate};
use crate::model::{DeviceId, Quantity, ReadingKind, RoomId, Timestamp};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Entries remembered before the memory starts over (a cold start's worth
/// of writes, at worst): bounds a function's memory on a huge fleet.
const MAX_REMEMBERED: usize = 200_000;

#[derive(Debug, Clone)]
struct WrittenDevice {
    first_seen: Timestamp,
    last_seen: Timestamp,
    room: Option<RoomId>,
    types: BTreeSet<ReadingKind>,
    quantities: BTreeSet<Quantity>,
}

#[derive(Debug, Clone)]
struct WrittenRoom {
    first_seen: Timestamp,
    last_seen: Timestamp,
    devices: BTreeSet<DeviceId>,
}

/// What this function instance wrote (module comment).
#[derive(Debug, Default)]
pub struct WrittenRegistry {
    devices: HashMap<DeviceId, WrittenDevice>,
    rooms: HashMap<RoomId, WrittenRoom>,
    presence: HashSet<(RoomId, DeviceId, Timestamp)>,
}

fn newer_by(latest: Timestamp, written: Timestamp, interval_ms: i64) -> bool {
    latest.millis().saturating_sub(written.millis()) >= interval_ms
}

impl WrittenRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a device update is worth a write.
    pub fn device_needs_write(&self, u: &DeviceUpdate, interval_ms: i64) -> bool {
        let Some(w) = self.devices.get(&u.device_id) else {
            return true;
        };
        u.first_seen < w.first_seen
            || (u.room.is_some() && u.room != w.room)
            || !u.types.is_subset(&w.types)
            || !u.quantities.is_subset(&w.quantities)
            || newer_by(u.latest.timestamp, w.last_seen, interval_ms)
    }

    /// Whether a room update is worth a write.
    pub fn room_needs_write(&self, u: &RoomUpdate, interval_ms: i64) -> bool {
        let Some(w) = self.rooms.get(&u.room_id) else {
            return true;
        };
        u.first_seen < w.first_seen
            || !u.devices.is_subset(&w.devices)
            || newer_by(u.latest.timestamp, w.last_seen, interval_ms)
    }

    /// The plan's updates worth a write. Of a room update, only the presence
    /// (room, device, day) not written yet, and its `record` says whether
    /// the ROOM item itself is worth a write.
    pub fn worth_writing(&self, plan: RegistryPlan, interval_ms: i64) -> RegistryPlan {
        RegistryPlan {
            devices: plan
                .devices
                .into_iter()
                .filter(|p| self.device_needs_write(&p.update, interval_ms))
                .collect(),
            rooms: plan
                .rooms
                .into_iter()
                .filter_map(|mut p| {
                    let room = p.update.room_id.clone();
                    p.update.presence.retain(|(device, day)| {
                        !self
                            .presence
                            .contains(&(room.clone(), device.clone(), *day))
                    });
                    p.update.record = self.room_needs_write(&p.update, interval_ms);
                    (p.update.record || !p.update.presence.is_empty()).then_some(p)
                })
                .collect(),
        }
    }

    /// Remembers a device update as written (merged as the store merges it).
    pub fn wrote_device(&mut self, u: &DeviceUpdate) {
        self.bound();
        match self.devices.get_mut(&u.device_id) {
            None => {
                self.devices.insert(
                    u.device_id.clone(),
                    WrittenDevice {
                        first_seen: u.first_seen,
                        last_seen: u.latest.timestamp,
                        room: u.room.clone(),
                        types: u.types.clone(),
                        quantities: u.quantities.clone(),
                    },
                );
            }
            Some(w) => {
                w.first_seen = w.first_seen.min(u.first_seen);
                if u.latest.timestamp >= w.last_seen {
                    w.last_seen = u.latest.timestamp;
                    if u.room.is_some() {
                        w.room = u.room.clone();
                    }
                }
                w.types.extend(u.types.iter().copied());
                w.quantities.extend(u.quantities.iter().copied());
            }
        }
    }

    /// Remembers a room update (and its presence) as written.
    pub fn wrote_room(&mut self, u: &RoomUpdate) {
        self.bound();
        for (device, day) in &u.presence {
            self.presence
                .insert((u.room_id.clone(), device.clone(), *day));
        }
        if !u.record {
            return;
        }
        match self.rooms.get_mut(&u.room_id) {
            None => {
                self.rooms.insert(
                    u.room_id.clone(),
                    WrittenRoom {
                        first_seen: u.first_seen,
                        last_seen: u.latest.timestamp,
                        devices: u.devices.clone(),
                    },
                );
            }
            Some(w) => {
                w.first_seen = w.first_seen.min(u.first_seen);
                w.last_seen = w.last_seen.max(u.latest.timestamp);
                w.devices.extend(u.devices.iter().cloned());
            }
        }
    }

    fn bound(&mut self) {
        if self.devices.len() + self.rooms.len() + self.presence.len() > MAX_REMEMBERED {
            *self = Self::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Measurement, Reading};
    use crate::registry::plan;

    fn climate(dev: &str, room: &str, minute: i64) -> Reading {
        Reading {
            device_id: DeviceId::parse(dev).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap(),
            measurement: Measurement::climate(RoomId::parse(room).unwrap(), 20.0, 50.0).unwrap(),
        }
    }

    /// Feeds readings one batch each, as the registry function sees them at
    /// 1 a minute with a 1-second window; returns (device, room, presence) writes.
    fn writes(
        memory: &mut WrittenRegistry,
        readings: &[Reading],
        interval_ms: i64,
    ) -> Vec<(usize, usize, usize)> {
        readings
            .iter()
            .map(|r| {
                let p = memory.worth_writing(plan([(0, r)]), interval_ms);
                for d in &p.devices {
                    memory.wrote_device(&d.update);
                }
                let presence = p.rooms.iter().map(|r| r.update.presence.len()).sum();
                let rooms = p.rooms.iter().filter(|r| r.update.record).count();
                for r in &p.rooms {
                    memory.wrote_room(&r.update);
                }
                (p.devices.len(), rooms, presence)
            })
            .collect()
    }

    #[test]
    fn latest_values_are_written_once_per_interval_and_changes_at_once() {
        let mut m = WrittenRegistry::new();
        let fifteen = 15 * 60_000;
        let rs: Vec<Reading> = (0..31).map(|i| climate("s1", "bed", i)).collect();
        let w = writes(&mut m, &rs, fifteen);
        // First sight writes the device, the room and its presence.
        assert_eq!(w[0], (1, 1, 1));
        // Then only every 15 minutes of reading time.
        for (i, x) in w.iter().enumerate().skip(1) {
            let due = i % 15 == 0;
            assert_eq!(*x, if due { (1, 1, 0) } else { (0, 0, 0) }, "minute {i}");
        }
        // A move is written at once, though latest values are not due.
        let moved = climate("s1", "kitchen", 31);
        assert_eq!(writes(&mut m, &[moved], fifteen)[0], (1, 1, 1));
        // A new device in a room already written: the room too.
        let other = climate("s2", "kitchen", 32);
        assert_eq!(writes(&mut m, &[other], fifteen)[0], (1, 1, 1));
        // An earlier first reading (a back-fill) is a change.
        let early = climate("s2", "kitchen", 1);
        assert_eq!(writes(&mut m, &[early], fifteen)[0], (1, 1, 0));
        // A new day in the room: its presence only.
        let tomorrow = climate("s2", "kitchen", 24 * 60 + 33);
        let w = writes(&mut m, &[tomorrow], 10 * 24 * 60 * 60_000);
        assert_eq!(w[0], (0, 0, 1));
    }

    #[test]
    fn an_interval_of_zero_writes_every_update() {
        let mut m = WrittenRegistry::new();
        let rs: Vec<Reading> = (0..5).map(|i| climate("s1", "bed", i)).collect();
        assert!(writes(&mut m, &rs, 0).iter().all(|w| w.0 == 1 && w.1 == 1));
    }
}
