//! Embedded adapter: SQLite (WAL) with the item and key layout of DESIGN §3.
//! Items are stored whole, as DynamoDB JSON, through the same codec as the
//! DynamoDB adapter; a `room` column and index stand in for the `room-time` GSI.
//! The registry is kept up to date in the transaction that writes the readings,
//! planned by `registry::plan`, the pure planner the stream Lambda uses; there is
//! no change log (a database that still has one is caught up and loses it on
//! open: [`catch_up_change_log`]).

use super::item::{DeviceItem, ReadingItem, RoomItem, SnapshotItem};
use super::{
    now_epoch_seconds, Deduped, DeviceRecord, DeviceUpdate, Order, Page, RangeRequest,
    RegistrySnapshot, Retention, RoomRecord, RoomUpdate, Store, StoreError, WriteReport, ZIndex,
    ZPage, ZRangeRequest,
};
use crate::keys::zorder::ZKey;
use crate::keys::{self, attr, DEVICE_PARTITION, ROOM_PARTITION};
use crate::model::{DeviceId, Name, Reading, RoomId, Timestamp};
use crate::registry::RegistryPlan;
use rusqlite::{params, Connection, OptionalExtension};
use serde::de::DeserializeOwned;
use serde_dynamo::{AttributeValue, Item};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    room TEXT,            -- the item's `room` attribute: key of the room-time index
    item TEXT NOT NULL,   -- the whole item as DynamoDB JSON
    expires_at INTEGER,   -- the item's `expires_at` (epoch seconds), for retention
    shard TEXT,           -- the item's `shard` (readings): key of all-time
    ats  TEXT,            -- the item's `ats` (readings): sort key of all-time
    z    TEXT,            -- the item's `z` (climate readings): key of room-z and device-z
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS room_time ON items (room, sk, pk) WHERE room IS NOT NULL;
CREATE TABLE IF NOT EXISTS settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Brings a database made by an earlier version up to the current schema.
fn has_column(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('items') WHERE name = ?1",
        params![name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(db_err)
}

/// `(pk, sk, item)` of every row a query selects.
fn item_rows(
    conn: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = conn.prepare(sql).map_err(db_err)?;
    let rows = stmt
        .query_map(args, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err);
    rows
}

fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let has_expiry = has_column(conn, "expires_at")?;
    if !has_expiry {
        conn.execute_batch("ALTER TABLE items ADD COLUMN expires_at INTEGER")
            .map_err(db_err)?;
    }
    conn.execute_batch("CREATE INDEX IF NOT EXISTS items_expiry ON items (expires_at) WHERE expires_at IS NOT NULL")
        .map_err(db_err)?;
    let has_z = has_column(conn, "z")?;
    let has_shard = has_column(conn, "shard")?;
    if !has_shard {
        // Filled by the all-time re-index that runs when the store opens.
        conn.execute_batch(
            "ALTER TABLE items ADD COLUMN shard TEXT; ALTER TABLE items ADD COLUMN ats TEXT;",
        )
        .map_err(db_err)?;
    }
    if !has_z {
        conn.execute_batch("ALTER TABLE items ADD COLUMN z TEXT")
            .map_err(db_err)?;
        backfill_z(conn)?;
    }
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS all_time ON items (shard, ats) WHERE shard IS NOT NULL;
         CREATE INDEX IF NOT EXISTS room_z ON items (room, z) WHERE z IS NOT NULL;
         CREATE INDEX IF NOT EXISTS device_z ON items (pk, z) WHERE z IS NOT NULL;",
    )
    .map_err(db_err)
}

fn has_table(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(db_err)
}

/// A database from before the registry was kept in the write transaction has
/// a change log. The readings its registry consumer had not applied yet (past
/// the checkpoint) are applied now, and the log is dropped, in one transaction:
/// a reading written just before an upgrade still reaches the registry.
/// Returns how many readings were applied.
fn catch_up_change_log(conn: &Connection) -> Result<usize, StoreError> {
    if !has_table(conn, "change_log")? {
        return Ok(0);
    }
    let tx = conn.unchecked_transaction().map_err(db_err)?;
    let checkpoint = if has_table(&tx, "checkpoints")? {
        "(SELECT seq FROM checkpoints WHERE consumer = 'registry')"
    } else {
        "NULL"
    };
    let images: Vec<String> = {
        let mut stmt = tx
            .prepare(&format!(
                "SELECT new_image FROM change_log
                 WHERE new_image IS NOT NULL AND seq > coalesce({checkpoint}, 0) ORDER BY seq"
            ))
            .map_err(db_err)?;
        let rows = stmt
            .query_map([], |r| r.get(0))
            .map_err(db_err)?
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
        rows
    };
    // Registry items changed too, and are in the log; only readings count, as
    // in the stream handler.
    let readings: Vec<Reading> = images
        .iter()
        .filter_map(|text| {
            SqliteStore::decode::<ReadingItem>(text)
                .ok()
                .and_then(|item| item.into_reading().ok())
        })
        .collect();
    let plan = crate::registry::plan(readings.iter().enumerate());
    SqliteStore::apply_plan_in(&tx, &plan)?;
    tx.execute_batch("DROP TABLE change_log; DROP TABLE IF EXISTS checkpoints;")
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    if !readings.is_empty() {
        tracing::info!(
            readings = readings.len(),
            "applied the old change log to the registry"
        );
    }
    Ok(readings.len())
}

