//! The embedded store redesigned for time series (issue 13; the plan and the
//! measurements behind it are in docs/embedded-store.md). **Not wired in yet:**
//! `SqliteStore` is still the embedded store. This is the new schema, its write
//! path (readings and, in the same transaction, the registry by
//! `registry::plan`), a device's readings and the registry read back, with the
//! test that holds the layout to the byte budget. The rest of the
//! `Store` impl, the migration of `items` files and the switch come next.
//!
//! - Devices and rooms are integer ids through `names`.
//! - One table per family of quantities (power, climate, meter, device), so a
//!   row holds only columns that its kind of device fills: a reading whose
//!   quantities span families is one row in each.
//! - Times are epoch milliseconds.
//! - A value is stored as an INTEGER count of thousandths when that is exact
//!   (`round(v·1000)/1000 == v`: 21.25, 45.5, 5210.125), which SQLite packs into
//!   2 to 4 bytes, and as its REAL otherwise. Reading divides by 1000, which
//!   gives back exactly `v` because that equality was checked on the way in.
//! - Box search reads an index on an expression, `zaddr(ts, temperature,
//!   humidity)`: the Z-order address of `keys::zorder`, computed by a SQL
//!   function, kept in the index only.

use super::{DeviceRecord, RegistrySnapshot, RoomRecord, StoreError};
use crate::keys::zorder;
use crate::model::{
    DeviceId, Measurement, Quantity, Reading, ReadingKind, RoomId, TimeRange, Timestamp,
};
use crate::registry::RegistryPlan;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::Path;

/// The families, each with its table.
const FAMILIES: [ReadingKind; 4] = [
    ReadingKind::Power,
    ReadingKind::Climate,
    ReadingKind::Meter,
    ReadingKind::Device,
];

fn table(family: ReadingKind) -> String {
    format!("readings_{}", family.as_str())
}

/// The catalogue's quantities of a family, in catalogue order: its columns.
fn columns(family: ReadingKind) -> Vec<Quantity> {
    Quantity::ALL
        .into_iter()
        .filter(|q| q.family() == family)
        .collect()
}

/// The schema, from the catalogue.
fn schema() -> String {
    let mut sql = String::from(
        "CREATE TABLE IF NOT EXISTS names (
            id   INTEGER PRIMARY KEY,
            kind INTEGER NOT NULL,   -- 0 device, 1 room
            text TEXT NOT NULL,
            UNIQUE (kind, text)
        );\n",
    );
    for family in FAMILIES {
        let cols: Vec<&str> = columns(family).iter().map(|q| q.name()).collect();
        sql += &format!(
            "CREATE TABLE IF NOT EXISTS {} (
                device INTEGER NOT NULL,
                ts     INTEGER NOT NULL,
                room   INTEGER,
                {},
                PRIMARY KEY (device, ts)
            ) WITHOUT ROWID;\n",
            table(family),
            cols.join(", ")
        );
    }
    // The registry, kept in the write transaction (`apply_plan`).
    sql += "CREATE TABLE IF NOT EXISTS devices (
            id         INTEGER PRIMARY KEY,   -- its id in names
            name       TEXT,
            room       INTEGER,               -- room of its latest reading that had one
            types      INTEGER NOT NULL DEFAULT 0,       -- bit per ReadingKind
            quantities INTEGER NOT NULL DEFAULT 0,       -- bit per Quantity
            first_seen INTEGER,
            last_seen  INTEGER,
            latest     TEXT                   -- the latest reading, as answers show it
        );
        CREATE TABLE IF NOT EXISTS rooms (
            id         INTEGER PRIMARY KEY,
            name       TEXT,
            first_seen INTEGER,
            last_seen  INTEGER,
            latest     TEXT
        );
        CREATE TABLE IF NOT EXISTS room_devices (
            room   INTEGER NOT NULL,
            device INTEGER NOT NULL,
            PRIMARY KEY (room, device)
        ) WITHOUT ROWID;\n";
    sql += "CREATE INDEX IF NOT EXISTS readings_climate_z
        ON readings_climate (device, zaddr(ts, temperature, humidity))
        WHERE temperature IS NOT NULL AND humidity IS NOT NULL;\n";
    sql
}

