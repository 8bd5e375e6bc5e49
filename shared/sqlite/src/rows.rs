//! Hot readings: those of days not sealed yet (`blocks`), as rows of the
//! family tables, written and read (a device's range, a room's, the Z-order
//! index). A reading is rebuilt from its rows at one (device, time).

use super::db_err;
use super::names;
use super::schema::{self, families, read_value, stored_value, ROWS_PER_INSERT};
use domain::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
use rusqlite::types::Null;
use rusqlite::{params, CachedStatement, Connection};
use std::collections::{BTreeMap, HashMap};
use storage::keys::zorder::ZKey;
use storage::keys::Position;
use storage::{Order, StoreError, ZRangeRequest};

/// Most columns a family has (checked by a test).
const MAX_COLUMNS: usize = 10;

/// Times `lo..=hi`, epoch milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub lo: i64,
    pub hi: i64,
}

impl Bounds {
    pub fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    /// Narrowed to what follows `after` (a time and device) in `order`, for a
    /// read of `device`: the same time counts when `device` sorts after it.
    pub fn after(mut self, order: Order, after: Option<&Position>, device: &DeviceId) -> Self {
        let Some(Position {
            timestamp,
            device_id: d,
        }) = after
        else {
            return self;
        };
        let t = timestamp.millis();
        match order {
            Order::Asc => self.lo = self.lo.max(if device > d { t } else { t + 1 }),
            Order::Desc => self.hi = self.hi.min(if device < d { t } else { t - 1 }),
        }
        self
    }
}

/// A reading's rows, one per family it has quantities of, gathered for
/// `insert` (which writes them in key order, `ROWS_PER_INSERT` to a statement).
#[derive(Default)]
pub struct HotRows(Vec<Vec<Row>>);

impl HotRows {
    pub fn new() -> Self {
        Self(families().iter().map(|_| Vec::new()).collect())
    }

    pub fn push(&mut self, device: i64, room: Option<i64>, r: &Reading) {
        let ts = r.timestamp.millis();
        let mut split: [Option<Row>; schema::FAMILIES.len()] = Default::default();
        for (q, v) in r.measurement.values() {
            let (f, c) = schema::slot(*q);
            split[f]
                .get_or_insert(Row {
                    device,
                    ts,
                    room,
                    values: [None; MAX_COLUMNS],
                })
                .values[c] = Some(*v);
        }
        for (f, row) in split.into_iter().enumerate() {
            self.0[f].extend(row);
        }
    }

    /// Inserts the rows (of distinct keys, none stored yet).
    pub fn insert(mut self, tx: &Connection) -> Result<(), StoreError> {
        for (family, rows) in families().iter().zip(&mut self.0) {
            // In key order: each device's rows go into one part of the B-tree
            // after another, instead of the devices taking turns.
            rows.sort_unstable_by_key(|r| (r.device, r.ts));
            insert_rows(tx, family, rows)?;
        }
        Ok(())
    }
}