/// Gives the climate readings of a database made before Z-order search their
/// `z` (in the item and the column), so that they are searchable too.
fn backfill_z(conn: &Connection) -> Result<(), StoreError> {
    let rows = item_rows(
        conn,
        "SELECT pk, sk, item FROM items WHERE room IS NOT NULL AND pk NOT IN (?1, ?2)",
        params![DEVICE_PARTITION, ROOM_PARTITION],
    )?;
    for (pk, sk, text) in rows {
        let Ok(reading) = SqliteStore::decode::<ReadingItem>(&text)
            .and_then(|i| i.into_reading().map_err(StoreError::Corrupt))
        else {
            continue; // not a reading: nothing to index
        };
        let mut item: Item = serde_json::from_str(&text).map_err(corrupt)?;
        let fresh: Item =
            serde_dynamo::to_item(ReadingItem::from_reading(&reading)).map_err(corrupt)?;
        let Some(z) = fresh.get(attr::Z).cloned() else {
            continue;
        };
        let z_text = match &z {
            AttributeValue::S(s) => s.clone(),
            _ => continue,
        };
        item.insert(attr::Z.to_owned(), z);
        conn.execute(
            "UPDATE items SET item = ?3, z = ?4 WHERE pk = ?1 AND sk = ?2",
            params![
                pk,
                sk,
                serde_json::to_string(&item).map_err(corrupt)?,
                z_text
            ],
        )
        .map_err(db_err)?;
    }
    Ok(())
}

/// Read connections of a database file. WAL lets them read while the one
/// writer writes; an in-memory database has none (its writer reads too).
const READERS: usize = 4;

#[derive(Clone)]
pub struct SqliteStore {
    /// The one writer; also the reader of an in-memory database.
    conn: Arc<Mutex<Connection>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    retention: Option<Retention>,
    shards: u32,
}

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite: {e}"))
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

impl SqliteStore {
    /// How many `all-time` shards readings are written to.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// One page of one `all-time` shard: readings of any device in the range,
    /// ordered by (time, device), after `request.after`.
    fn shard_readings(&self, shard: u32, request: &RangeRequest) -> Result<Page, StoreError> {
        let (lo, hi) = keys::all_time_sk_bounds(&request.range);
        let after = request
            .after
            .as_ref()
            .map(|p| keys::all_time_sk(p.timestamp, &p.device_id));
        self.sorted_range(
            [
                "SELECT item FROM items WHERE shard = ?1 AND ats BETWEEN ?2 AND ?3 AND (?4 IS NULL OR ats > ?4) AND (expires_at IS NULL OR expires_at > ?6) ORDER BY ats ASC LIMIT ?5",
                "SELECT item FROM items WHERE shard = ?1 AND ats BETWEEN ?2 AND ?3 AND (?4 IS NULL OR ats < ?4) AND (expires_at IS NULL OR expires_at > ?6) ORDER BY ats DESC LIMIT ?5",
            ],
            &keys::all_time_pk(shard),
            (lo, hi, after),
            request,
        )
    }