/// A value as stored: exact thousandths as an INTEGER, else the REAL.
pub fn stored_value(v: f64) -> Value {
    let thousandths = (v * 1000.0).round();
    if thousandths.abs() < 9.0e15 && thousandths / 1000.0 == v {
        Value::Integer(thousandths as i64)
    } else {
        Value::Real(v)
    }
}

/// The value back from what `stored_value` stored.
pub fn read_value(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64 / 1000.0),
        ValueRef::Real(r) => Some(r),
        _ => None,
    }
}

/// `zaddr(ts, temperature, humidity)`: the 96-bit Z-order address as 12
/// big-endian bytes, so that byte order is address order.
fn register_zaddr(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "zaddr",
        3,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let ts = ctx.get_raw(0).as_i64()?;
            let (Some(t), Some(h)) = (read_value(ctx.get_raw(1)), read_value(ctx.get_raw(2)))
            else {
                return Ok(None);
            };
            let Ok(ts) = Timestamp::from_millis(ts) else {
                return Ok(None);
            };
            let address = zorder::address(ts, t, h);
            Ok(Some(address.to_be_bytes()[4..].to_vec()))
        },
    )
}

/// A registry's latest reading, as answers show it.
fn latest_text(r: &Reading) -> Result<String, StoreError> {
    serde_json::to_string(r).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn stored_reading(text: &str) -> Result<Reading, StoreError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    // Stored readings are past the boundary: no bound on how recent.
    Reading::from_json(&value, Timestamp::MAX, |_| None)
        .map_err(|p| StoreError::Corrupt(format!("stored latest reading: {p:?}")))
}

