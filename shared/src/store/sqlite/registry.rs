//! The registry tables (`devices`, `rooms`, `room_devices`): read as records,
//! and changed by the same monotonic rules as the DynamoDB adapter's
//! conditional updates, in the caller's transaction.

use super::db_err;
use super::names::{self, Names};
use super::names::{DEVICE, ROOM};
use crate::domain::registry::RegistryPlan;
use crate::model::{DeviceId, Name, Quantity, Reading, ReadingKind, RoomId, Timestamp};
use crate::store::{
    DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomRecord, RoomUpdate, StoreError,
};
use rusqlite::{params, Connection, Row};
use std::collections::BTreeSet;

fn corrupt(m: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(m.to_string())
}

/// A registry's latest reading, as answers show it.
fn latest_text(r: &Reading) -> Result<String, StoreError> {
    serde_json::to_string(r).map_err(corrupt)
}

fn stored_reading(text: &str) -> Result<Reading, StoreError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(corrupt)?;
    Reading::from_stored_json(&value).map_err(|p| corrupt(format!("stored latest reading: {p:?}")))
}

fn millis(ms: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    ms.map(|ms| Timestamp::from_millis(ms).map_err(corrupt))
        .transpose()
}

fn words<T>(text: &str, parse: impl Fn(&str) -> Option<T>) -> Result<BTreeSet<T>, StoreError>
where
    T: Ord,
{
    text.split_whitespace()
        .map(|w| parse(w).ok_or_else(|| corrupt(format!("unknown name {w:?}"))))
        .collect()
}

fn joined<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(" ")
}

const DEVICE_COLUMNS: &str =
    "d.id, d.name, d.room, d.types, d.quantities, d.first_seen, d.last_seen, d.latest";

fn device_record(
    conn: &Connection,
    device_id: DeviceId,
    row: &Row,
) -> Result<DeviceRecord, StoreError> {
    let room: Option<i64> = row.get(2).map_err(db_err)?;
    Ok(DeviceRecord {
        device_id,
        name: row.get(1).map_err(db_err)?,
        room: room.map(|id| names::room(conn, id)).transpose()?,
        types: words(
            &row.get::<_, String>(3).map_err(db_err)?,
            ReadingKind::parse,
        )?,
        quantities: words(&row.get::<_, String>(4).map_err(db_err)?, Quantity::parse)?,
        first_seen: millis(row.get(5).map_err(db_err)?)?,
        last_seen: millis(row.get(6).map_err(db_err)?)?,
        latest: row
            .get::<_, Option<String>>(7)
            .map_err(db_err)?
            .map(|t| stored_reading(&t))
            .transpose()?,
    })
}

const ROOM_COLUMNS: &str = "r.id, r.name, r.first_seen, r.last_seen, r.latest";

fn room_record(conn: &Connection, room_id: RoomId, row: &Row) -> Result<RoomRecord, StoreError> {
    let id: i64 = row.get(0).map_err(db_err)?;
    let mut stmt = conn
        .prepare_cached("SELECT device FROM room_devices WHERE room = ?1")
        .map_err(db_err)?;
    let devices: Vec<i64> = stmt
        .query_map(params![id], |r| r.get(0))
        .map_err(db_err)?
        .collect::<Result<_, _>>()
        .map_err(db_err)?;
    Ok(RoomRecord {
        room_id,
        name: row.get(1).map_err(db_err)?,
        devices: devices
            .into_iter()
            .map(|d| names::device(conn, d))
            .collect::<Result<_, _>>()?,
        first_seen: millis(row.get(2).map_err(db_err)?)?,
        last_seen: millis(row.get(3).map_err(db_err)?)?,
        latest: row
            .get::<_, Option<String>>(4)
            .map_err(db_err)?
            .map(|t| stored_reading(&t))
            .transpose()?,
    })
}

pub fn device(conn: &Connection, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
    let Some(id) = names::find(conn, DEVICE, device.as_str())? else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DEVICE_COLUMNS} FROM devices d WHERE d.id = ?1"
        ))
        .map_err(db_err)?;
    let mut rows = stmt.query(params![id]).map_err(db_err)?;
    match rows.next().map_err(db_err)? {
        Some(row) => Ok(Some(device_record(conn, device.clone(), row)?)),
        None => Ok(None),
    }
}