    /// Opens (creating if needed) a database file in WAL mode.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let conn = Connection::open(path.as_ref()).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        // NORMAL is durable across application crashes in WAL mode; only a power
        // loss can drop the last transactions.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        let mut store = Self::init(conn)?;
        // Opened after the writer has created and migrated the schema.
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path.as_ref(),
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(db_err)?;
                reader
                    .busy_timeout(std::time::Duration::from_secs(5))
                    .map_err(db_err)?;
                Ok(Mutex::new(reader))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        store.readers = Arc::new(readers);
        Ok(store)
    }

    /// A store that lives only as long as the process.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(db_err)?)
    }

    fn init(conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db_err)?;
        conn.execute_batch(SCHEMA).map_err(db_err)?;
        migrate(&conn)?;
        catch_up_change_log(&conn)?;
        // The count the database was indexed with, so that opening it and then
        // asking for that same count (`with_shards`) rewrites nothing.
        let indexed: Option<u32> = conn
            .query_row(
                "SELECT value FROM settings WHERE name = 'all_time_shards'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(db_err)?
            .and_then(|v| v.parse().ok());
        let store = Self {
            conn: Arc::new(Mutex::new(conn)),
            readers: Arc::new(Vec::new()),
            retention: None,
            shards: indexed.unwrap_or(keys::DEFAULT_SHARDS),
        };
        store.reindex_all_time()?;
        Ok(store)
    }

    /// Writes readings to `shards` `all-time` shards. A database indexed with
    /// another count is re-indexed here, once (`docs/all-devices.md`).
    pub fn with_shards(mut self, shards: u32) -> Result<Self, StoreError> {
        self.shards = shards.max(1);
        self.reindex_all_time()?;
        Ok(self)
    }

    /// Gives every reading its `all-time` keys for the current shard count, when
    /// the count changed or the database predates the index (no recorded count).
    fn reindex_all_time(&self) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db_err)?;
        let stored: Option<String> = tx
            .query_row(
                "SELECT value FROM settings WHERE name = 'all_time_shards'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        // Every write sets `shard`, so only a count change or a database from before
        // the index (no setting yet) needs the rewrite; opening never scans otherwise.
        if stored.as_deref() == Some(self.shards.to_string().as_str()) {
            return Ok(());
        }
        let rows = item_rows(
            &tx,
            "SELECT pk, sk, item FROM items WHERE pk NOT IN (?1, ?2)",
            params![DEVICE_PARTITION, ROOM_PARTITION],
        )?;
        for (pk, sk, text) in rows {
            let (Ok(device), Some(ts)) = (DeviceId::parse(&pk), keys::parse_reading_sk(&sk)) else {
                continue; // not a reading
            };
            let shard = keys::all_time_pk(keys::shard_of(&device, self.shards));
            let ats = keys::all_time_sk(ts, &device);
            let mut item: Item = serde_json::from_str(&text).map_err(corrupt)?;
            item.insert(attr::SHARD.to_owned(), AttributeValue::S(shard.clone()));
            item.insert(attr::ATS.to_owned(), AttributeValue::S(ats.clone()));
            tx.execute(
                "UPDATE items SET item = ?3, shard = ?4, ats = ?5 WHERE pk = ?1 AND sk = ?2",
                params![
                    pk,
                    sk,
                    serde_json::to_string(&item).map_err(corrupt)?,
                    shard,
                    ats
                ],
            )
            .map_err(db_err)?;
        }
        tx.execute(
            "INSERT INTO settings (name, value) VALUES ('all_time_shards', ?1)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            params![self.shards.to_string()],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    /// Writes readings with `expires_at` (`RETENTION_DAYS`); see [`Self::delete_expired`].
    pub fn with_retention(mut self, retention: Option<Retention>) -> Self {
        self.retention = retention;
        self
    }

    /// Deletes readings past `expires_at`, as DynamoDB's TTL does. Returns how many.
    pub async fn delete_expired(&self, now_epoch_seconds: i64) -> Result<usize, StoreError> {
        // The registry is not touched, as the stream handler ignores TTL deletions.
        self.blocking(move |s| {
            s.lock()
                .execute(
                    "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                    params![now_epoch_seconds],
                )
                .map_err(db_err)
        })
        .await
    }

    /// The writer.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A read connection: a free one of the pool, else any (it waits its turn),
    /// or the writer for an in-memory database.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        if self.readers.is_empty() {
            return self.lock();
        }
        for reader in self.readers.iter() {
            match reader.try_lock() {
                Ok(guard) => return guard,
                Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        self.readers[fastrand::usize(..self.readers.len())]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `op` on tokio's blocking pool: SQLite calls block, and must not
    /// hold up the runtime's worker threads.
    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&SqliteStore) -> T + Send + 'static,
    ) -> T {
        let store = self.clone();
        match tokio::task::spawn_blocking(move || op(&store)).await {
            Ok(value) => value,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
    }

    fn get_item(conn: &Connection, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let text: Option<String> = conn
            .query_row(
                "SELECT item FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        text.map(|t| serde_json::from_str(&t).map_err(corrupt))
            .transpose()
    }

    /// Upserts an item in the caller's transaction.
    fn put_item(conn: &Connection, pk: &str, sk: &str, item: &Item) -> Result<(), StoreError> {
        let new_text = serde_json::to_string(item).map_err(corrupt)?;
        // The room-time index serves a room's temperature and humidity (DynamoDB's
        // projection), so only readings with one of them enter it.
        let climate = item.contains_key("temperature") || item.contains_key("humidity");
        let room = match item.get(attr::ROOM) {
            Some(AttributeValue::S(r)) if climate => Some(r.as_str()),
            _ => None,
        };
        let expires_at = match item.get("expires_at") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().ok(),
            _ => None,
        };
        let text_attr = |name: &str| match item.get(name) {
            Some(AttributeValue::S(v)) => Some(v.as_str()),
            _ => None,
        };
        let (z, shard, ats) = (
            text_attr(attr::Z),
            text_attr(attr::SHARD),
            text_attr(attr::ATS),
        );
        // Most writes are new keys: try the insert first, so only a repeated key
        // pays for reading the old item.
        let inserted = conn
            .prepare_cached(
                "INSERT INTO items (pk, sk, room, item, expires_at, z, shard, ats) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (pk, sk) DO NOTHING",
            )
            .and_then(|mut insert| {
                insert.execute(params![pk, sk, room, new_text, expires_at, z, shard, ats])
            })
            .map_err(db_err)?
            == 1;
        if !inserted {
            conn.prepare_cached(
                "UPDATE items SET room = ?3, item = ?4, expires_at = ?5, z = ?6, shard = ?7, ats = ?8 WHERE pk = ?1 AND sk = ?2",
            )
            .and_then(|mut update| {
                update.execute(params![pk, sk, room, new_text, expires_at, z, shard, ats])
            })
            .map_err(db_err)?;
        }
        Ok(())
    }

    /// One page of a partition read in sort-key order: `sql` is the ascending and
    /// the descending query, over (partition, lo, hi, after, limit + 1, now).
    fn sorted_range(
        &self,
        sql: [&str; 2],
        partition: &str,
        (lo, hi, after): (String, String, Option<String>),
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let sql = match request.order {
            Order::Asc => sql[0],
            Order::Desc => sql[1],
        };
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
        let rows = stmt
            .query_map(
                params![
                    partition,
                    lo,
                    hi,
                    after,
                    (request.limit + 1) as i64,
                    now_epoch_seconds()
                ],
                |r| r.get(0),
            )
            .map_err(db_err)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(db_err)?;
        Self::readings_page(rows, request.limit)
    }

    fn decode<T: DeserializeOwned>(text: &str) -> Result<T, StoreError> {
        let item: Item = serde_json::from_str(text).map_err(corrupt)?;
        serde_dynamo::from_item(item).map_err(corrupt)
    }

    fn readings_page(rows: Vec<String>, limit: usize) -> Result<Page, StoreError> {
        Self::projected_page(rows, limit, |item| item)
    }

    /// A page of items as an index with this projection would return them.
    fn projected_page(
        rows: Vec<String>,
        limit: usize,
        projection: fn(ReadingItem) -> ReadingItem,
    ) -> Result<Page, StoreError> {
        let more = rows.len() > limit;
        let readings = rows
            .iter()
            .take(limit)
            .map(|t| {
                projection(Self::decode::<ReadingItem>(t)?)
                    .into_reading()
                    .map_err(StoreError::Corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page::of(readings, more))
    }

    /// Read-modify-write of one registry item in a transaction.
    fn update_registry_item(
        &self,
        pk: &str,
        sk: &str,
        change: impl FnOnce(&mut Item) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db_err)?;
        Self::update_registry_item_in(&tx, pk, sk, change)?;
        tx.commit().map_err(db_err)
    }

    /// Reads, changes and writes back one registry item in the caller's transaction.
    fn update_registry_item_in(
        tx: &Connection,
        pk: &str,
        sk: &str,
        change: impl FnOnce(&mut Item) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut item = Self::get_item(tx, pk, sk)?.unwrap_or_else(|| {
            Item::from(std::collections::HashMap::from([
                (attr::PK.to_owned(), AttributeValue::S(pk.to_owned())),
                (attr::SK.to_owned(), AttributeValue::S(sk.to_owned())),
            ]))
        });
        change(&mut item)?;
        Self::put_item(tx, pk, sk, &item)
    }

    /// Applies a registry plan in the caller's transaction: the same monotonic
    /// merges as `apply_device_update` and `apply_room_update`.
    fn apply_plan_in(tx: &Connection, plan: &RegistryPlan) -> Result<(), StoreError> {
        for p in &plan.devices {
            let u = &p.update;
            Self::update_registry_item_in(tx, DEVICE_PARTITION, u.device_id.as_str(), |item| {
                RegistryMerge::of_device(u).merge_into(item)
            })?;
        }
        for p in &plan.rooms {
            let u = &p.update;
            Self::update_registry_item_in(tx, ROOM_PARTITION, u.room_id.as_str(), |item| {
                RegistryMerge::of_room(u).merge_into(item)
            })?;
        }
        Ok(())
    }

    fn registry_write(&self, pk: &str, sk: &str, w: RegistryMerge<'_>) -> Result<(), StoreError> {
        self.update_registry_item(pk, sk, |item| w.merge_into(item))
    }

    fn set_user_attributes(
        &self,
        pk: &str,
        sk: &str,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        self.update_registry_item(pk, sk, |item| {
            match name {
                Some(n) => item.insert("name".into(), AttributeValue::S(n.as_str().to_owned())),
                None => item.remove("name"),
            };
            if let Some(room) = room {
                item.insert(attr::ROOM.into(), AttributeValue::S(room.to_string()));
            }
            Ok(())
        })
    }

    /// Copies everything in the WAL into the database file and empties the WAL,
    /// so that the file alone holds every committed write (a backup, a fixture).
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        self.blocking(|s| {
            s.lock()
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .map_err(db_err)
        })
        .await
    }

    /// One item as stored (DynamoDB JSON), for inspection.
    pub fn raw_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        Self::get_item(&self.reader(), pk, sk)
    }

    /// Writes one whole item, as an import or a repair would.
    pub fn put_raw_item(&self, item: &Item) -> Result<(), StoreError> {
        let key = |k: &str| match item.get(k) {
            Some(AttributeValue::S(s)) => Ok(s.clone()),
            _ => Err(StoreError::Corrupt(format!("item without a string {k}"))),
        };
        let (pk, sk) = (key(attr::PK)?, key(attr::SK)?);
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db_err)?;
        Self::put_item(&tx, &pk, &sk, item)?;
        tx.commit().map_err(db_err)
    }
}