/// The times of a device's first and last readings, across the families.
pub fn time_span(conn: &Connection, device: i64) -> Result<Option<(i64, i64)>, StoreError> {
    let mut span: Option<(i64, i64)> = None;
    for family in families() {
        let (lo, hi): (Option<i64>, Option<i64>) = conn
            .prepare_cached(&format!(
                "SELECT min(ts), max(ts) FROM {} WHERE device = ?1",
                family.table
            ))
            .map_err(db_err)?
            .query_row(params![device], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?;
        if let (Some(lo), Some(hi)) = (lo, hi) {
            span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    Ok(span)
}

/// One family's row of a reading.
struct Row {
    device: i64,
    ts: i64,
    room: Option<i64>,
    values: [Option<f64>; MAX_COLUMNS],
}

fn bind_row(
    stmt: &mut CachedStatement<'_>,
    first: usize,
    family: &schema::Family,
    row: &Row,
) -> Result<(), StoreError> {
    stmt.raw_bind_parameter(first, row.device).map_err(db_err)?;
    stmt.raw_bind_parameter(first + 1, row.ts).map_err(db_err)?;
    stmt.raw_bind_parameter(first + 2, row.room)
        .map_err(db_err)?;
    for (c, v) in row.values.iter().take(family.columns.len()).enumerate() {
        match v {
            Some(v) => stmt.raw_bind_parameter(first + 3 + c, stored_value(*v)),
            None => stmt.raw_bind_parameter(first + 3 + c, Null),
        }
        .map_err(db_err)?;
    }
    Ok(())
}

fn insert_rows(tx: &Connection, family: &schema::Family, rows: &[Row]) -> Result<(), StoreError> {
    let per_row = 3 + family.columns.len();
    let mut chunks = rows.chunks_exact(ROWS_PER_INSERT);
    if chunks.len() > 0 {
        let mut stmt = tx.prepare_cached(&family.insert_many).map_err(db_err)?;
        for chunk in &mut chunks {
            for (i, row) in chunk.iter().enumerate() {
                bind_row(&mut stmt, 1 + i * per_row, family, row)?;
            }
            stmt.raw_execute().map_err(db_err)?;
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut stmt = tx.prepare_cached(&family.insert).map_err(db_err)?;
        for row in rest {
            bind_row(&mut stmt, 1, family, row)?;
            stmt.raw_execute().map_err(db_err)?;
        }
    }
    Ok(())
}

pub fn delete_at(tx: &Connection, device: i64, ts: i64) -> Result<(), StoreError> {
    for family in families() {
        tx.prepare_cached(&family.delete)
            .map_err(db_err)?
            .execute(params![device, ts])
            .map_err(db_err)?;
    }
    Ok(())
}

/// Deletes a device's rows in `bounds`, in every family.
pub fn delete_range(tx: &Connection, device: i64, bounds: Bounds) -> Result<(), StoreError> {
    for family in families() {
        tx.prepare_cached(&format!(
            "DELETE FROM {} WHERE device = ?1 AND ts BETWEEN ?2 AND ?3",
            family.table
        ))
        .map_err(db_err)?
        .execute(params![device, bounds.lo, bounds.hi])
        .map_err(db_err)?;
    }
    Ok(())
}

/// The oldest time a device has rows at, in any family.
pub fn oldest_time(conn: &Connection, device: i64) -> Result<Option<i64>, StoreError> {
    Ok(time_span(conn, device)?.map(|(first, _)| first))
}

/// The newest time a device has rows at, in any family.
pub fn newest_time(conn: &Connection, device: i64) -> Result<Option<i64>, StoreError> {
    let mut newest = None;
    for family in families() {
        let mut stmt = conn.prepare_cached(&family.newest).map_err(db_err)?;
        let mut rows = stmt.query(params![device]).map_err(db_err)?;
        if let Some(row) = rows.next().map_err(db_err)? {
            let ts: i64 = row.get(0).map_err(db_err)?;
            newest = Some(newest.map_or(ts, |n: i64| n.max(ts)));
        }
    }
    Ok(newest)
}

/// Room ids to room ids, looked up once per read.
#[derive(Default)]
struct Rooms(HashMap<i64, RoomId>);

impl Rooms {
    fn get(&mut self, conn: &Connection, id: i64) -> Result<RoomId, StoreError> {
        if let Some(r) = self.0.get(&id) {
            return Ok(r.clone());
        }
        let r = names::room(conn, id)?;
        self.0.insert(id, r.clone());
        Ok(r)
    }
}

fn reading(
    device: &DeviceId,
    ts: i64,
    room: Option<RoomId>,
    values: Vec<(Quantity, f64)>,
) -> Result<Reading, StoreError> {
    let corrupt = |m: String| StoreError::Corrupt(m);
    Ok(Reading {
        device_id: device.clone(),
        timestamp: Timestamp::from_millis(ts).map_err(|e| corrupt(e.to_string()))?,
        measurement: Measurement::from_stored(room, values)
            .map_err(|p| corrupt(format!("{device} at {ts}: {p}")))?,
    })
}

/// One reading's rows gathered: its room id and its values.
type Gathered = (Option<i64>, Vec<(Quantity, f64)>);

/// At most `n` of a device's readings in `bounds`, in `order`, each rebuilt
/// from its rows in every family.
pub fn device_readings(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    bounds: Bounds,
    order: Order,
    n: usize,
) -> Result<Vec<Reading>, StoreError> {
    if bounds.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    // The first n times of the merge are among each family's first n.
    let mut per_family: Vec<Vec<(i64, Gathered)>> = Vec::with_capacity(families().len());
    for family in families() {
        let sql = match order {
            Order::Asc => &family.select[0],
            Order::Desc => &family.select[1],
        };
        let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
        let mut rows = stmt
            .query(params![device, bounds.lo, bounds.hi])
            .map_err(db_err)?;
        let mut gathered = Vec::new();
        while let Some(row) = rows.next().map_err(db_err)? {
            let ts: i64 = row.get(0).map_err(db_err)?;
            let room: Option<i64> = row.get(1).map_err(db_err)?;
            let mut values = Vec::with_capacity(family.columns.len());
            for (i, q) in family.columns.iter().enumerate() {
                if let Some(v) = read_value(row.get_ref(2 + i).map_err(db_err)?) {
                    values.push((*q, v));
                }
            }
            if gathered.is_empty() {
                gathered.reserve(n.min(1024));
            }
            gathered.push((ts, (room, values)));
            if gathered.len() == n {
                break;
            }
        }
        if !gathered.is_empty() {
            per_family.push(gathered);
        }
    }
    // Most devices fill one family: then its rows are the readings as they
    // are; otherwise the rows at one time are put together.
    let times: Vec<(i64, Gathered)> = if per_family.len() <= 1 {
        per_family.pop().unwrap_or_default()
    } else {
        let mut by_time: BTreeMap<i64, Gathered> = BTreeMap::new();
        for (ts, (room, values)) in per_family.into_iter().flatten() {
            let entry = by_time.entry(ts).or_insert((None, Vec::new()));
            entry.0 = entry.0.or(room);
            entry.1.extend(values);
        }
        match order {
            Order::Asc => by_time.into_iter().collect(),
            Order::Desc => by_time.into_iter().rev().collect(),
        }
    };
    let mut rooms = Rooms::default();
    let mut out = Vec::with_capacity(n.min(times.len()));
    for (ts, (room, values)) in times.into_iter().take(n) {
        let room = room.map(|id| rooms.get(conn, id)).transpose()?;
        out.push(reading(device_id, ts, room, values)?);
    }
    Ok(out)
}

/// At most `n` of a device's readings in a room (those written with that
/// room), as the `room-time` index holds them: temperature and humidity only.
pub fn room_readings(
    conn: &Connection,
    (room, room_id): (i64, &RoomId),
    (device, device_id): (i64, &DeviceId),
    bounds: Bounds,
    order: Order,
    n: usize,
) -> Result<Vec<Reading>, StoreError> {
    if bounds.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let sql = match order {
        Order::Asc => {
            "SELECT ts, temperature, humidity FROM readings_climate
             WHERE device = ?1 AND ts BETWEEN ?2 AND ?3 AND room = ?4
               AND (temperature IS NOT NULL OR humidity IS NOT NULL)
             ORDER BY ts ASC"
        }
        Order::Desc => {
            "SELECT ts, temperature, humidity FROM readings_climate
             WHERE device = ?1 AND ts BETWEEN ?2 AND ?3 AND room = ?4
               AND (temperature IS NOT NULL OR humidity IS NOT NULL)
             ORDER BY ts DESC"
        }
    };
    let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
    let mut rows = stmt
        .query(params![device, bounds.lo, bounds.hi, room])
        .map_err(db_err)?;
    let mut out = Vec::new();
    while out.len() < n {
        let Some(row) = rows.next().map_err(db_err)? else {
            break;
        };
        let mut values = Vec::with_capacity(2);
        for (i, q) in [(1, Quantity::Temperature), (2, Quantity::Humidity)] {
            if let Some(v) = read_value(row.get_ref(i).map_err(db_err)?) {
                values.push((q, v));
            }
        }
        out.push(reading(
            device_id,
            row.get(0).map_err(db_err)?,
            Some(room_id.clone()),
            values,
        )?);
    }
    Ok(out)
}

const Z_QUERY: &str = "SELECT ts, temperature, humidity, room FROM readings_climate
     WHERE device = ?1 AND temperature IS NOT NULL AND humidity IS NOT NULL
       AND zaddr(ts, temperature, humidity) BETWEEN ?2 AND ?3
       AND (?4 IS NULL OR zaddr(ts, temperature, humidity) > ?4
            OR (zaddr(ts, temperature, humidity) = ?4 AND (ts > ?5 OR (ts = ?5 AND ?6))))
       AND (?7 IS NULL OR room = ?7)
     ORDER BY zaddr(ts, temperature, humidity), ts";

/// What `EXPLAIN QUERY PLAN` says of the Z-order read, one step per line.
#[cfg(test)]
pub fn z_query_plan(conn: &Connection) -> Result<String, StoreError> {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {Z_QUERY}"))
        .map_err(db_err)?;
    let steps = stmt
        .query_map(
            params![
                0,
                vec![0u8; 12],
                vec![0u8; 12],
                None::<Vec<u8>>,
                0,
                false,
                None::<i64>
            ],
            |r| r.get::<_, String>(3),
        )
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok(steps.join("\n"))
}

/// A device with its id, as the Z-order read takes them.
pub type DeviceEntry = (i64, DeviceId);

/// An index entry found: its key, its time, and whose.
pub type ZCandidate<'d> = (ZKey, i64, &'d DeviceEntry);

/// One read of the Z-order index of the hot rows of some devices (one, or a
/// room's): each device's first `request.limit + 1` entries after the
/// request's position, as (key, time, device), unsorted across devices.
pub fn z_candidates<'d>(
    conn: &Connection,
    devices: &'d [DeviceEntry],
    room: Option<i64>,
    request: &ZRangeRequest<'_>,
) -> Result<Vec<ZCandidate<'d>>, StoreError> {
    let from = schema::address_bytes(request.from.address());
    let to = schema::address_bytes(request.to.address());
    let after = request
        .after
        .and_then(|k| k.parts().map(|(d, t)| (k.address(), d, t)));
    let lo = match &after {
        Some((address, ..)) => from.clone().max(schema::address_bytes(*address)),
        None => from,
    };
    let mut stmt = conn.prepare_cached(Z_QUERY).map_err(db_err)?;
    let mut found = Vec::new();
    for entry in devices {
        let (device, device_id) = entry;
        let (after_address, after_ts, same_time_follows) = match &after {
            Some((a, d, t)) => (Some(schema::address_bytes(*a)), t.millis(), device_id > d),
            None => (None, 0, false),
        };
        let mut rows = stmt
            .query(params![
                device,
                lo,
                to,
                after_address,
                after_ts,
                same_time_follows,
                room
            ])
            .map_err(db_err)?;
        for _ in 0..=request.limit {
            let Some(row) = rows.next().map_err(db_err)? else {
                break;
            };
            let ts: i64 = row.get(0).map_err(db_err)?;
            let (Some(t), Some(h)) = (
                read_value(row.get_ref(1).map_err(db_err)?),
                read_value(row.get_ref(2).map_err(db_err)?),
            ) else {
                continue;
            };
            let time =
                Timestamp::from_millis(ts).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            found.push((ZKey::of(device_id, time, t, h), ts, entry));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_fits_the_writer_s_buffer() {
        assert!(families().iter().all(|f| f.columns.len() <= MAX_COLUMNS));
    }
}