pub fn room(conn: &Connection, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
    let Some(id) = names::find(conn, ROOM, room.as_str())? else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {ROOM_COLUMNS} FROM rooms r WHERE r.id = ?1"
        ))
        .map_err(db_err)?;
    let mut rows = stmt.query(params![id]).map_err(db_err)?;
    match rows.next().map_err(db_err)? {
        Some(row) => Ok(Some(room_record(conn, room.clone(), row)?)),
        None => Ok(None),
    }
}

/// The whole registry.
pub fn load(conn: &Connection) -> Result<RegistrySnapshot, StoreError> {
    let mut snapshot = RegistrySnapshot::default();
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DEVICE_COLUMNS}, n.text FROM devices d JOIN names n ON n.id = d.id"
        ))
        .map_err(db_err)?;
    let mut rows = stmt.query([]).map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        let text: String = row.get(8).map_err(db_err)?;
        let id = DeviceId::parse(&text).map_err(|e| corrupt(format!("device {text:?}: {e}")))?;
        snapshot
            .devices
            .insert(id.clone(), device_record(conn, id, row)?);
    }
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {ROOM_COLUMNS}, n.text FROM rooms r JOIN names n ON n.id = r.id"
        ))
        .map_err(db_err)?;
    let mut rows = stmt.query([]).map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        let text: String = row.get(5).map_err(db_err)?;
        let id = RoomId::parse(&text).map_err(|e| corrupt(format!("room {text:?}: {e}")))?;
        snapshot
            .rooms
            .insert(id.clone(), room_record(conn, id, row)?);
    }
    Ok(snapshot)
}

/// Writes a device's record whole (its row; the id exists).
pub fn put_device(tx: &Connection, names: &mut Names, d: &DeviceRecord) -> Result<(), StoreError> {
    let id = names.device(tx, &d.device_id)?;
    let room = d.room.as_ref().map(|r| names.room(tx, r)).transpose()?;
    tx.prepare_cached(
        "INSERT OR REPLACE INTO devices (id, name, room, types, quantities, first_seen, last_seen, latest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
    .map_err(db_err)?
    .execute(params![
        id,
        d.name,
        room,
        joined(d.types.iter().map(|t| t.as_str())),
        joined(d.quantities.iter().map(|q| q.name())),
        d.first_seen.map(Timestamp::millis),
        d.last_seen.map(Timestamp::millis),
        d.latest.as_ref().map(latest_text).transpose()?,
    ])
    .map_err(db_err)?;
    Ok(())
}

/// Writes a room's record whole, its devices included.
pub fn put_room(tx: &Connection, names: &mut Names, r: &RoomRecord) -> Result<(), StoreError> {
    let id = names.room(tx, &r.room_id)?;
    put_room_row(tx, id, r)?;
    add_room_devices(tx, names, id, &r.devices)
}

/// A room's row (its id exists), not its devices.
fn put_room_row(tx: &Connection, id: i64, r: &RoomRecord) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO rooms (id, name, first_seen, last_seen, latest) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .map_err(db_err)?
    .execute(params![
        id,
        r.name,
        r.first_seen.map(Timestamp::millis),
        r.last_seen.map(Timestamp::millis),
        r.latest.as_ref().map(latest_text).transpose()?,
    ])
    .map_err(db_err)?;
    Ok(())
}