fn millis(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn parse_id<T, E: std::fmt::Display>(
    text: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<T, StoreError> {
    parse(text).map_err(|e| StoreError::Corrupt(format!("id {text:?}: {e}")))
}

/// The rows of one reading, gathered from the family tables: its room id and values.
type RowsAtOneTime = (Option<i64>, Vec<(Quantity, f64)>);

/// The new store's database (see the module comment: not wired in yet).
pub struct TimeSeriesDb {
    conn: Connection,
    ids: HashMap<(u8, String), i64>,
}

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite: {e}"))
}

impl TimeSeriesDb {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        Self::init(conn)
    }

    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(db_err)?)
    }

    fn init(conn: Connection) -> Result<Self, StoreError> {
        register_zaddr(&conn).map_err(db_err)?;
        conn.execute_batch(&schema()).map_err(db_err)?;
        Ok(Self {
            conn,
            ids: HashMap::new(),
        })
    }

    /// The integer id of a device (kind 0) or room (kind 1), made on first use.
    fn id(
        conn: &Connection,
        ids: &mut HashMap<(u8, String), i64>,
        kind: u8,
        text: &str,
    ) -> Result<i64, StoreError> {
        if let Some(id) = ids.get(&(kind, text.to_owned())) {
            return Ok(*id);
        }
        conn.execute(
            "INSERT INTO names (kind, text) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![kind, text],
        )
        .map_err(db_err)?;
        let id: i64 = conn
            .query_row(
                "SELECT id FROM names WHERE kind = ?1 AND text = ?2",
                params![kind, text],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        ids.insert((kind, text.to_owned()), id);
        Ok(id)
    }

    /// Writes readings in one transaction; the last of one key wins.
    pub fn write(&mut self, readings: &[Reading]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(db_err)?;
        for r in readings {
            let device = Self::id(&tx, &mut self.ids, 0, r.device_id.as_str())?;
            let room = r
                .room()
                .map(|room| Self::id(&tx, &mut self.ids, 1, room.as_str()))
                .transpose()?;
            for family in FAMILIES {
                let cols = columns(family);
                let values: Vec<Value> = cols
                    .iter()
                    .map(|q| r.get(*q).map_or(Value::Null, stored_value))
                    .collect();
                if values.iter().all(|v| *v == Value::Null) {
                    continue;
                }
                let names: Vec<&str> = cols.iter().map(|q| q.name()).collect();
                let marks = vec!["?"; cols.len()].join(", ");
                let sql = format!(
                    "INSERT OR REPLACE INTO {} (device, ts, room, {}) VALUES (?, ?, ?, {marks})",
                    table(family),
                    names.join(", ")
                );
                let mut stmt = tx.prepare_cached(&sql).map_err(db_err)?;
                let mut args: Vec<Value> = vec![
                    Value::Integer(device),
                    Value::Integer(r.timestamp.millis()),
                    room.map_or(Value::Null, Value::Integer),
                ];
                args.extend(values);
                stmt.execute(rusqlite::params_from_iter(args))
                    .map_err(db_err)?;
            }
        }
        // The registry, in the same transaction, by the stream Lambda's planner.
        let plan = crate::registry::plan(readings.iter().enumerate());
        Self::apply_plan(&tx, &mut self.ids, &plan)?;
        tx.commit().map_err(db_err)
    }

    /// The same monotonic rules as the DynamoDB adapter's conditional updates:
    /// `latest`/`last_seen` (and a device's room) move only to a newer or equal
    /// (time, device); `first_seen` only earlier; sets only grow.
    fn apply_plan(
        tx: &Connection,
        ids: &mut HashMap<(u8, String), i64>,
        plan: &RegistryPlan,
    ) -> Result<(), StoreError> {
        for p in &plan.devices {
            let u = &p.update;
            let id = Self::id(tx, ids, 0, u.device_id.as_str())?;
            let room = u
                .room
                .as_ref()
                .map(|r| Self::id(tx, ids, 1, r.as_str()))
                .transpose()?;
            let types = u.types.iter().fold(0i64, |b, k| b | 1 << (*k as i64));
            let quantities = u.quantities.iter().fold(0i64, |b, q| b | 1 << (*q as i64));
            tx.execute(
                "INSERT INTO devices (id) VALUES (?1) ON CONFLICT DO NOTHING",
                params![id],
            )
            .map_err(db_err)?;
            let newest = Self::newest(tx, "devices", id, &u.latest)?;
            tx.execute(
                "UPDATE devices SET
                    types = types | ?2,
                    quantities = quantities | ?3,
                    first_seen = min(coalesce(first_seen, ?4), ?4),
                    last_seen = CASE WHEN ?5 THEN ?6 ELSE last_seen END,
                    latest = CASE WHEN ?5 THEN ?7 ELSE latest END,
                    room = CASE WHEN ?5 AND ?8 IS NOT NULL THEN ?8 ELSE room END
                 WHERE id = ?1",
                params![
                    id,
                    types,
                    quantities,
                    u.first_seen.millis(),
                    newest,
                    u.latest.timestamp.millis(),
                    latest_text(&u.latest)?,
                    room
                ],
            )
            .map_err(db_err)?;
        }
        for p in &plan.rooms {
            let u = &p.update;
            let id = Self::id(tx, ids, 1, u.room_id.as_str())?;
            tx.execute(
                "INSERT INTO rooms (id) VALUES (?1) ON CONFLICT DO NOTHING",
                params![id],
            )
            .map_err(db_err)?;
            let newest = Self::newest(tx, "rooms", id, &u.latest)?;
            tx.execute(
                "UPDATE rooms SET
                    first_seen = min(coalesce(first_seen, ?2), ?2),
                    last_seen = CASE WHEN ?3 THEN ?4 ELSE last_seen END,
                    latest = CASE WHEN ?3 THEN ?5 ELSE latest END
                 WHERE id = ?1",
                params![
                    id,
                    u.first_seen.millis(),
                    newest,
                    u.latest.timestamp.millis(),
                    latest_text(&u.latest)?
                ],
            )
            .map_err(db_err)?;
            for device in &u.devices {
                let device = Self::id(tx, ids, 0, device.as_str())?;
                tx.execute(
                    "INSERT INTO room_devices (room, device) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                    params![id, device],
                )
                .map_err(db_err)?;
            }
        }
        Ok(())
    }

    /// Whether `latest` is at least as new as the stored latest reading.
    fn newest(
        tx: &Connection,
        registry: &str,
        id: i64,
        latest: &Reading,
    ) -> Result<bool, StoreError> {
        let stored: Option<String> = tx
            .query_row(
                &format!("SELECT latest FROM {registry} WHERE id = ?1"),
                params![id],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        Ok(match stored {
            None => true,
            Some(text) => crate::registry::newer_or_same(latest, &stored_reading(&text)?),
        })
    }

    /// The whole registry.
    pub fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        let mut snapshot = RegistrySnapshot::default();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT n.text, d.name, r.text, d.types, d.quantities, d.first_seen, d.last_seen, d.latest
                 FROM devices d JOIN names n ON n.id = d.id LEFT JOIN names r ON r.id = d.room",
            )
            .map_err(db_err)?;
        let mut rows = stmt.query([]).map_err(db_err)?;
        while let Some(row) = rows.next().map_err(db_err)? {
            let text = |i| row.get::<_, Option<String>>(i).map_err(db_err);
            let int = |i| row.get::<_, Option<i64>>(i).map_err(db_err);
            let device_id = parse_id(&text(0)?.unwrap_or_default(), DeviceId::parse)?;
            let types: i64 = int(3)?.unwrap_or(0);
            let quantities: i64 = int(4)?.unwrap_or(0);
            snapshot.devices.insert(
                device_id.clone(),
                DeviceRecord {
                    device_id,
                    name: text(1)?,
                    room: text(2)?.map(|r| parse_id(&r, RoomId::parse)).transpose()?,
                    types: FAMILIES
                        .into_iter()
                        .filter(|k| types & 1 << (*k as i64) != 0)
                        .collect(),
                    quantities: Quantity::ALL
                        .into_iter()
                        .filter(|q| quantities & 1 << (*q as i64) != 0)
                        .collect(),
                    first_seen: int(5)?.map(millis).transpose()?,
                    last_seen: int(6)?.map(millis).transpose()?,
                    latest: text(7)?.map(|t| stored_reading(&t)).transpose()?,
                },
            );
        }
        drop(rows);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT n.text, r.name, r.first_seen, r.last_seen, r.latest,
                        (SELECT group_concat(d.text, ' ') FROM room_devices rd JOIN names d ON d.id = rd.device WHERE rd.room = r.id)
                 FROM rooms r JOIN names n ON n.id = r.id",
            )
            .map_err(db_err)?;
        let mut rows = stmt.query([]).map_err(db_err)?;
        while let Some(row) = rows.next().map_err(db_err)? {
            let text = |i| row.get::<_, Option<String>>(i).map_err(db_err);
            let int = |i| row.get::<_, Option<i64>>(i).map_err(db_err);
            let room_id = parse_id(&text(0)?.unwrap_or_default(), RoomId::parse)?;
            snapshot.rooms.insert(
                room_id.clone(),
                RoomRecord {
                    room_id,
                    name: text(1)?,
                    first_seen: int(2)?.map(millis).transpose()?,
                    last_seen: int(3)?.map(millis).transpose()?,
                    latest: text(4)?.map(|t| stored_reading(&t)).transpose()?,
                    devices: text(5)?
                        .unwrap_or_default()
                        .split_whitespace()
                        .map(|d| parse_id(d, DeviceId::parse))
                        .collect::<Result<_, _>>()?,
                },
            );
        }
        Ok(snapshot)
    }

    /// A device's readings in a range, in time order, each rebuilt from its
    /// rows in every family table.
    pub fn device_readings(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> Result<Vec<Reading>, StoreError> {
        let Some(id) = self
            .conn
            .query_row(
                "SELECT id FROM names WHERE kind = 0 AND text = ?1",
                params![device.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(db_err)?
        else {
            return Ok(Vec::new());
        };
        let mut by_time: std::collections::BTreeMap<i64, RowsAtOneTime> =
            std::collections::BTreeMap::new();
        for family in FAMILIES {
            let cols = columns(family);
            let names: Vec<&str> = cols.iter().map(|q| q.name()).collect();
            let sql = format!(
                "SELECT ts, room, {} FROM {} WHERE device = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts",
                names.join(", "),
                table(family)
            );
            let mut stmt = self.conn.prepare_cached(&sql).map_err(db_err)?;
            let mut rows = stmt
                .query(params![id, range.from().millis(), range.to().millis()])
                .map_err(db_err)?;
            while let Some(row) = rows.next().map_err(db_err)? {
                let ts: i64 = row.get(0).map_err(db_err)?;
                let room: Option<i64> = row.get(1).map_err(db_err)?;
                let entry = by_time.entry(ts).or_insert((None, Vec::new()));
                entry.0 = entry.0.or(room);
                for (i, q) in cols.iter().enumerate() {
                    if let Some(v) = read_value(row.get_ref(2 + i).map_err(db_err)?) {
                        entry.1.push((*q, v));
                    }
                }
            }
        }
        let mut rooms: HashMap<i64, RoomId> = HashMap::new();
        let mut out = Vec::with_capacity(by_time.len());
        for (ts, (room, values)) in by_time {
            let room = match room {
                Some(id) => Some(match rooms.get(&id) {
                    Some(r) => r.clone(),
                    None => {
                        let text: String = self
                            .conn
                            .query_row("SELECT text FROM names WHERE id = ?1", params![id], |r| {
                                r.get(0)
                            })
                            .map_err(db_err)?;
                        let r = RoomId::parse(&text)
                            .map_err(|e| StoreError::Corrupt(format!("room {text:?}: {e}")))?;
                        rooms.insert(id, r.clone());
                        r
                    }
                }),
                None => None,
            };
            let corrupt = |m: String| StoreError::Corrupt(m);
            out.push(Reading {
                device_id: device.clone(),
                timestamp: Timestamp::from_millis(ts).map_err(|e| corrupt(e.to_string()))?,
                measurement: Measurement::new(room, values)
                    .map_err(|p| corrupt(format!("{device} at {ts}: {p:?}")))?,
            });
        }
        Ok(out)
    }

    /// A room's temperature and humidity readings in a range, in (time,
    /// device) order: what the `room-time` index answers on DynamoDB. There is
    /// no room index here: the room's devices (from the registry) are read by
    /// their primary keys, keeping the rows that were in the room at the time.
    pub fn room_readings(
        &self,
        room: &RoomId,
        range: &TimeRange,
    ) -> Result<Vec<Reading>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT rd.room, rd.device, n.text FROM room_devices rd
                 JOIN names r ON r.id = rd.room AND r.kind = 1 AND r.text = ?1
                 JOIN names n ON n.id = rd.device",
            )
            .map_err(db_err)?;
        let devices: Vec<(i64, i64, String)> = stmt
            .query_map(params![room.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(db_err)?
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
        let mut out = Vec::new();
        let mut rows = self
            .conn
            .prepare_cached(
                "SELECT ts, temperature, humidity FROM readings_climate
                 WHERE device = ?1 AND ts >= ?2 AND ts < ?3 AND room = ?4
                   AND (temperature IS NOT NULL OR humidity IS NOT NULL)
                 ORDER BY ts",
            )
            .map_err(db_err)?;
        for (room_id, device_id, device) in devices {
            let device = parse_id(&device, DeviceId::parse)?;
            let mut found = rows
                .query(params![
                    device_id,
                    range.from().millis(),
                    range.to().millis(),
                    room_id
                ])
                .map_err(db_err)?;
            while let Some(row) = found.next().map_err(db_err)? {
                let mut values = Vec::with_capacity(2);
                for (i, q) in [(1, Quantity::Temperature), (2, Quantity::Humidity)] {
                    if let Some(v) = read_value(row.get_ref(i).map_err(db_err)?) {
                        values.push((q, v));
                    }
                }
                out.push(Reading {
                    device_id: device.clone(),
                    timestamp: millis(row.get(0).map_err(db_err)?)?,
                    measurement: Measurement::new(Some(room.clone()), values)
                        .map_err(|p| StoreError::Corrupt(format!("{p:?}")))?,
                });
            }
        }
        out.sort_by(|a, b| (a.timestamp, &a.device_id).cmp(&(b.timestamp, &b.device_id)));
        Ok(out)
    }

    /// Empties the WAL into the file.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .map_err(db_err)
    }

    /// How many climate rows the Z-order index holds (for tests).
    pub fn z_indexed(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM readings_climate INDEXED BY readings_climate_z
                 WHERE temperature IS NOT NULL AND humidity IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .map_err(db_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every value comes back exactly, thousandths or not.
        #[test]
        fn values_come_back_exactly(v in prop_oneof![
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            (-1_000_000_000i64..1_000_000_000).prop_map(|t| t as f64 / 1000.0),
            (-100_000i64..100_000).prop_map(|t| t as f64 / 100.0),
        ]) {
            let stored = stored_value(v);
            let back = match &stored {
                Value::Integer(i) => read_value(ValueRef::Integer(*i)),
                Value::Real(r) => read_value(ValueRef::Real(*r)),
                _ => None,
            };
            // Bit for bit, but for -0, which validation turns into 0 anyway.
            prop_assert_eq!(back, Some(v));
            prop_assert!(v == 0.0 || back.unwrap().to_bits() == v.to_bits());
        }
    }

    fn at(minute: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap()
    }

    #[test]
    fn readings_come_back_whole_across_families() {
        let mut db = TimeSeriesDb::in_memory().unwrap();
        let aranet = Reading {
            device_id: DeviceId::parse("aranet-1").unwrap(),
            timestamp: at(1),
            measurement: Measurement::new(
                Some(RoomId::parse("office").unwrap()),
                vec![
                    (Quantity::Temperature, 21.0),
                    (Quantity::Humidity, 40.1),
                    (Quantity::Co2, 612.0),
                    (Quantity::Battery, 0.1 + 0.2),
                ],
            )
            .unwrap(),
        };
        let meter = Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: at(1),
            measurement: Measurement::power(5210.125, 1e-7, -350.5).unwrap(),
        };
        let later = Reading {
            timestamp: at(2),
            ..aranet.clone()
        };
        db.write(&[aranet.clone(), meter.clone(), later.clone()])
            .unwrap();
        let range = TimeRange::new(at(0), at(10)).unwrap();
        assert_eq!(
            db.device_readings(&aranet.device_id, &range).unwrap(),
            vec![aranet.clone(), later]
        );
        assert_eq!(
            db.device_readings(&meter.device_id, &range).unwrap(),
            vec![meter]
        );
        assert_eq!(
            db.z_indexed().unwrap(),
            2,
            "climate rows with both in the Z index"
        );
        // The last of one key wins.
        let replaced = Reading {
            measurement: Measurement::climate(RoomId::parse("office").unwrap(), 22.0, 41.0)
                .unwrap(),
            ..aranet.clone()
        };
        db.write(std::slice::from_ref(&replaced)).unwrap();
        let first = &db.device_readings(&aranet.device_id, &range).unwrap()[0];
        assert_eq!(first.get(Quantity::Temperature), Some(22.0));
    }

    /// The registry follows the same rules as the serving store's (and the
    /// stream Lambda's), batch order included.
    #[tokio::test]
    async fn the_registry_follows_the_serving_store_s_rules_in_either_batch_order() {
        use crate::store::{SqliteStore, Store};
        let climate = |d: &str, room: &str, m: i64, t: f64| Reading {
            device_id: DeviceId::parse(d).unwrap(),
            timestamp: at(m),
            measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, 50.0).unwrap(),
        };
        let batches: Vec<Vec<Reading>> = vec![
            vec![
                climate("s-1", "kitchen", 10, 20.0),
                climate("s-2", "kitchen", 10, 21.0),
            ],
            // s-1 moves to the hall; an older, late reading of s-2.
            vec![
                climate("s-1", "hall", 20, 19.0),
                climate("s-2", "kitchen", 5, 18.0),
            ],
            vec![
                Reading {
                    device_id: DeviceId::parse("meter-1").unwrap(),
                    timestamp: at(15),
                    measurement: Measurement::power(100.0, 1.0, 5.0).unwrap(),
                },
                Reading {
                    device_id: DeviceId::parse("s-1").unwrap(),
                    timestamp: at(30),
                    measurement: Measurement::new(None, vec![(Quantity::Battery, 80.0)]).unwrap(),
                },
            ],
        ];
        let (serving, serving_backward) = (
            SqliteStore::in_memory().unwrap(),
            SqliteStore::in_memory().unwrap(),
        );
        let mut forward = TimeSeriesDb::in_memory().unwrap();
        let mut backward = TimeSeriesDb::in_memory().unwrap();
        for b in &batches {
            assert!(serving.write_readings(b).await.unwritten.is_empty());
            forward.write(b).unwrap();
        }
        for b in batches.iter().rev() {
            assert!(serving_backward
                .write_readings(b)
                .await
                .unwritten
                .is_empty());
            backward.write(b).unwrap();
        }
        let want = serving.load_registry().await.unwrap();
        assert_eq!(forward.load_registry().unwrap(), want);
        assert_eq!(
            backward.load_registry().unwrap(),
            serving_backward.load_registry().await.unwrap()
        );
        let s1 = &want.devices[&DeviceId::parse("s-1").unwrap()];
        assert_eq!(s1.room.as_ref().map(|r| r.as_str()), Some("hall"));
        assert_eq!(s1.last_seen, Some(at(30)));
    }

    /// A room's readings without a room index: the same answer as the
    /// serving store's `room-time` read, a moving device counted where it was.
    #[tokio::test]
    async fn a_room_s_readings_match_the_serving_store_s() {
        use crate::store::{Order, RangeRequest, SqliteStore, Store};
        let climate = |d: &str, room: &str, m: i64, t: f64| Reading {
            device_id: DeviceId::parse(d).unwrap(),
            timestamp: at(m),
            measurement: Measurement::new(
                Some(RoomId::parse(room).unwrap()),
                vec![
                    (Quantity::Temperature, t),
                    (Quantity::Humidity, 50.5),
                    (Quantity::Co2, 600.0),
                ],
            )
            .unwrap(),
        };
        let readings = vec![
            climate("s-1", "kitchen", 1, 20.0),
            climate("s-2", "kitchen", 1, 21.0),
            climate("s-1", "hall", 2, 19.0),
            climate("s-1", "kitchen", 3, 20.5),
            climate("s-2", "office", 4, 22.0),
        ];
        let serving = SqliteStore::in_memory().unwrap();
        assert!(serving.write_readings(&readings).await.unwritten.is_empty());
        let mut db = TimeSeriesDb::in_memory().unwrap();
        db.write(&readings).unwrap();
        let range = TimeRange::new(at(0), at(10)).unwrap();
        for room in ["kitchen", "hall", "office", "attic"] {
            let room = RoomId::parse(room).unwrap();
            let request = RangeRequest {
                range,
                order: Order::Asc,
                limit: 1000,
                after: None,
            };
            let want = serving
                .room_readings(&room, &request)
                .await
                .unwrap()
                .readings;
            assert_eq!(db.room_readings(&room, &range).unwrap(), want, "{room}");
        }
        assert_eq!(
            db.room_readings(&RoomId::parse("kitchen").unwrap(), &range)
                .unwrap()
                .len(),
            3
        );
    }

    /// The layout's bytes per reading, with every index, for a week of the
    /// benchmark's household (a meter and three room sensors at 1 reading a
    /// minute): within the budget of 64.
    #[test]
    fn a_reading_costs_at_most_64_bytes_on_disk() {
        let dir = std::env::temp_dir().join(format!("timeseries-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ts.db");
        let _ = std::fs::remove_file(&path);
        let mut db = TimeSeriesDb::open(&path).unwrap();
        let (mut kwh, mut n) = (5210.125f64, 0usize);
        let started = std::time::Instant::now();
        let mut batch = Vec::with_capacity(1000);
        for i in 0..7 * 1440 {
            let x = i as f64;
            let w = ((350.0 + 200.0 * (x / 50.0).sin()) * 10.0).round() / 10.0;
            kwh = ((kwh + w.max(0.0) / 60_000.0) * 1000.0).round() / 1000.0;
            batch.push(Reading {
                device_id: DeviceId::parse("meter-1").unwrap(),
                timestamp: at(i),
                measurement: Measurement::power(kwh, 812.5, w).unwrap(),
            });
            for d in 2..=4 {
                let t = ((21.0 + 2.0 * (x / 300.0 + d as f64).sin()) * 100.0).round() / 100.0;
                let h = ((45.0 + 5.0 * (x / 400.0 + d as f64).sin()) * 10.0).round() / 10.0;
                batch.push(Reading {
                    device_id: DeviceId::parse(&format!("sensor-{d}")).unwrap(),
                    timestamp: at(i),
                    measurement: Measurement::climate(
                        RoomId::parse(&format!("room-{d}")).unwrap(),
                        t,
                        h,
                    )
                    .unwrap(),
                });
            }
            if batch.len() >= 1000 {
                db.write(&batch).unwrap();
                n += batch.len();
                batch.clear();
            }
        }
        db.write(&batch).unwrap();
        n += batch.len();
        db.checkpoint().unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let per_reading = bytes as f64 / n as f64;
        eprintln!(
            "{per_reading:.1} bytes per reading ({bytes} bytes, {n} readings); written at {:.0} readings/s (not judged: a test)",
            n as f64 / started.elapsed().as_secs_f64()
        );
        assert!(per_reading <= 64.0, "{per_reading:.1} bytes per reading");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
