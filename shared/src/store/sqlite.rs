//! Embedded adapter: SQLite (WAL) with the item and key layout of DESIGN §3.
//! Items are stored whole, as DynamoDB JSON, through the same codec as the
//! DynamoDB adapter; a `room` column and index stand in for the `room-time` GSI.
//! Every item change is appended to `change_log` in the same transaction: the
//! local equivalent of DynamoDB Streams, replayed to the registry handler by
//! [`SqliteStore::drain_change_log`] with a checkpoint that survives restarts.

use super::item::{DeviceItem, ReadingItem, RoomItem, SnapshotItem};
use super::{
    now_epoch_seconds, Deduped, DeviceRecord, DeviceUpdate, Order, Page, RangeRequest,
    RegistrySnapshot, Retention, RoomRecord, RoomUpdate, Store, StoreError, WriteReport, ZIndex,
    ZPage, ZRangeRequest,
};
use crate::keys::zorder::ZKey;
use crate::keys::{self, attr, DEVICE_PARTITION, ROOM_PARTITION};
use crate::model::{DeviceId, Name, Reading, RoomId, Timestamp};
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
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
CREATE TABLE IF NOT EXISTS change_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_name TEXT NOT NULL,   -- INSERT | MODIFY | REMOVE
    pk         TEXT NOT NULL,
    sk         TEXT NOT NULL,
    new_image  TEXT,
    old_image  TEXT,
    at_ms      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    consumer TEXT PRIMARY KEY,
    seq      INTEGER NOT NULL
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

/// The change-log consumer that maintains the registry.
const REGISTRY_CONSUMER: &str = "registry";
/// Records per change-log batch, as the Lambda event source mapping's BatchSize.
pub const CHANGE_BATCH: usize = 100;

