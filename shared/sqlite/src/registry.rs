//! The registry tables (`devices`, `rooms`, `room_devices`): read as records,
//! and changed by the same monotonic rules as the DynamoDB adapter's
//! conditional updates, in the caller's transaction.

use super::db_err;
use super::names::{self, Names};
use super::names::{DEVICE, ROOM};
use domain::model::{DeviceId, Name, Quantity, Reading, ReadingKind, RoomId, Timestamp};
use domain::registry::RegistryPlan;
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::collections::BTreeSet;
use storage::{
    DeviceListRequest, DevicePage, DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomListRequest,
    RoomPage, RoomRecord, RoomUpdate, StoreError,
};

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
    devices: storage::FastMap<i64, DeviceRecord>,
    rooms: storage::FastMap<i64, RoomRecord>,
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

/// `prefix` and the text just past every id that begins with it (ids are
/// ASCII: `\u{7f}` sorts after each of their characters), for an index range.
fn prefix_range(prefix: Option<&str>) -> (String, String) {
    match prefix {
        Some(p) => (p.to_owned(), format!("{p}\u{7f}")),
        None => (String::new(), "\u{7f}".to_owned()),
    }
}

/// The range's start: the page's `after` (excluded, the second) or the
/// prefix's `lo` (included), whichever is later. One bound, not both: with
/// two lower bounds SQLite's range used the first and scanned the ids
/// before a prefix (2 ms for a late one at 100,000 devices).
fn lower_bound(after: &str, lo: &str) -> (String, Option<String>) {
    if !after.is_empty() && after >= lo {
        (after.to_owned(), Some(after.to_owned()))
    } else {
        (lo.to_owned(), None)
    }
}

/// One page of the device list (`Store::device_page`): a range of the
/// `names` index in id order, the room's devices where the filter names a
/// room, the rest of the filter in the same statement (`DeviceFilter::admits`
/// checks it again).
pub fn device_page(
    conn: &Connection,
    request: &DeviceListRequest,
) -> Result<DevicePage, StoreError> {
    let filter = &request.filter;
    let (lo, hi) = prefix_range(filter.prefix.as_deref());
    let after = request.after.as_ref().map(|d| d.as_str()).unwrap_or("");
    let room = match &filter.room {
        Some(room) => match names::find(conn, ROOM, room.as_str())? {
            Some(id) => Some(id),
            None => return Ok(DevicePage::of(Vec::new(), request.limit, None)),
        },
        None => None,
    };
    // A room's devices drive the join (CROSS JOIN fixes SQLite's order):
    // left to itself the planner walked the names index in id order and
    // probed each device for the room, 14 ms at 100,000 devices.
    let from = if room.is_some() {
        "room_devices rd CROSS JOIN names n ON n.id = rd.device AND rd.room = ?6 \
         JOIN devices d ON d.id = n.id"
    } else {
        "names n JOIN devices d ON d.id = n.id"
    };
    let sql = format!(
        "SELECT {DEVICE_COLUMNS}, n.text FROM {from} \
         WHERE n.kind = {DEVICE} AND n.text >= ?1 AND (?2 IS NULL OR n.text <> ?2) AND n.text < ?3 \
         AND (?4 IS NULL OR instr(' ' || d.types || ' ', ' ' || ?4 || ' ') > 0) \
         AND (?5 IS NULL OR d.last_seen IS NULL OR d.last_seen < ?5) \
         ORDER BY n.text LIMIT ?7"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
    // Read in chunks: the text filter (`DeviceFilter::admits`: any case, in
    // a name of any script) is applied here, not in SQL.
    let chunk = (request.limit + 1).max(if filter.text.is_some() { 500 } else { 0 });
    let mut after = after.to_owned();
    let mut devices = Vec::new();
    loop {
        let (from, excluded) = lower_bound(&after, &lo);
        let mut rows = stmt
            .query(params![
                from,
                excluded,
                hi,
                filter.kind.map(|k| k.as_str()),
                filter.silent_since.map(Timestamp::millis),
                room,
                chunk as i64,
            ])
            .map_err(db_err)?;
        let mut read = 0;
        while let Some(row) = rows.next().map_err(db_err)? {
            read += 1;
            let text: String = row.get(8).map_err(db_err)?;
            let id =
                DeviceId::parse(&text).map_err(|e| corrupt(format!("device {text:?}: {e}")))?;
            let record = device_record(conn, id, row)?;
            after = text;
            if filter.admits(&record) {
                devices.push(record);
            }
        }
        if read < chunk || devices.len() > request.limit {
            return Ok(DevicePage::of(devices, request.limit, None));
        }
    }
}

/// One page of the room list (`Store::room_page`), read in chunks as
/// `device_page` reads devices.
pub fn room_page(conn: &Connection, request: &RoomListRequest) -> Result<RoomPage, StoreError> {
    let (lo, hi) = prefix_range(request.filter.prefix.as_deref());
    let mut after = request
        .after
        .as_ref()
        .map(|r| r.as_str())
        .unwrap_or("")
        .to_owned();
    let chunk = (request.limit + 1).max(if request.filter.text.is_some() {
        500
    } else {
        0
    });
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {ROOM_COLUMNS}, n.text FROM names n JOIN rooms r ON r.id = n.id \
             WHERE n.kind = {ROOM} AND n.text >= ?1 AND (?2 IS NULL OR n.text <> ?2) AND n.text < ?3 \
             ORDER BY n.text LIMIT ?4"
        ))
        .map_err(db_err)?;
    let mut rooms = Vec::new();
    loop {
        let (from, excluded) = lower_bound(&after, &lo);
        let mut rows = stmt
            .query(params![from, excluded, hi, chunk as i64])
            .map_err(db_err)?;
        let mut read = 0;
        while let Some(row) = rows.next().map_err(db_err)? {
            read += 1;
            let text: String = row.get(5).map_err(db_err)?;
            let id = RoomId::parse(&text).map_err(|e| corrupt(format!("room {text:?}: {e}")))?;
            let record = room_record(conn, id, row)?;
            after = text;
            if request.filter.admits(&record) {
                rooms.push(record);
            }
        }
        if read < chunk || rooms.len() > request.limit {
            return Ok(RoomPage::of(rooms, request.limit, None));
        }
    }
}

/// Each of `devices` that has a record, with its room (`Store::rooms_of`).
pub fn rooms_of(
    conn: &Connection,
    devices: &[DeviceId],
) -> Result<Vec<(DeviceId, Option<RoomId>)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT d.room FROM names n JOIN devices d ON d.id = n.id \
             WHERE n.kind = {DEVICE} AND n.text = ?1"
        ))
        .map_err(db_err)?;
    let mut found = Vec::with_capacity(devices.len());
    for device in devices {
        let room: Option<Option<i64>> = stmt
            .query_row(params![device.as_str()], |r| r.get(0))
            .optional()
            .map_err(db_err)?;
        if let Some(room) = room {
            found.push((
                device.clone(),
                room.map(|id| names::room(conn, id)).transpose()?,
            ));
        }
    }
    Ok(found)
}
