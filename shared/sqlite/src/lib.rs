//! The embedded store: SQLite, in a schema made for time series
//! (docs/embedded-store.md has the plan and the measurements behind it).
//!
//! - `schema`: the tables, from the quantity catalogue, and how values are stored.
//! - `names`: device and room ids as integers.
//! - `write`: the write path, which sends each reading to its day: hot rows
//!   while the day is open, its block once it is closed.
//! - `rows`: hot readings, as rows of the family tables.
//! - `blocks`: sealed days, one compressed block per device and day.
//! - `series`: a device's readings as every read sees them, both merged.
//! - `rollups`: day rollups as rows; hours computed from a day's block when
//!   read, and kept between reads by `hour_cache`.
//! - `sealer`: moves closed days from rows into blocks, in the background.
//! - `registry`: the `devices` and `rooms` records, kept in the write
//!   transaction by `domain::registry::plan`, the planner the stream Lambda uses.
//! - `upgrade`: files from the version that kept DynamoDB items, migrated in place.
//!
//! One writer connection; read connections of their own (WAL), so reads never
//! wait for a write; every call runs on tokio's blocking pool.

mod alerts;
mod backup;
mod block_key;
mod block_spans;
mod block_tail;
mod blocks;
mod day_merge;
mod held_files;
mod hour_cache;
mod names;
mod periodic;
mod quiet_wal;
mod reading_store;
mod registry;
mod registry_store;
mod rollup_spans;
mod rollup_store;
mod upkeep;
mod wal_index;
pub use backup::{
    backup, backup_blocking, backup_with_limit, partial_name, restore, BackupReport, CopyWay,
    Restored, IN_MEMORY_LIMIT,
};
pub use rollup_spans::TxSpans;
mod rollups;
mod rows;
mod schema;
mod sealer;
mod series;
mod upgrade;
mod write;

mod checkpointer;
mod maintenance;
mod reads;
mod rollup_transaction;
mod writing;
use checkpointer::{checkpointer, WAL_KEPT_BYTES, WRITER_AUTOCHECKPOINT_PAGES};
use maintenance::count_readings;
use reads::{meter_index_read, meter_page, Index};
use storage::format::billing;
use storage::{
    metering, now_epoch_seconds, Capabilities, RangeRequest, Retention, Store, StoreError,
};
use writing::{write_readings_with, write_with};

use domain::model::{DeviceId, Span, TimeRange};
use rows::Bounds;
use rusqlite::config::DbConfig;
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use write::Writer;

/// Read connections of a database file. WAL lets them read while the one
/// writer writes; an in-memory database has none (its writer reads too).
const READERS: usize = 4;

/// The most rollups a read runs on its own task (`metered_rollups`): a
/// year of a sensor's days, or a month of its hours computed from blocks,
/// take about a millisecond.
const INLINE_ROLLUPS: usize = 800;

#[derive(Clone)]
pub struct SqliteStore {
    /// The one writer; also the reader of an in-memory database.
    writer: Arc<Mutex<Writer>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    retention: Option<Retention>,
    /// Whether aggregates read the rollups (always kept): off only to
    /// compare with the readings' answers (tests, benchmarks).
    rollup_reads: bool,
    /// The hours computed from sealed days, kept between reads.
    hours: Arc<hour_cache::HourCache>,
    /// A file's sealer, which stops when the last clone goes; before the
    /// checkpointer, so that its hold on the writer is gone first.
    _sealer: Option<Arc<periodic::Periodic>>,
    /// A file's checkpointer, which stops when the last clone goes. Last in
    /// the struct, so dropped after the other connections are closed: its
    /// closing checkpoint then empties the WAL.
    _checkpointer: Option<Arc<periodic::Periodic>>,
    /// A shared lock on the file's `.lock` beside it, held while the store
    /// is open: `restore` takes it exclusively, so it never replaces a
    /// file a server has open (`backup::open_lock`).
    _open: Option<Arc<std::fs::File>>,
}

/// The page size of a new file.
const PAGE_BYTES: i64 = 2048;

/// Registers the SQL functions that the schema's indexes use (`zaddr`) on
/// a connection opened outside the store: a tool or test that writes rows
/// into a file as an earlier version did.
pub fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    schema::register_zaddr(conn)
}

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite: {e}"))
}

/// A connection as every one of ours is set up.
fn prepared(conn: Connection) -> Result<Connection, StoreError> {
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(db_err)?;
    schema::register_zaddr(&conn).map_err(db_err)?;
    // Every statement the store runs stays prepared (rusqlite keeps 16).
    conn.set_prepared_statement_cache_capacity(64);
    // Plans never depend on bound values. Without this, SQLite prepares a
    // statement with `device = ?` again whenever the bound id changes to or
    // from 0 or 1 (its heuristic for small integers): with device 1 in a
    // batch, every batch, 4 % of ingest's CPU.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(db_err)?;
    Ok(conn)
}

