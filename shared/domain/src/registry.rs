//! The registry's rules, written once for every engine: a batch of readings
//! coalesces into one update per device and per room (`plan`), and an update
//! merges into a record without ever moving time backwards (`merge`). The
//! DynamoDB adapter states the same merge as its conditional update; the
//! embedded store calls `merge` in its write transaction.

use crate::model::{DeviceId, IdIndex, Quantity, Reading, ReadingKind, RoomId, Span, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRecord {
    pub device_id: DeviceId,
    /// User-set; registry maintenance never writes it.
    pub name: Option<String>,
    pub types: BTreeSet<ReadingKind>,
    /// Every quantity it has reported.
    pub quantities: BTreeSet<Quantity>,
    /// Room of its latest reading that had one.
    pub room: Option<RoomId>,
    pub first_seen: Option<Timestamp>,
    pub last_seen: Option<Timestamp>,
    pub latest: Option<Reading>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RoomRecord {
    pub room_id: RoomId,
    pub name: Option<String>,
    /// Every device that has reported a reading in this room.
    pub devices: BTreeSet<DeviceId>,
    pub first_seen: Option<Timestamp>,
    pub last_seen: Option<Timestamp>,
    pub latest: Option<Reading>,
}

/// The whole registry, as loaded at cold start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegistrySnapshot {
    pub devices: BTreeMap<DeviceId, DeviceRecord>,
    pub rooms: BTreeMap<RoomId, RoomRecord>,
}

impl RegistrySnapshot {
    /// The room a device is registered in: where a reading that names no
    /// room was taken.
    pub fn room_of(&self, device: &DeviceId) -> Option<RoomId> {
        self.devices.get(device).and_then(|r| r.room.clone())
    }

    /// Whether storing `readings` may change what `room_of` answers: a
    /// reading taken in a room other than its device's registered one (a
    /// new device, or a move). A reading with no room leaves the room as
    /// it is (`plan` keeps the last reading's room that had one).
    pub fn may_move_devices(&self, readings: &[Reading]) -> bool {
        // A batch has few devices, mostly interleaved: each (device, room)
        // is looked up once, and the ids compare by pointer first.
        let mut same: Vec<(&DeviceId, &RoomId)> = Vec::new();
        for r in readings {
            let Some(room) = r.room() else { continue };
            if same.iter().any(|(d, rm)| *d == &r.device_id && *rm == room) {
                continue;
            }
            let registered = self.devices.get(&r.device_id).and_then(|d| d.room.as_ref());
            if registered != Some(room) {
                return true;
            }
            if same.len() < 64 {
                same.push((&r.device_id, room));
            }
        }
        false
    }
}

/// One coalesced registry change for a device (from one stream batch).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceUpdate {
    pub device_id: DeviceId,
    /// Earliest reading timestamp in the batch.
    pub first_seen: Timestamp,
    /// The reading with the latest timestamp; its timestamp is the new `last_seen`.
    pub latest: Reading,
    pub types: BTreeSet<ReadingKind>,
    pub quantities: BTreeSet<Quantity>,
    /// Room of the latest reading in the batch that had one.
    pub room: Option<RoomId>,
}

/// One coalesced registry change for a room (from one stream batch).
#[derive(Debug, Clone, PartialEq)]
pub struct RoomUpdate {
    pub room_id: RoomId,
    pub first_seen: Timestamp,
    /// The reading in the room with the latest timestamp.
    pub latest: Reading,
    pub devices: BTreeSet<DeviceId>,
    /// Each device of the batch with a reading in the room, and the UTC day
    /// of it (the presence that room reads without an index use).
    pub presence: BTreeSet<(DeviceId, Timestamp)>,
    /// Whether the ROOM item itself is written (`false`: presence only; see
    /// `registry_writes`).
    pub record: bool,
}

/// An update and the first record (by position in the batch) that contributed to it,
/// so a failed update can be reported as that record's failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned<T> {
    pub update: T,
    pub first_record: usize,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegistryPlan {
    pub devices: Vec<Planned<DeviceUpdate>>,
    pub rooms: Vec<Planned<RoomUpdate>>,
}

impl RegistryPlan {
    pub fn writes(&self) -> usize {
        self.devices.len() + self.rooms.len()
    }
}