/// A registry update as a merge into the stored item: the same monotonic rules
/// as the DynamoDB adapter's conditional expressions.
struct RegistryMerge<'a> {
    first_seen: Timestamp,
    latest: &'a Reading,
    /// Sets that gather members (`types` and `quantities` of a device, `devices` of a room).
    sets: Vec<(&'static str, Vec<String>)>,
    room: Option<&'a RoomId>,
}

impl<'a> RegistryMerge<'a> {
    fn of_device(update: &'a DeviceUpdate) -> Self {
        RegistryMerge {
            first_seen: update.first_seen,
            latest: &update.latest,
            sets: super::device_sets(update),
            room: update.room.as_ref(),
        }
    }

    fn of_room(update: &'a RoomUpdate) -> Self {
        RegistryMerge {
            first_seen: update.first_seen,
            latest: &update.latest,
            sets: vec![(
                "devices",
                update.devices.iter().map(|d| d.to_string()).collect(),
            )],
            room: None,
        }
    }

    fn merge_into(self, item: &mut Item) -> Result<(), StoreError> {
        let text = |item: &Item, k: &str| match item.get(k) {
            Some(AttributeValue::S(s)) => Some(s.clone()),
            _ => None,
        };
        let last = self.latest.timestamp.to_string();
        let first = self.first_seen.to_string();
        // The same rule as the DynamoDB condition: newer, or as new and from the
        // same or a greater device id (registry::newer_or_same).
        let latest_device = match item.get("latest") {
            Some(AttributeValue::M(m)) => match m.get("device_id") {
                Some(AttributeValue::S(d)) => Some(d.clone()),
                _ => None,
            },
            _ => None,
        };
        let device = self.latest.device_id.as_str();
        let newest = match text(item, "last_seen") {
            None => true,
            Some(old) => {
                old < last || (old == last && latest_device.as_deref().is_none_or(|d| d <= device))
            }
        };
        if newest {
            item.insert("last_seen".into(), AttributeValue::S(last));
            let snapshot =
                serde_dynamo::to_attribute_value(SnapshotItem::from_reading(self.latest))
                    .map_err(corrupt)?;
            item.insert("latest".into(), snapshot);
            if let Some(room) = self.room {
                item.insert(attr::ROOM.into(), AttributeValue::S(room.to_string()));
            }
        }
        if text(item, "first_seen").is_none_or(|old| old > first) {
            item.insert("first_seen".into(), AttributeValue::S(first));
        }
        for (name, new) in self.sets {
            let mut members: BTreeSet<String> = match item.get(name) {
                Some(AttributeValue::Ss(v)) => v.iter().cloned().collect(),
                _ => BTreeSet::new(),
            };
            members.extend(new);
            item.insert(
                name.into(),
                AttributeValue::Ss(members.into_iter().collect()),
            );
        }
        Ok(())
    }
}

