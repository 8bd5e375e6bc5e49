//! Device and room ids as integers: the `names` table, and the writer's cache of it.

use super::db_err;
use domain::model::{DeviceId, RoomId};
use rusqlite::{params, Connection, OptionalExtension};
use storage::FastMap;
use storage::StoreError;

/// `names.kind` of a device and of a room.
pub const DEVICE: u8 = 0;
pub const ROOM: u8 = 1;

/// The integer id of a device (`DEVICE`) or room (`ROOM`), if it has one.
pub fn find(conn: &Connection, kind: u8, text: &str) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached("SELECT id FROM names WHERE kind = ?1 AND text = ?2")
        .map_err(db_err)?
        .query_row(params![kind, text], |r| r.get(0))
        .optional()
        .map_err(db_err)
}

fn text(conn: &Connection, id: i64) -> Result<String, StoreError> {
    conn.prepare_cached("SELECT text FROM names WHERE id = ?1")
        .map_err(db_err)?
        .query_row(params![id], |r| r.get(0))
        .map_err(db_err)
}

pub fn device(conn: &Connection, id: i64) -> Result<DeviceId, StoreError> {
    let text = text(conn, id)?;
    DeviceId::parse(&text).map_err(|e| StoreError::Corrupt(format!("device {text:?}: {e}")))
}

pub fn room(conn: &Connection, id: i64) -> Result<RoomId, StoreError> {
    let text = text(conn, id)?;
    RoomId::parse(&text).map_err(|e| StoreError::Corrupt(format!("room {text:?}: {e}")))
}

/// Every device with an id, and its id.
pub fn devices(conn: &Connection) -> Result<Vec<(i64, DeviceId)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT id, text FROM names WHERE kind = ?1 ORDER BY text")
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![DEVICE], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(db_err)?;
    rows.map(|row| {
        let (id, text) = row.map_err(db_err)?;
        DeviceId::parse(&text)
            .map(|d| (id, d))
            .map_err(|e| StoreError::Corrupt(format!("device {text:?}: {e}")))
    })
    .collect()
}

/// The writer's ids: made on first use, cached. Forgotten when a transaction
/// rolls back (`clear`), since the ids it made are gone with it.
#[derive(Default)]
pub struct Names {
    ids: [FastMap<String, i64>; 2],
}

impl Names {
    pub fn device(&mut self, conn: &Connection, d: &DeviceId) -> Result<i64, StoreError> {
        self.id(conn, DEVICE, d.as_str())
    }

    pub fn room(&mut self, conn: &Connection, r: &RoomId) -> Result<i64, StoreError> {
        self.id(conn, ROOM, r.as_str())
    }

    fn id(&mut self, conn: &Connection, kind: u8, text: &str) -> Result<i64, StoreError> {
        let cache = &mut self.ids[kind as usize];
        if let Some(id) = cache.get(text) {
            return Ok(*id);
        }
        let id = match find(conn, kind, text)? {
            Some(id) => id,
            None => {
                conn.prepare_cached("INSERT INTO names (kind, text) VALUES (?1, ?2)")
                    .map_err(db_err)?
                    .execute(params![kind, text])
                    .map_err(db_err)?;
                conn.last_insert_rowid()
            }
        };
        cache.insert(text.to_owned(), id);
        Ok(id)
    }

    pub fn clear(&mut self) {
        for cache in &mut self.ids {
            cache.clear();
        }
    }
}