/// Coalesces changes (record position, reading) into one update per device and per room.
/// At equal timestamps the later record wins, as the table's own last write does.
pub fn plan<'a>(changes: impl IntoIterator<Item = (usize, &'a Reading)>) -> RegistryPlan {
    // Gathered by reference and by number, cloned once per update at the
    // end: a batch of 1000 readings of a few devices makes a few updates,
    // not 1000 clones, and a reading costs a look-up of an address and a few
    // bits, not a search by text and set inserts (a twentieth of ingest).
    struct Device<'a> {
        first_record: usize,
        first_seen: Timestamp,
        latest: &'a Reading,
        /// Bits by `ReadingKind` and by `Quantity::index`.
        types: u8,
        quantities: u32,
        /// Its latest reading with a room, for its current room.
        latest_in_a_room: Option<&'a Reading>,
    }
    struct Room<'a> {
        first_record: usize,
        first_seen: Timestamp,
        latest: &'a Reading,
        /// (device number, day): the room's devices and their presence.
        presence: BTreeSet<(usize, Timestamp)>,
        last_presence: (usize, Timestamp),
    }
    let mut device_numbers = IdIndex::default();
    let mut room_numbers = IdIndex::default();
    let mut devices: Vec<Device<'a>> = Vec::new();
    let mut rooms: Vec<Room<'a>> = Vec::new();

    for (record, reading) in changes {
        let (n, new) = device_numbers.number(&reading.device_id);
        if new {
            devices.push(Device {
                first_record: record,
                first_seen: reading.timestamp,
                latest: reading,
                types: 0,
                quantities: 0,
                latest_in_a_room: None,
            });
        }
        let d = &mut devices[n];
        d.first_seen = d.first_seen.min(reading.timestamp);
        if reading.timestamp >= d.latest.timestamp {
            d.latest = reading;
        }
        d.types |= 1 << (reading.kind() as u8);
        for (q, _) in reading.measurement.values() {
            d.quantities |= 1 << q.index();
        }
        d.first_record = d.first_record.min(record);

        if let Some(room) = reading.room() {
            if d.latest_in_a_room
                .is_none_or(|r| reading.timestamp >= r.timestamp)
            {
                d.latest_in_a_room = Some(reading);
            }
            let presence = (n, Span::Day.start_of(reading.timestamp));
            let (m, new) = room_numbers.number(room);
            if new {
                rooms.push(Room {
                    first_record: record,
                    first_seen: reading.timestamp,
                    latest: reading,
                    presence: BTreeSet::from([presence]),
                    last_presence: presence,
                });
            }
            let r = &mut rooms[m];
            r.first_seen = r.first_seen.min(reading.timestamp);
            if newer_or_same(reading, r.latest) {
                r.latest = reading;
            }
            if r.last_presence != presence {
                r.presence.insert(presence);
                r.last_presence = presence;
            }
            r.first_record = r.first_record.min(record);
        }
    }
    let mut device_updates: Vec<Planned<DeviceUpdate>> = devices
        .into_iter()
        .enumerate()
        .map(|(n, d)| Planned {
            update: DeviceUpdate {
                device_id: device_numbers.id(n).clone(),
                first_seen: d.first_seen,
                latest: d.latest.clone(),
                types: ReadingKind::ALL
                    .into_iter()
                    .filter(|k| d.types & (1 << (*k as u8)) != 0)
                    .collect(),
                quantities: Quantity::ALL
                    .into_iter()
                    .filter(|q| d.quantities & (1 << q.index()) != 0)
                    .collect(),
                room: d.latest_in_a_room.and_then(|r| r.room().cloned()),
            },
            first_record: d.first_record,
        })
        .collect();
    // In the order of their ids, as the updates are applied.
    device_updates.sort_by(|a, b| a.update.device_id.cmp(&b.update.device_id));
    let mut room_updates: Vec<Planned<RoomUpdate>> = rooms
        .into_iter()
        .enumerate()
        .map(|(m, r)| {
            let device = |n: usize| device_numbers.id(n).clone();
            Planned {
                update: RoomUpdate {
                    room_id: room_numbers.id(m).clone(),
                    first_seen: r.first_seen,
                    latest: r.latest.clone(),
                    devices: r.presence.iter().map(|(n, _)| device(*n)).collect(),
                    presence: r
                        .presence
                        .iter()
                        .map(|(n, day)| (device(*n), *day))
                        .collect(),
                    record: true,
                },
                first_record: r.first_record,
            }
        })
        .collect();
    room_updates.sort_by(|a, b| a.update.room_id.cmp(&b.update.room_id));
    RegistryPlan {
        devices: device_updates,
        rooms: room_updates,
    }
}