/// The operations on the calling thread. The `Store` impl below runs each on
/// tokio's blocking pool, so no SQLite call holds up the runtime's workers.
impl SqliteStore {
    fn write_readings_now(&self, readings: &[Reading]) -> WriteReport {
        let deduped = Deduped::new(readings);
        let result = (|| -> Result<(), StoreError> {
            let mut conn = self.lock();
            let tx = conn.transaction().map_err(db_err)?;
            for &i in &deduped.winners {
                let item: Item = serde_dynamo::to_item(ReadingItem::stored(
                    &readings[i],
                    self.retention,
                    self.shards,
                ))
                .map_err(corrupt)?;
                let r = &readings[i];
                Self::put_item(
                    &tx,
                    keys::reading_pk(&r.device_id),
                    &keys::reading_sk(r.timestamp),
                    &item,
                )?;
            }
            // The registry, in the same transaction: what the stream Lambda
            // would do with these records, planned by the same code.
            let plan = crate::registry::plan(deduped.winners.iter().map(|&i| (i, &readings[i])));
            Self::apply_plan_in(&tx, &plan)?;
            tx.commit().map_err(db_err)
        })();
        match result {
            Ok(()) => deduped.report(&[]),
            Err(err) => {
                // One transaction: all or nothing, so every reading is unwritten.
                tracing::error!(error = %err, "sqlite write failed");
                deduped.report(&(0..deduped.winners.len()).collect::<Vec<_>>())
            }
        }
    }

    fn device_readings_now(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let (lo, hi) = keys::reading_sk_bounds(&request.range);
        let after = request
            .after
            .as_ref()
            .map(|p| keys::reading_sk(p.timestamp));
        self.sorted_range(
            [
                "SELECT item FROM items WHERE pk = ?1 AND sk BETWEEN ?2 AND ?3 AND (?4 IS NULL OR sk > ?4) AND (expires_at IS NULL OR expires_at > ?6) ORDER BY sk ASC LIMIT ?5",
                "SELECT item FROM items WHERE pk = ?1 AND sk BETWEEN ?2 AND ?3 AND (?4 IS NULL OR sk < ?4) AND (expires_at IS NULL OR expires_at > ?6) ORDER BY sk DESC LIMIT ?5",
            ],
            keys::reading_pk(device),
            (lo, hi, after),
            request,
        )
    }