/// Lists devices in a room (those listed already stay as they are).
fn add_room_devices<'a>(
    tx: &Connection,
    names: &mut Names,
    room: i64,
    devices: impl IntoIterator<Item = &'a DeviceId>,
) -> Result<(), StoreError> {
    for device in devices {
        let device = names.device(tx, device)?;
        tx.prepare_cached(
            "INSERT INTO room_devices (room, device) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )
        .map_err(db_err)?
        .execute(params![room, device])
        .map_err(db_err)?;
    }
    Ok(())
}

/// The registry records as the writer last wrote them, by their integer
/// ids. Every registry write of the writer goes through them (a batch's
/// plan, a user's name or room, a replayed update), so a batch merges into
/// them instead of reading each record back (a select, its room's and
/// devices' names, and a JSON parse of its latest reading: half of the
/// registry's share of a batch). Forgotten with the writer's other caches
/// when a transaction rolls back. Like those, they assume one writing
/// process per file.
#[derive(Default)]
pub struct Records {
    devices: crate::store::FastMap<i64, DeviceRecord>,
    rooms: crate::store::FastMap<i64, RoomRecord>,
}

/// Most devices and rooms whose records the writer keeps.
const KEPT_RECORDS: usize = 4096;

impl Records {
    /// A device's record (stored, or empty if it has none).
    fn device(
        &mut self,
        tx: &Connection,
        names: &mut Names,
        device_id: &DeviceId,
    ) -> Result<&mut DeviceRecord, StoreError> {
        let id = names.device(tx, device_id)?;
        if !self.devices.contains_key(&id) {
            self.make_room();
            let stored = device(tx, device_id)?;
            let record = stored.unwrap_or_else(|| DeviceRecord::empty(device_id));
            self.devices.insert(id, record);
        }
        Ok(self.devices.get_mut(&id).expect("just cached"))
    }

    /// A room's id and its record (stored, or empty if it has none).
    fn room(
        &mut self,
        tx: &Connection,
        names: &mut Names,
        room_id: &RoomId,
    ) -> Result<(i64, &mut RoomRecord), StoreError> {
        let id = names.room(tx, room_id)?;
        if !self.rooms.contains_key(&id) {
            self.make_room();
            let stored = room(tx, room_id)?;
            let record = stored.unwrap_or_else(|| RoomRecord::empty(room_id));
            self.rooms.insert(id, record);
        }
        Ok((id, self.rooms.get_mut(&id).expect("just cached")))
    }

    /// Starts over when full: a household has tens of devices.
    fn make_room(&mut self) {
        if self.devices.len() + self.rooms.len() >= KEPT_RECORDS {
            self.devices.clear();
            self.rooms.clear();
        }
    }
}

/// Merges a device update into its record (`DeviceRecord::merge`).
pub fn apply_device(
    tx: &Connection,
    names: &mut Names,
    records: &mut Records,
    u: &DeviceUpdate,
) -> Result<(), StoreError> {
    let d = records.device(tx, names, &u.device_id)?;
    d.merge(u);
    put_device(tx, names, d)
}

/// Merges a room update into its record (`RoomRecord::merge`); only a
/// device new to the room gets its `room_devices` row.
pub fn apply_room(
    tx: &Connection,
    names: &mut Names,
    records: &mut Records,
    u: &RoomUpdate,
) -> Result<(), StoreError> {
    let (id, r) = records.room(tx, names, &u.room_id)?;
    let joined: Vec<DeviceId> = u.devices.difference(&r.devices).cloned().collect();
    r.merge(u);
    put_room_row(tx, id, r)?;
    add_room_devices(tx, names, id, &joined)
}

pub fn apply_plan(
    tx: &Connection,
    names: &mut Names,
    records: &mut Records,
    plan: &RegistryPlan,
) -> Result<(), StoreError> {
    for p in &plan.devices {
        apply_device(tx, names, records, &p.update)?;
    }
    for p in &plan.rooms {
        apply_room(tx, names, records, &p.update)?;
    }
    Ok(())
}

/// What a user sets: a device's name (`None` removes it) and, when given, its room.
pub fn set_device_profile(
    tx: &Connection,
    names: &mut Names,
    records: &mut Records,
    device_id: &DeviceId,
    name: Option<&Name>,
    room: Option<&RoomId>,
) -> Result<(), StoreError> {
    let d = records.device(tx, names, device_id)?;
    d.name = name.map(|n| n.as_str().to_owned());
    if let Some(room) = room {
        d.room = Some(room.clone());
    }
    put_device(tx, names, d)
}

pub fn set_room_name(
    tx: &Connection,
    names: &mut Names,
    records: &mut Records,
    room_id: &RoomId,
    name: Option<&Name>,
) -> Result<(), StoreError> {
    let (id, r) = records.room(tx, names, room_id)?;
    r.name = name.map(|n| n.as_str().to_owned());
    put_room_row(tx, id, r)
}

/// A room's id and its devices with theirs.
pub type RoomDevices = (i64, Vec<(i64, DeviceId)>);

/// The room's devices and their ids, for reads of a room's readings.
pub fn room_devices(conn: &Connection, room: &RoomId) -> Result<Option<RoomDevices>, StoreError> {
    let Some(id) = names::find(conn, ROOM, room.as_str())? else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached("SELECT device FROM room_devices WHERE room = ?1")
        .map_err(db_err)?;
    let ids: Vec<i64> = stmt
        .query_map(params![id], |r| r.get(0))
        .map_err(db_err)?
        .collect::<Result<_, _>>()
        .map_err(db_err)?;
    let devices = ids
        .into_iter()
        .map(|d| Ok((d, names::device(conn, d)?)))
        .collect::<Result<_, StoreError>>()?;
    Ok(Some((id, devices)))
}