/// Snapshot order: by timestamp, then device id, so that two devices of one room
/// reporting at the same millisecond resolve the same way in any delivery order.
/// For the same device and timestamp (the same item) the later write wins.
pub fn newer_or_same(reading: &Reading, current: &Reading) -> bool {
    (reading.timestamp, &reading.device_id) >= (current.timestamp, &current.device_id)
}

impl DeviceRecord {
    /// A device known by id only (named by a user before it reported).
    pub fn empty(device_id: &DeviceId) -> Self {
        Self {
            device_id: device_id.clone(),
            name: None,
            types: BTreeSet::new(),
            quantities: BTreeSet::new(),
            room: None,
            first_seen: None,
            last_seen: None,
            latest: None,
        }
    }

    /// Merges an update: `latest`, `last_seen` and the room move only
    /// forward, `first_seen` only earlier, sets only grow.
    pub fn merge(&mut self, u: &DeviceUpdate) {
        if is_newest(&u.latest, self.latest.as_ref(), self.last_seen) {
            self.last_seen = Some(u.latest.timestamp);
            self.latest = Some(u.latest.clone());
            if u.room.is_some() {
                self.room = u.room.clone();
            }
        }
        self.first_seen = earliest(self.first_seen, u.first_seen);
        self.types.extend(u.types.iter().copied());
        self.quantities.extend(u.quantities.iter().copied());
    }
}

impl RoomRecord {
    /// A room known by id only.
    pub fn empty(room_id: &RoomId) -> Self {
        Self {
            room_id: room_id.clone(),
            name: None,
            devices: BTreeSet::new(),
            first_seen: None,
            last_seen: None,
            latest: None,
        }
    }

    /// Merges an update, as `DeviceRecord::merge` does.
    pub fn merge(&mut self, u: &RoomUpdate) {
        if is_newest(&u.latest, self.latest.as_ref(), self.last_seen) {
            self.last_seen = Some(u.latest.timestamp);
            self.latest = Some(u.latest.clone());
        }
        self.first_seen = earliest(self.first_seen, u.first_seen);
        self.devices.extend(u.devices.iter().cloned());
    }
}

/// Whether `latest` may replace what a record holds: newer, or as new and
/// from the same or a greater device id (`newer_or_same`).
fn is_newest(latest: &Reading, current: Option<&Reading>, last_seen: Option<Timestamp>) -> bool {
    match (current, last_seen) {
        (Some(current), _) => newer_or_same(latest, current),
        (None, None) => true,
        (None, Some(seen)) => seen <= latest.timestamp,
    }
}