    fn room_readings_now(&self, room: &RoomId, request: &RangeRequest) -> Result<Page, StoreError> {
        let (lo, hi) = keys::reading_sk_bounds(&request.range);
        let (after_sk, after_pk) = match &request.after {
            Some(p) => (
                Some(keys::reading_sk(p.timestamp)),
                Some(keys::reading_pk(&p.device_id).to_owned()),
            ),
            None => (None, None),
        };
        let sql = match request.order {
            Order::Asc => "SELECT item FROM items WHERE room = ?1 AND sk BETWEEN ?2 AND ?3 AND (?4 IS NULL OR (sk, pk) > (?4, ?5)) AND (expires_at IS NULL OR expires_at > ?7) ORDER BY sk ASC, pk ASC LIMIT ?6",
            Order::Desc => "SELECT item FROM items WHERE room = ?1 AND sk BETWEEN ?2 AND ?3 AND (?4 IS NULL OR (sk, pk) < (?4, ?5)) AND (expires_at IS NULL OR expires_at > ?7) ORDER BY sk DESC, pk DESC LIMIT ?6",
        };
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
        let rows = stmt
            .query_map(
                params![
                    room.as_str(),
                    lo,
                    hi,
                    after_sk,
                    after_pk,
                    (request.limit + 1) as i64,
                    now_epoch_seconds()
                ],
                |r| r.get(0),
            )
            .map_err(db_err)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(db_err)?;
        Self::projected_page(rows, request.limit, ReadingItem::room_time_projection)
    }

    fn all_readings_now(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        let pages = (1..=self.shards)
            .map(|shard| self.shard_readings(shard, request))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(super::merge_pages(pages, request))
    }

    fn z_range_now(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> Result<ZPage, StoreError> {
        let (sql, part) = match index {
            ZIndex::Room(room) => (
                "SELECT z, item, expires_at FROM items WHERE room = ?1 AND z BETWEEN ?2 AND ?3 AND (?4 IS NULL OR z > ?4) ORDER BY z LIMIT ?5",
                room.as_str(),
            ),
            ZIndex::Device(device) => (
                "SELECT z, item, expires_at FROM items WHERE pk = ?1 AND z BETWEEN ?2 AND ?3 AND (?4 IS NULL OR z > ?4) ORDER BY z LIMIT ?5",
                keys::reading_pk(device),
            ),
        };
        let rows = {
            let conn = self.reader();
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            let rows = stmt
                .query_map(
                    params![
                        part,
                        request.from.as_str(),
                        request.to.as_str(),
                        request.after.map(|a| a.as_str()),
                        (request.limit + 1) as i64
                    ],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                        ))
                    },
                )
                .map_err(db_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err)?;
            rows
        };
        // As DynamoDB does: read `limit` items, then drop the expired ones.
        let more = rows.len() > request.limit;
        let now = now_epoch_seconds();
        let mut page = ZPage::default();
        for (z, text, expires_at) in rows.into_iter().take(request.limit) {
            let key = ZKey::parse(&z).ok_or_else(|| StoreError::Corrupt(format!("z {z:?}")))?;
            page.scanned += 1;
            if more {
                page.last_read = Some(key.clone());
            }
            if expires_at.is_some_and(|e| e <= now) {
                continue;
            }
            let reading = Self::decode::<ReadingItem>(&text)?
                .into_reading()
                .map_err(StoreError::Corrupt)?;
            page.items.push((key, reading));
        }
        Ok(page)
    }

    fn latest_reading_now(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        let (lo, hi) = (
            keys::reading_sk(Timestamp::MIN),
            keys::reading_sk(Timestamp::MAX),
        );
        let text: Option<String> = self
            .reader()
            .query_row(
                "SELECT item FROM items WHERE pk = ?1 AND sk BETWEEN ?2 AND ?3 AND (expires_at IS NULL OR expires_at > ?4)
                 ORDER BY sk DESC LIMIT 1",
                params![keys::reading_pk(device), lo, hi, now_epoch_seconds()],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        text.map(|t| {
            Self::decode::<ReadingItem>(&t)?
                .into_reading()
                .map_err(StoreError::Corrupt)
        })
        .transpose()
    }

    fn load_registry_now(&self) -> Result<RegistrySnapshot, StoreError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT pk, item FROM items WHERE pk IN (?1, ?2)")
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![DEVICE_PARTITION, ROOM_PARTITION], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        let mut snapshot = RegistrySnapshot::default();
        for (pk, text) in rows {
            if pk == DEVICE_PARTITION {
                let d = Self::decode::<DeviceItem>(&text)?
                    .into_record()
                    .map_err(StoreError::Corrupt)?;
                snapshot.devices.insert(d.device_id.clone(), d);
            } else {
                let r = Self::decode::<RoomItem>(&text)?
                    .into_record()
                    .map_err(StoreError::Corrupt)?;
                snapshot.rooms.insert(r.room_id.clone(), r);
            }
        }
        Ok(snapshot)
    }

    fn device_now(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        let item = Self::get_item(&self.reader(), DEVICE_PARTITION, device.as_str())?;
        item.map(|i| {
            serde_dynamo::from_item::<_, DeviceItem>(i)
                .map_err(corrupt)?
                .into_record()
                .map_err(StoreError::Corrupt)
        })
        .transpose()
    }

    fn room_now(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        let item = Self::get_item(&self.reader(), ROOM_PARTITION, room.as_str())?;
        item.map(|i| {
            serde_dynamo::from_item::<_, RoomItem>(i)
                .map_err(corrupt)?
                .into_record()
                .map_err(StoreError::Corrupt)
        })
        .transpose()
    }

    fn apply_device_update_now(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        self.registry_write(
            DEVICE_PARTITION,
            update.device_id.as_str(),
            RegistryMerge::of_device(update),
        )
    }

    fn set_device_profile_now(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        self.set_user_attributes(DEVICE_PARTITION, device.as_str(), name, room)
    }

    fn set_room_name_now(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        self.set_user_attributes(ROOM_PARTITION, room.as_str(), name, None)
    }

    fn apply_room_update_now(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        self.registry_write(
            ROOM_PARTITION,
            update.room_id.as_str(),
            RegistryMerge::of_room(update),
        )
    }
}