#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
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
    async fn shard_readings(&self, shard: u32, request: &RangeRequest) -> Result<Page, StoreError> {
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
        let conn = Connection::open(path).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        // NORMAL is durable across application crashes in WAL mode; only a power
        // loss can drop the last transactions.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        Self::init(conn)
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

    /// Deletes readings past `expires_at`, as DynamoDB's TTL does, logging each
    /// as a REMOVE by the service (which the registry ignores). Returns how many.
    pub fn delete_expired(&self, now_epoch_seconds: i64) -> Result<usize, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db_err)?;
        let expired = item_rows(
            &tx,
            "SELECT pk, sk, item FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1",
            params![now_epoch_seconds],
        )?;
        for (pk, sk, old) in &expired {
            tx.execute(
                "DELETE FROM items WHERE pk = ?1 AND sk = ?2",
                params![pk, sk],
            )
            .map_err(db_err)?;
            tx.execute(
                "INSERT INTO change_log (event_name, pk, sk, new_image, old_image, at_ms) VALUES ('REMOVE', ?1, ?2, NULL, ?3, ?4)",
                params![pk, sk, old, Timestamp::now().millis()],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(expired.len())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Upserts an item and logs the change in the caller's transaction. An
    /// unchanged item logs nothing, as DynamoDB Streams writes no record then.
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
        // pays for reading the old image (which the change log needs).
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
        let old_text: Option<String> = if inserted {
            None
        } else {
            let old: String = conn
                .prepare_cached("SELECT item FROM items WHERE pk = ?1 AND sk = ?2")
                .and_then(|mut select| select.query_row(params![pk, sk], |r| r.get(0)))
                .map_err(db_err)?;
            let old_item: Item = serde_json::from_str(&old).map_err(corrupt)?;
            if &old_item == item {
                return Ok(()); // DynamoDB streams record no change either
            }
            conn.prepare_cached(
                "UPDATE items SET room = ?3, item = ?4, expires_at = ?5, z = ?6, shard = ?7, ats = ?8 WHERE pk = ?1 AND sk = ?2",
            )
            .and_then(|mut update| {
                update.execute(params![pk, sk, room, new_text, expires_at, z, shard, ats])
            })
            .map_err(db_err)?;
            Some(old)
        };
        conn.prepare_cached(
            "INSERT INTO change_log (event_name, pk, sk, new_image, old_image, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut log| {
            log.execute(params![
                if old_text.is_some() { "MODIFY" } else { "INSERT" },
                pk,
                sk,
                new_text,
                old_text,
                Timestamp::now().millis()
            ])
        })
        .map_err(db_err)?;
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
        let conn = self.lock();
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
        let mut item = Self::get_item(&tx, pk, sk)?.unwrap_or_else(|| {
            Item::from(std::collections::HashMap::from([
                (attr::PK.to_owned(), AttributeValue::S(pk.to_owned())),
                (attr::SK.to_owned(), AttributeValue::S(sk.to_owned())),
            ]))
        });
        change(&mut item)?;
        Self::put_item(&tx, pk, sk, &item)?;
        tx.commit().map_err(db_err)
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

    /// Feeds the next batch of the change log to the registry handler (the same
    /// code as the `registry` Lambda) and advances the checkpoint past what it
    /// applied. Returns how many changes were consumed.
    pub async fn drain_change_log(&self) -> Result<usize, StoreError> {
        let (records, last_seq) = self.next_changes(CHANGE_BATCH)?;
        if records.is_empty() {
            return Ok(0);
        }
        let count = records.len();
        let event = {
            let mut e = Event::default();
            e.records = records;
            e
        };
        let response = crate::stream::handle(self, event).await;
        // Lambda retries from the failed record; so does this consumer, on its next call.
        let done = match response
            .batch_item_failures
            .first()
            .and_then(|f| f.item_identifier.as_deref())
        {
            // An identifier that does not parse must not mark the batch done: keep the
            // checkpoint where it is (the upsert below keeps the larger value).
            Some(seq) => seq.parse::<i64>().map(|s| s - 1).unwrap_or(0),
            None => last_seq,
        };
        {
            let conn = self.lock();
            conn.prepare_cached(
                "INSERT INTO checkpoints (consumer, seq) VALUES (?1, ?2)
                 ON CONFLICT (consumer) DO UPDATE SET seq = max(seq, excluded.seq)",
            )
            .and_then(|mut s| s.execute(params![REGISTRY_CONSUMER, done]))
            .map_err(db_err)?;
            // Consumed changes are not kept (DynamoDB keeps a stream for 24 h; here
            // the log would otherwise double the database). AUTOINCREMENT keeps
            // sequence numbers rising after the delete.
            conn.prepare_cached("DELETE FROM change_log WHERE seq <= ?1")
                .and_then(|mut s| s.execute(params![done]))
                .map_err(db_err)?;
        }
        if !response.batch_item_failures.is_empty() {
            return Err(StoreError::Unavailable(format!(
                "registry update failed after change {done}"
            )));
        }
        Ok(count)
    }

    /// Skips one change the registry handler cannot apply (the equivalent of the
    /// on-failure destination), so that it does not block the log forever.
    pub fn skip_change(&self) -> Result<Option<i64>, StoreError> {
        let conn = self.lock();
        let next: Option<i64> = conn
            .query_row(
                "SELECT min(seq) FROM change_log WHERE seq > coalesce((SELECT seq FROM checkpoints WHERE consumer = ?1), 0)",
                params![REGISTRY_CONSUMER],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        if let Some(seq) = next {
            conn.execute(
                "INSERT INTO checkpoints (consumer, seq) VALUES (?1, ?2)
                 ON CONFLICT (consumer) DO UPDATE SET seq = excluded.seq",
                params![REGISTRY_CONSUMER, seq],
            )
            .map_err(db_err)?;
        }
        Ok(next)
    }

    /// Changes after the checkpoint, shaped as DynamoDB Streams records.
    fn next_changes(&self, max: usize) -> Result<(Vec<EventRecord>, i64), StoreError> {
        // The lock covers the read only; shaping the records (JSON work) happens
        // after it is released, so writers are not held up by it.
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, event_name, pk, sk, new_image, old_image, at_ms FROM change_log
                 WHERE seq > coalesce((SELECT seq FROM checkpoints WHERE consumer = ?1), 0)
                 ORDER BY seq LIMIT ?2",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![REGISTRY_CONSUMER, max as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        drop(stmt);
        drop(conn);
        let mut last = 0;
        let mut records = Vec::with_capacity(rows.len());
        for (seq, name, pk, sk, new_image, old_image, at_ms) in rows {
            last = seq;
            let image = |t: Option<String>| -> serde_json::Value {
                t.and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or(serde_json::Value::Null)
            };
            let mut dynamodb = serde_json::json!({
                "ApproximateCreationDateTime": at_ms / 1000,
                "Keys": {"pk": {"S": pk}, "sk": {"S": sk}},
                "SequenceNumber": seq.to_string(),
                "SizeBytes": 0,
                "StreamViewType": "NEW_AND_OLD_IMAGES"
            });
            let (new_image, old_image) = (image(new_image), image(old_image));
            if !new_image.is_null() {
                dynamodb["NewImage"] = new_image;
            }
            if !old_image.is_null() {
                dynamodb["OldImage"] = old_image;
            }
            let record = serde_json::json!({
                "eventID": seq.to_string(),
                "eventName": name,
                "eventSource": "local:sqlite",
                "awsRegion": "local",
                "dynamodb": dynamodb
            });
            records.push(serde_json::from_value(record).map_err(corrupt)?);
        }
        Ok((records, last))
    }

    /// One item as stored (DynamoDB JSON), for inspection.
    pub fn raw_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        Self::get_item(&self.lock(), pk, sk)
    }

    /// Writes one whole item, as an import or a repair would; logged like any change.
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

    /// Changes not yet consumed by the registry (for tests and status).
    pub fn pending_changes(&self) -> Result<i64, StoreError> {
        self.lock()
            .query_row(
                "SELECT count(*) FROM change_log WHERE seq > coalesce((SELECT seq FROM checkpoints WHERE consumer = ?1), 0)",
                params![REGISTRY_CONSUMER],
                |r| r.get(0),
            )
            .map_err(db_err)
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

impl RegistryMerge<'_> {
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

impl Store for SqliteStore {
    async fn write_readings(&self, readings: &[Reading]) -> WriteReport {
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

    async fn device_readings(
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

    async fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
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
        let conn = self.lock();
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

    async fn all_readings(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        let pages = futures_util::future::try_join_all(
            (1..=self.shards).map(|shard| self.shard_readings(shard, request)),
        )
        .await?;
        Ok(super::merge_pages(pages, request))
    }

    async fn z_range(
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
            let conn = self.lock();
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

    async fn latest_reading(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        let (lo, hi) = (
            keys::reading_sk(Timestamp::MIN),
            keys::reading_sk(Timestamp::MAX),
        );
        let text: Option<String> = self
            .lock()
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

    async fn load_registry(&self) -> Result<RegistrySnapshot, StoreError> {
        let conn = self.lock();
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

    async fn device(&self, device: &DeviceId) -> Result<Option<DeviceRecord>, StoreError> {
        let item = Self::get_item(&self.lock(), DEVICE_PARTITION, device.as_str())?;
        item.map(|i| {
            serde_dynamo::from_item::<_, DeviceItem>(i)
                .map_err(corrupt)?
                .into_record()
                .map_err(StoreError::Corrupt)
        })
        .transpose()
    }

    async fn room(&self, room: &RoomId) -> Result<Option<RoomRecord>, StoreError> {
        let item = Self::get_item(&self.lock(), ROOM_PARTITION, room.as_str())?;
        item.map(|i| {
            serde_dynamo::from_item::<_, RoomItem>(i)
                .map_err(corrupt)?
                .into_record()
                .map_err(StoreError::Corrupt)
        })
        .transpose()
    }

    async fn apply_device_update(&self, update: &DeviceUpdate) -> Result<(), StoreError> {
        self.registry_write(
            DEVICE_PARTITION,
            update.device_id.as_str(),
            RegistryMerge {
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: super::device_sets(update),
                room: update.room.as_ref(),
            },
        )
    }

    async fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        self.set_user_attributes(DEVICE_PARTITION, device.as_str(), name, room)
    }

    async fn set_room_name(&self, room: &RoomId, name: Option<&Name>) -> Result<(), StoreError> {
        self.set_user_attributes(ROOM_PARTITION, room.as_str(), name, None)
    }

    async fn apply_room_update(&self, update: &RoomUpdate) -> Result<(), StoreError> {
        self.registry_write(
            ROOM_PARTITION,
            update.room_id.as_str(),
            RegistryMerge {
                first_seen: update.first_seen,
                latest: &update.latest,
                sets: vec![(
                    "devices",
                    update.devices.iter().map(|d| d.to_string()).collect(),
                )],
                room: None,
            },
        )
    }
}