fn earliest(a: Option<Timestamp>, b: Timestamp) -> Option<Timestamp> {
    Some(a.map_or(b, |a| a.min(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceId, Measurement, ReadingKind, RoomId, Timestamp};

    fn climate(dev: &str, room: &str, ts: &str, t: f64) -> Reading {
        Reading {
            device_id: DeviceId::parse(dev).unwrap(),
            timestamp: Timestamp::parse(ts).unwrap(),
            measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, 50.0).unwrap(),
        }
    }

    fn power(dev: &str, ts: &str) -> Reading {
        Reading {
            device_id: DeviceId::parse(dev).unwrap(),
            timestamp: Timestamp::parse(ts).unwrap(),
            measurement: Measurement::power(1.0, 0.0, 100.0).unwrap(),
        }
    }

    #[test]
    fn only_a_reading_in_another_room_may_move_a_device() {
        let bed = climate("s-1", "bedroom", "2026-11-21T01:00:00Z", 20.0);
        let mut snapshot = RegistrySnapshot::default();
        snapshot.devices.insert(
            bed.device_id.clone(),
            DeviceRecord {
                device_id: bed.device_id.clone(),
                name: None,
                types: BTreeSet::new(),
                quantities: BTreeSet::new(),
                room: bed.room().cloned(),
                first_seen: None,
                last_seen: None,
                latest: None,
            },
        );
        let later = climate("s-1", "bedroom", "2026-11-21T02:00:00Z", 21.0);
        assert!(!snapshot.may_move_devices(&[bed.clone(), later.clone()]));
        assert!(
            !snapshot.may_move_devices(&[power("m-1", "2026-11-21T01:00:00Z")]),
            "a new device with no room: room_of stays None"
        );
        let moved = climate("s-1", "kitchen", "2026-11-21T03:00:00Z", 22.0);
        assert!(snapshot.may_move_devices(&[bed.clone(), later, moved]));
        let new = climate("s-2", "bedroom", "2026-11-21T01:00:00Z", 20.0);
        assert!(snapshot.may_move_devices(&[bed, new]));
    }

    #[test]
    fn a_batch_coalesces_to_one_update_per_device_and_per_room() {
        // 100 records from 10 devices in 3 rooms -> 13 writes.
        let readings: Vec<Reading> = (0..100)
            .map(|i| {
                let dev = format!("s{}", i % 10);
                let room = format!("room{}", (i % 10) % 3);
                climate(
                    &dev,
                    &room,
                    &format!("2026-11-01T00:{:02}:{:02}Z", i / 60, i % 60),
                    20.0,
                )
            })
            .collect();
        let p = plan(readings.iter().enumerate());
        assert_eq!((p.devices.len(), p.rooms.len(), p.writes()), (10, 3, 13));
        let s3 = p
            .devices
            .iter()
            .find(|d| d.update.device_id.as_str() == "s3")
            .unwrap();
        assert_eq!(s3.first_record, 3);
        assert_eq!(s3.update.first_seen.to_string(), "2026-11-01T00:00:03.000Z");
        assert_eq!(
            s3.update.latest.timestamp.to_string(),
            "2026-11-01T00:01:33.000Z"
        );
        assert_eq!(s3.update.room.as_ref().unwrap().as_str(), "room0");
        let room0 = p
            .rooms
            .iter()
            .find(|r| r.update.room_id.as_str() == "room0")
            .unwrap();
        let ids: Vec<&str> = room0.update.devices.iter().map(|d| d.as_str()).collect();
        assert_eq!(ids, vec!["s0", "s3", "s6", "s9"]);
    }

    #[test]
    fn the_latest_reading_wins_regardless_of_record_order() {
        let rs = [
            climate("s1", "kitchen", "2026-11-01T02:00:00Z", 22.0),
            climate("s1", "bedroom", "2026-11-01T01:00:00Z", 18.0),
            power("s1", "2026-11-01T00:30:00Z"),
        ];
        let p = plan(rs.iter().enumerate());
        let d = &p.devices[0].update;
        assert_eq!(d.latest, rs[0]);
        assert_eq!(d.first_seen.to_string(), "2026-11-01T00:30:00.000Z");
        assert_eq!(
            d.types,
            BTreeSet::from([ReadingKind::Power, ReadingKind::Climate])
        );
        assert_eq!(
            d.room.as_ref().unwrap().as_str(),
            "kitchen",
            "room follows the latest climate reading"
        );
        assert_eq!(p.rooms.len(), 2);
    }

    #[test]
    fn a_room_s_latest_at_equal_timestamps_does_not_depend_on_delivery_order() {
        let a = climate("s-a", "kitchen", "2026-11-01T02:00:00Z", 22.0);
        let b = climate("s-b", "kitchen", "2026-11-01T02:00:00Z", 24.0);
        let forward = plan([(0, &a), (1, &b)]);
        let backward = plan([(0, &b), (1, &a)]);
        assert_eq!(forward.rooms[0].update.latest, b);
        assert_eq!(
            backward.rooms[0].update.latest, b,
            "the greater device id wins a tie"
        );
    }

    #[test]
    fn at_equal_timestamps_the_later_record_wins() {
        let rs = [
            climate("s1", "kitchen", "2026-11-01T02:00:00Z", 22.0),
            climate("s1", "kitchen", "2026-11-01T02:00:00Z", 23.0),
        ];
        let p = plan(rs.iter().enumerate());
        assert_eq!(p.devices[0].update.latest, rs[1]);
        assert_eq!(p.rooms[0].update.latest, rs[1]);
    }

    /// `plan` as it was written before it numbered ids: by text, in
    /// ordered maps and sets. The oracle of the property below.
    fn reference_plan<'a>(changes: impl IntoIterator<Item = (usize, &'a Reading)>) -> RegistryPlan {
        // Gathered by reference, cloned once per update at the end: a batch of
        // 1000 readings of a few devices makes a few updates, not 1000 clones.
        struct Device<'a> {
            first_record: usize,
            first_seen: Timestamp,
            latest: &'a Reading,
            types: BTreeSet<ReadingKind>,
            quantities: BTreeSet<Quantity>,
            /// Its latest reading with a room, for its current room.
            latest_in_a_room: Option<&'a Reading>,
        }
        struct Room<'a> {
            first_record: usize,
            first_seen: Timestamp,
            latest: &'a Reading,
            devices: BTreeSet<&'a DeviceId>,
            presence: BTreeSet<(&'a DeviceId, Timestamp)>,
        }
        let mut devices: BTreeMap<&str, Device<'a>> = BTreeMap::new();
        let mut rooms: BTreeMap<&'a RoomId, Room<'a>> = BTreeMap::new();

        for (record, reading) in changes {
            let quantities = reading.measurement.values().iter().map(|(q, _)| *q);
            let d = devices
                .entry(reading.device_id.as_str())
                .or_insert_with(|| Device {
                    first_record: record,
                    first_seen: reading.timestamp,
                    latest: reading,
                    types: BTreeSet::new(),
                    quantities: BTreeSet::new(),
                    latest_in_a_room: None,
                });
            d.first_seen = d.first_seen.min(reading.timestamp);
            if reading.timestamp >= d.latest.timestamp {
                d.latest = reading;
            }
            d.types.insert(reading.kind());
            d.quantities.extend(quantities);
            d.first_record = d.first_record.min(record);

            if let Some(room) = reading.room() {
                if d.latest_in_a_room
                    .is_none_or(|r| reading.timestamp >= r.timestamp)
                {
                    d.latest_in_a_room = Some(reading);
                }
                let r = rooms.entry(room).or_insert_with(|| Room {
                    first_record: record,
                    first_seen: reading.timestamp,
                    latest: reading,
                    devices: BTreeSet::new(),
                    presence: BTreeSet::new(),
                });
                r.first_seen = r.first_seen.min(reading.timestamp);
                if newer_or_same(reading, r.latest) {
                    r.latest = reading;
                }
                r.devices.insert(&reading.device_id);
                r.presence
                    .insert((&reading.device_id, Span::Day.start_of(reading.timestamp)));
                r.first_record = r.first_record.min(record);
            }
        }
        RegistryPlan {
            devices: devices
                .into_values()
                .map(|d| Planned {
                    update: DeviceUpdate {
                        device_id: d.latest.device_id.clone(),
                        first_seen: d.first_seen,
                        latest: d.latest.clone(),
                        types: d.types,
                        quantities: d.quantities,
                        room: d.latest_in_a_room.and_then(|r| r.room().cloned()),
                    },
                    first_record: d.first_record,
                })
                .collect(),
            rooms: rooms
                .into_iter()
                .map(|(room, r)| Planned {
                    update: RoomUpdate {
                        room_id: room.clone(),
                        first_seen: r.first_seen,
                        latest: r.latest.clone(),
                        devices: r.devices.into_iter().cloned().collect(),
                        presence: r
                            .presence
                            .into_iter()
                            .map(|(d, day)| (d.clone(), day))
                            .collect(),
                        record: true,
                    },
                    first_record: r.first_record,
                })
                .collect(),
        }
    }

    proptest::proptest! {
        /// Any batch plans as the reference does, whether its readings share
        /// their ids' text (a parsed body) or each has its own (JSON).
        #[test]
        fn planning_by_numbers_equals_planning_by_text(
            rows in proptest::collection::vec(
                (0..5usize, proptest::option::of(0..3usize), 0..3000i64, proptest::bool::ANY),
                1..60,
            )
        ) {
            let shared: Vec<DeviceId> =
                (0..5).map(|d| DeviceId::parse(&format!("dev-{d}")).unwrap()).collect();
            let rooms: Vec<RoomId> =
                (0..3).map(|r| RoomId::parse(&format!("room-{r}")).unwrap()).collect();
            let readings: Vec<Reading> = rows
                .iter()
                .map(|&(d, room, minute, share)| {
                    let device_id = if share {
                        shared[d].clone()
                    } else {
                        DeviceId::parse(&format!("dev-{d}")).unwrap()
                    };
                    let measurement = match room {
                        Some(r) => Measurement::climate(rooms[r].clone(), 20.0, 50.0),
                        None => Measurement::power(1.0, 0.0, minute as f64),
                    };
                    Reading {
                        device_id,
                        // Across two UTC days, with repeated times.
                        timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000)
                            .unwrap(),
                        measurement: measurement.unwrap(),
                    }
                })
                .collect();
            proptest::prop_assert_eq!(
                plan(readings.iter().enumerate()),
                reference_plan(readings.iter().enumerate())
            );
        }
    }
}