impl SqliteStore {
    /// What `read` finds of a device's rollups (nothing for a device the
    /// store has never seen), given its id and, where an answer meters its
    /// reads, its id's length to size them by; the DynamoDB read units of
    /// the bytes `read` reports are added to the answer's.
    ///
    /// A read of at most `INLINE_ROLLUPS` rollups of `span` (a year of
    /// days, a month of hours: about a millisecond, as a page of readings)
    /// runs on its task; a longer one on the blocking pool. The hand-off to
    /// the pool and back, two thread wake-ups, was a tenth of a year of
    /// daily stats' server time (docs/BENCHMARKS.md, issue 44).
    async fn metered_rollups<T: Send + 'static>(
        &self,
        device: &DeviceId,
        (span, range): (Span, &TimeRange),
        read: impl FnOnce(
                &Connection,
                i64,
                &DeviceId,
                Option<usize>,
            ) -> Result<(Vec<T>, usize), StoreError>
            + Send
            + 'static,
    ) -> Result<Vec<T>, StoreError> {
        // Sized for `read_units` only where an answer meters them.
        let sized = metering::metering().then_some(device.as_str().len());
        let device = device.clone();
        let read_device = move |conn: &Connection| {
            let Some(id) = names::find(conn, names::DEVICE, device.as_str())? else {
                return Ok((Vec::new(), 0));
            };
            read(conn, id, &device, sized)
        };
        let (found, bytes) = if rollups::spans_in(span, range) <= INLINE_ROLLUPS {
            self.read(read_device)?
        } else {
            self.blocking(move |s| s.read(read_device)).await?
        };
        if !found.is_empty() {
            metering::add_read_units(billing::read_units(bytes));
        }
        Ok(found)
    }

    /// Opens (creating if needed) a database file in WAL mode. A file from
    /// an earlier version is migrated in place first (`upgrade`).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let open = backup::open_lock(path.as_ref())?;
        let mut conn = prepared(Connection::open(path.as_ref()).map_err(db_err)?)?;
        // A new file's pages: 2 KB holds three blocks of a day of a room
        // sensor at one reading a minute (codec version 6, 633 bytes each),
        // as 4 KB held six, and the twenty tables and indexes that are all
        // but empty once every day is sealed cost a page each, half of 4 KB's:
        // every noise model's file but the noisiest is smaller, 3 to 17 %,
        // for the same instructions (docs/BENCHMARKS.md). Set before
        // anything is written; a file that exists keeps its own.
        conn.pragma_update(None, "page_size", PAGE_BYTES)
            .map_err(db_err)?;
        // A new file gives the pages that sealing frees (rows moved into
        // blocks, segments merged) back to the file system after each
        // sealer pass (`sealer::release_free_pages`); set, like the page
        // size, before anything is written, and a no-op on a file that exists.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        // NORMAL is durable across application crashes in WAL mode; only a power
        // loss can drop the last transactions.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "wal_autocheckpoint", WRITER_AUTOCHECKPOINT_PAGES)
            .map_err(db_err)?;
        conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)
            .map_err(db_err)?;
        upgrade::to_current(&mut conn)?;
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
                Ok(Mutex::new(prepared(reader)?))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        store.readers = Arc::new(readers);
        store._sealer = Some(Arc::new(sealer::start(store.writer.clone())?));
        store._checkpointer = Some(Arc::new(checkpointer(path.as_ref())?));
        store._open = Some(Arc::new(open));
        Ok(store)
    }

    /// A store that lives only as long as the process.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(prepared(Connection::open_in_memory().map_err(db_err)?)?)
    }

    fn init(conn: Connection) -> Result<Self, StoreError> {
        conn.execute_batch(&schema::create()).map_err(db_err)?;
        conn.pragma_update(None, "user_version", schema::VERSION)
            .map_err(db_err)?;
        Ok(Self {
            writer: Arc::new(Mutex::new(Writer::new(conn))),
            readers: Arc::new(Vec::new()),
            retention: None,
            rollup_reads: true,
            hours: Arc::new(hour_cache::HourCache::new(hour_cache::DEFAULT_CAPACITY)),
            _sealer: None,
            _checkpointer: None,
            _open: None,
        })
    }

    /// Readings older than the retention are hidden from reads and deleted by
    /// [`Self::delete_expired`]. A reading expires at its time plus the
    /// retention in force, so changing `RETENTION_DAYS` applies to every
    /// reading already stored, as an InfluxDB retention policy does.
    /// Aggregates from the readings even where rollups would answer (the
    /// rollups are kept all the same): the baseline that rollup answers are
    /// compared with in tests and benchmarks.
    pub fn without_rollup_reads(mut self) -> Self {
        self.rollup_reads = false;
        self
    }

    pub fn with_retention(mut self, retention: Option<Retention>) -> Self {
        self.retention = retention;
        self
    }

    /// The first millisecond still kept now, under the retention.
    fn keep_from(&self) -> Option<i64> {
        self.retention
            .map(|r| r.first_kept_millis(now_epoch_seconds()))
    }

    /// `range` of a request, without what the retention hides.
    fn bounds(&self, request: &RangeRequest) -> Bounds {
        let lo = request.range.from().millis();
        Bounds {
            lo: self.keep_from().map_or(lo, |k| lo.max(k)),
            hi: request.range.last().millis(),
        }
    }

    /// Deletes readings past the retention, as DynamoDB's TTL does. Returns
    /// how many readings (not rows) went.
    pub async fn delete_expired(&self, now_epoch_seconds: i64) -> Result<usize, StoreError> {
        let Some(retention) = self.retention else {
            return Ok(0);
        };
        let before = retention.first_kept_millis(now_epoch_seconds);
        // The registry is not touched, as the stream handler ignores TTL deletions.
        self.blocking(move |s| {
            let mut writer = s.lock();
            let tx = writer.conn.transaction().map_err(db_err)?;
            let union: Vec<String> = schema::families()
                .iter()
                .map(|f| format!("SELECT device, ts FROM {} WHERE ts < ?1", f.table))
                .collect();
            let readings: i64 = tx
                .query_row(
                    &format!("SELECT count(*) FROM ({})", union.join(" UNION ")),
                    [before],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            let mut readings = readings as usize;
            for (device, device_id) in names::devices(&tx)? {
                for f in schema::families() {
                    tx.execute(
                        &format!("DELETE FROM {} WHERE device = ?1 AND ts < ?2", f.table),
                        rusqlite::params![device, before],
                    )
                    .map_err(db_err)?;
                }
                readings += day_merge::delete_before(&tx, device, &device_id, before)?;
            }
            tx.commit().map_err(db_err)?;
            // The blocks it cut are no longer what the writer wrote last.
            writer.forget();
            Ok(readings)
        })
        .await
    }

    /// The writer.
    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `read` on a read connection: a free one of the pool, else any (it
    /// waits its turn), or the writer's for an in-memory database.
    fn read<T>(&self, read: impl FnOnce(&Connection) -> T) -> T {
        if self.readers.is_empty() {
            return read(&self.lock().conn);
        }
        for reader in self.readers.iter() {
            match reader.try_lock() {
                Ok(guard) => return read(&guard),
                Err(std::sync::TryLockError::Poisoned(p)) => return read(&p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        let guard = self.readers[fastrand::usize(..self.readers.len())]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        read(&guard)
    }

    /// Runs `op` on tokio's blocking pool: for sweeps of the whole file
    /// (retention, sealing, counts, rebuilds, checkpoints), which must not
    /// hold up a runtime thread. A batch (`writing`) or a bounded read runs
    /// on its task instead.
    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&SqliteStore) -> T + Send + 'static,
    ) -> T {
        let store = self.clone();
        match tokio::task::spawn_blocking(move || op(&store)).await {
            Ok(value) => value,
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            // Cancelled before it ran: the runtime is shutting down (a stop
            // while a sweep waited for the pool), and this task goes with
            // it. It has nothing to return, and must not panic: a panic
            // here aborted the process at every such stop.
            Err(_) => std::future::pending().await,
        }
    }

    /// Runs `op` with the writer on the calling task when the writer is
    /// free, else on the blocking pool, where waiting for it (a sweep or a
    /// seal holds it) takes no runtime thread. A batch (at most 5000
    /// readings) takes about a millisecond, like a request's other work;
    /// the hand-off to the pool and back, two thread wake-ups, was a tenth of
    /// a batch's server CPU (docs/BENCHMARKS.md, "Sixth session").
    async fn writing<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Writer) -> T + Send + 'static,
    ) -> T {
        // Decided before any await: the guard must not live across one.
        let op = match self.writer.try_lock() {
            Ok(mut writer) => return op(&mut writer),
            Err(std::sync::TryLockError::Poisoned(p)) => return op(&mut p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => op,
        };
        self.blocking(move |s| op(&mut s.lock())).await
    }

    /// Runs `change` in one write transaction; a failure rolls it back whole.
    fn write<T>(
        &self,
        change: impl FnOnce(&Connection, &mut names::Names, &mut write::Cache) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        write_with(&mut self.lock(), change)
    }
}

impl Store for SqliteStore {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            registry_follows_writes: true,
            answers_from_rollups: self.rollup_reads,
            ..Capabilities::default()
        }
    }
}

#[cfg(test)]
mod day_merge_tests;
#[cfg(test)]
mod sealed_tests;
#[cfg(test)]
mod tests;