impl Store for SqliteStore {
    fn registry_follows_writes(&self) -> bool {
        true
    }

    async fn write_readings(&self, readings: &[Reading]) -> WriteReport {
        let readings = readings.to_vec();
        self.blocking(move |s| s.write_readings_now(&readings))
            .await
    }

    async fn device_readings(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let (device, request) = (device.clone(), request.clone());
        self.blocking(move |s| s.device_readings_now(&device, &request))
            .await
    }

    async fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let (room, request) = (room.clone(), request.clone());
        self.blocking(move |s| s.room_readings_now(&room, &request))
            .await
    }

    async fn all_readings(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        let request = request.clone();
        self.blocking(move |s| s.all_readings_now(&request)).await
    }

    async fn z_range(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> Result<ZPage, StoreError> {
        enum Part {
            Room(RoomId),
            Device(DeviceId),
        }
        let part = match index {
            ZIndex::Room(r) => Part::Room(r.clone()),
            ZIndex::Device(d) => Part::Device(d.clone()),
        };
        let (from, to, after, limit) = (
            request.from.clone(),
            request.to.clone(),
            request.after.cloned(),
            request.limit,
        );
        self.blocking(move |s| {
            let index = match &part {
                Part::Room(r) => ZIndex::Room(r),
                Part::Device(d) => ZIndex::Device(d),
            };
            let request = ZRangeRequest {
                from: &from,
                to: &to,
                after: after.as_ref(),
                limit,
            };
            s.z_range_now(index, &request)
        })
        .await
    }

    async fn latest_reading(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        let device = device.clone();
        self.blocking(move |s| s.latest_reading_now(&device)).await
    }

    async fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        self.blocking(|s| s.load_registry_now()).await
    }

    async fn device(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        let device = device.clone();
        self.blocking(move |s| s.device_now(&device)).await
    }

    async fn room(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        let room = room.clone();
        self.blocking(move |s| s.room_now(&room)).await
    }

    async fn apply_device_update(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        let update = update.clone();
        self.blocking(move |s| s.apply_device_update_now(&update))
            .await
    }

    async fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        let (device, name, room) = (device.clone(), name.cloned(), room.cloned());
        self.blocking(move |s| s.set_device_profile_now(&device, name.as_ref(), room.as_ref()))
            .await
    }

    async fn set_room_name(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        let (room, name) = (room.clone(), name.cloned());
        self.blocking(move |s| s.set_room_name_now(&room, name.as_ref()))
            .await
    }

    async fn apply_room_update(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        let update = update.clone();
        self.blocking(move |s| s.apply_room_update_now(&update))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;

    /// The change log as the previous version created it.
    const PREVIOUS_CHANGE_LOG: &str = "
        CREATE TABLE change_log (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            event_name TEXT NOT NULL,
            pk         TEXT NOT NULL,
            sk         TEXT NOT NULL,
            new_image  TEXT,
            old_image  TEXT,
            at_ms      INTEGER NOT NULL
        );
        CREATE TABLE checkpoints (consumer TEXT PRIMARY KEY, seq INTEGER NOT NULL);";

    fn reading(device: &str, room: Option<&str>, minute: i64, value: f64) -> Reading {
        let measurement = match room {
            Some(r) => Measurement::climate(RoomId::parse(r).unwrap(), value, 50.0),
            None => Measurement::power(value, 0.0, 100.0),
        };
        Reading {
            device_id: DeviceId::parse(device).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap(),
            measurement: measurement.unwrap(),
        }
    }

    fn item_text(r: &Reading) -> String {
        let item: Item =
            serde_dynamo::to_item(ReadingItem::stored(r, None, keys::DEFAULT_SHARDS)).unwrap();
        serde_json::to_string(&item).unwrap()
    }

    #[tokio::test]
    async fn writes_keep_the_registry_in_the_same_transaction() {
        let store = SqliteStore::in_memory().unwrap();
        let (a, b) = (reading("m-1", None, 2, 10.0), reading("m-1", None, 1, 9.0));
        let s = reading("s-1", Some("hall"), 1, 20.0);
        assert!(store
            .write_readings(&[a.clone(), b.clone(), s.clone()])
            .await
            .unwritten
            .is_empty());
        let registry = store.load_registry().await.unwrap();
        let meter = &registry.devices[&a.device_id];
        assert_eq!(
            (meter.first_seen, meter.last_seen),
            (Some(b.timestamp), Some(a.timestamp))
        );
        assert_eq!(meter.latest.as_ref(), Some(&a));
        let hall = &registry.rooms[&RoomId::parse("hall").unwrap()];
        assert_eq!(hall.devices, BTreeSet::from([s.device_id.clone()]));
        assert_eq!(registry.devices[&s.device_id].room, s.room().cloned());
        assert!(!has_table(&store.lock(), "change_log").unwrap());
    }

    /// WAL and the read connections: a write transaction in progress (here
    /// held open on another thread, and deleting everything) neither blocks a
    /// read nor shows it anything uncommitted. With one shared connection this
    /// read would wait for the writer and the timeout would fail the test.
    #[tokio::test]
    async fn reads_go_on_while_a_write_transaction_is_open() {
        let dir = std::env::temp_dir().join(format!("readers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.db");
        let _ = std::fs::remove_file(&path);
        let store = SqliteStore::open(&path).unwrap();
        let r = reading("m-1", None, 1, 10.0);
        assert!(store
            .write_readings(std::slice::from_ref(&r))
            .await
            .unwritten
            .is_empty());
        let (started, has_started) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let writer = {
            let store = store.clone();
            std::thread::spawn(move || {
                let conn = store.lock();
                conn.execute_batch("BEGIN IMMEDIATE; DELETE FROM items;")
                    .unwrap();
                started.send(()).unwrap();
                let _ = released.recv_timeout(std::time::Duration::from_secs(10));
                conn.execute_batch("ROLLBACK").unwrap();
            })
        };
        has_started.recv().unwrap();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            store.latest_reading(&r.device_id),
        )
        .await
        .expect("a read does not wait for the writer");
        assert_eq!(read.unwrap(), Some(r.clone()));
        let registry =
            tokio::time::timeout(std::time::Duration::from_secs(5), store.load_registry())
                .await
                .expect("nor does loading the registry")
                .unwrap();
        assert!(registry.devices.contains_key(&r.device_id));
        release.send(()).unwrap();
        writer.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A file written by the previous version, with changes its registry
    /// consumer had not applied when it stopped: opening it applies them and
    /// drops the log, losing nothing.
    #[tokio::test]
    async fn opening_a_database_with_a_change_log_applies_its_pending_changes() {
        let dir = std::env::temp_dir().join(format!("changelog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.db");
        let _ = std::fs::remove_file(&path);
        let applied = reading("m-1", None, 1, 10.0);
        let pending = reading("s-2", Some("kitchen"), 2, 19.5);
        let pending_later = reading("s-2", Some("kitchen"), 3, 19.75);
        {
            let store = SqliteStore::open(&path).unwrap();
            // The applied reading went through the registry already ...
            assert!(store
                .write_readings(std::slice::from_ref(&applied))
                .await
                .unwritten
                .is_empty());
            let conn = store.lock();
            conn.execute_batch(PREVIOUS_CHANGE_LOG).unwrap();
            // ... the pending ones are stored, but the registry has not seen them.
            for r in [&pending, &pending_later] {
                SqliteStore::put_item(
                    &conn,
                    keys::reading_pk(&r.device_id),
                    &keys::reading_sk(r.timestamp),
                    &serde_json::from_str(&item_text(r)).unwrap(),
                )
                .unwrap();
            }
            let log = |name: &str, r: &Reading, new: Option<String>| {
                conn.execute(
                    "INSERT INTO change_log (event_name, pk, sk, new_image, old_image, at_ms) VALUES (?1, ?2, ?3, ?4, NULL, 0)",
                    params![name, r.device_id.as_str(), keys::reading_sk(r.timestamp), new],
                )
                .unwrap();
            };
            log("INSERT", &applied, Some(item_text(&applied)));
            conn.execute("INSERT INTO checkpoints VALUES ('registry', 1)", [])
                .unwrap();
            log("INSERT", &pending, Some(item_text(&pending)));
            log("REMOVE", &applied, None);
            log("INSERT", &pending_later, Some(item_text(&pending_later)));
            let registry_item = conn
                .query_row(
                    "SELECT item FROM items WHERE pk = 'DEVICE' AND sk = 'm-1'",
                    [],
                    |r| r.get::<_, String>(0),
                )
                .unwrap();
            conn.execute(
                "INSERT INTO change_log (event_name, pk, sk, new_image, old_image, at_ms) VALUES ('MODIFY', 'DEVICE', 'm-1', ?1, NULL, 0)",
                params![registry_item],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let registry = store.load_registry().await.unwrap();
        let sensor = &registry.devices[&pending.device_id];
        assert_eq!(
            (sensor.first_seen, sensor.last_seen),
            (Some(pending.timestamp), Some(pending_later.timestamp))
        );
        assert_eq!(sensor.latest.as_ref(), Some(&pending_later));
        let kitchen = &registry.rooms[&RoomId::parse("kitchen").unwrap()];
        assert_eq!(kitchen.devices, BTreeSet::from([pending.device_id.clone()]));
        let meter = &registry.devices[&applied.device_id];
        assert_eq!(meter.last_seen, Some(applied.timestamp));
        let conn = store.lock();
        assert!(!has_table(&conn, "change_log").unwrap());
        assert!(!has_table(&conn, "checkpoints").unwrap());
        drop(conn);
        // Every reading is still there.
        for r in [&applied, &pending, &pending_later] {
            assert!(store
                .raw_item(
                    keys::reading_pk(&r.device_id),
                    &keys::reading_sk(r.timestamp)
                )
                .unwrap()
                .is_some());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
