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

use storage::format::billing;
use storage::{
    metering, now_epoch_seconds, Capabilities, Deduped, Order, Page, RangeRequest, Retention,
    SealedPage, Store, StoreError, WriteReport, ZIndex, ZPage, ZRangeRequest,
};

use domain::model::{ClimateBox, DeviceId, Reading, RoomId, Span, TimeRange, Timestamp};
use rows::Bounds;
use rusqlite::config::DbConfig;
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use storage::keys::zorder::ZKey;
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

/// How often the checkpointer copies the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// WAL pages after which the committing writer checkpoints itself (SQLite's
/// default is 1000). The checkpointer thread copies nearly everything first;
/// the writer's own checkpoint is what lets the WAL start over while writes
/// keep coming, and a rarer one takes its fsyncs off most commits. 32 MB
/// of WAL in a new file's pages (a file with 4 KB pages: 64 MB).
const WRITER_AUTOCHECKPOINT_PAGES: i64 = (32 << 20) / PAGE_BYTES;
/// What an emptied WAL file is cut back to, so that a burst does not leave
/// a large file behind.
const WAL_KEPT_BYTES: i64 = 8 << 20;
/// How long the WAL stays unchanged, all of it copied into the file, before
/// the checkpointer cuts it to nothing: after a burst (an import, a
/// catch-up) the WAL was up to 32 MB beside a household's 1 MB file until
/// the next write, and 8 MB after it.
const QUIET_BEFORE_TRUNCATE: std::time::Duration = if cfg!(test) {
    std::time::Duration::from_millis(300)
} else {
    std::time::Duration::from_secs(5)
};

/// Copies the WAL into the database file on a thread of its own, on the other
/// core (PASSIVE: it never blocks the writer or a reader). The copy and its
/// fsync were a tenth of every ingest request's time when the committing
/// writer did all of it. SQLite's own automatic checkpoint stays on: it then
/// finds most frames copied already, and it is what lets the WAL start over
/// instead of growing while writes keep coming. Dropped, it stops and its
/// connection closes before the store's last one (which then empties and
/// removes the WAL).
///
/// Once the WAL has stayed the same for `QUIET_BEFORE_TRUNCATE`, every frame
/// in the file, it is cut to nothing (`quiet_wal`).
fn checkpointer(path: &Path) -> Result<periodic::Periodic, StoreError> {
    let conn = prepared(Connection::open(path).map_err(db_err)?)?;
    // The cut is tried, never waited for: it must not hold up the writer
    // behind a reader, and the next quiet period tries again.
    conn.busy_timeout(std::time::Duration::ZERO)
        .map_err(db_err)?;
    let mut quiet = quiet_wal::QuietWal::new(QUIET_BEFORE_TRUNCATE);
    periodic::Periodic::start(
        "sqlite-checkpoint",
        CHECKPOINT_EVERY,
        conn,
        move |conn| {
            let frames = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            });
            match frames {
                Ok((frames, copied)) => {
                    if quiet.is_quiet(frames, copied, std::time::Instant::now()) {
                        if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                            tracing::debug!(error = %e, "cutting the quiet WAL waits for its next quiet period");
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries");
                }
            }
        },
        // The store is closing: leave the file whole and the WAL empty,
        // waiting for the last readers if need be.
        |conn| {
            let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
            if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                tracing::warn!(error = %e, "closing WAL checkpoint failed; the next open replays the WAL");
            }
        },
    )
}

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
            Err(err) => std::panic::resume_unwind(err.into_panic()),
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

/// Runs `change` in one write transaction of `writer`; a failure rolls it
/// back whole (and the writer forgets what it cached).
fn write_with<T>(
    writer: &mut Writer,
    change: impl FnOnce(&Connection, &mut names::Names, &mut write::Cache) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let result = (|| {
        let (conn, names, cache) = writer.parts();
        let tx = conn.transaction().map_err(db_err)?;
        let value = change(&tx, names, cache)?;
        tx.commit().map_err(db_err)?;
        Ok(value)
    })();
    if result.is_err() {
        writer.forget();
    }
    result
}

impl SqliteStore {
    /// Copies everything in the WAL into the database file and empties the WAL,
    /// so that the file alone holds every committed write (a backup, a fixture).
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        self.blocking(|s| {
            s.lock()
                .conn
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .map_err(db_err)
        })
        .await
    }

    /// Lets the file grow by no page more (`full`: as a full disk does, the
    /// next page a write needs fails with `SQLITE_FULL`), or lifts that: for
    /// tests of what a full disk answers.
    pub fn cap_file_for_tests(&self, full: bool) -> Result<(), StoreError> {
        let writer = self.lock();
        let pages: i64 = if full {
            writer
                .conn
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .map_err(db_err)?
        } else {
            1_073_741_823
        };
        writer
            .conn
            .pragma_update(None, "max_page_count", pages)
            .map_err(db_err)
    }

    /// How many readings are stored, expired or not (distinct device and time
    /// across the family tables, and the counts of the blocks): for tests,
    /// and for checking a copy.
    pub async fn stored_readings(&self) -> Result<u64, StoreError> {
        self.blocking(|s| s.read(count_readings)).await
    }

    /// Seals every day that is closed at `now_ms` (moves its hot rows into
    /// its block), a device's day to a transaction, reporting (done, total)
    /// as it goes. The background sealer does the same every minute; this
    /// is for the first open of a file from an earlier version (with a
    /// progress bar), and for tests. `progress` may stop it between two
    /// days. Returns the days sealed.
    pub async fn seal_closed_days(
        &self,
        now_ms: i64,
        progress: impl Fn(usize, usize) -> std::ops::ControlFlow<()> + Send + 'static,
    ) -> Result<usize, StoreError> {
        let writer = self.writer.clone();
        self.blocking(move |_| sealer::seal_all(&writer, now_ms, Some(&progress)))
            .await
    }

    /// The query plan SQLite chooses for one read of the Z-order index (for the test
    /// that holds box search to its index).
    #[cfg(test)]
    fn z_query_plan(&self) -> Result<String, StoreError> {
        self.read(rows::z_query_plan)
    }
}

/// Writes readings as at `now_ms` (which tells the closed days, written into
/// blocks, from the open ones, rows), with their rollups and registry, in
/// one transaction of `writer`.
fn write_readings_with(writer: &mut Writer, readings: &[Reading], now_ms: i64) -> WriteReport {
    let deduped = Deduped::new(readings);
    let result = write_with(writer, |tx, names, cache| {
        let touched = write::put_readings(
            tx,
            names,
            cache,
            deduped.winners.iter().map(|&i| &readings[i]),
            now_ms,
        )?;
        // The rollups, in the same transaction, per device in time order:
        // the rollups use case, whose primitives here answer at once.
        for (id, batch) in touched {
            let mut newest = cache.spans.remove(&(id, Span::Day));
            let mut spans = rollup_spans::TxSpans {
                tx,
                device: id,
                device_id: &batch.readings[0].device_id,
                now_ms,
            };
            domain::rollup_upkeep::at_once(domain::rollup_upkeep::keep(
                &mut spans,
                &mut newest,
                &batch.readings,
                batch.appended,
            ))?;
            if let Some(newest) = newest {
                cache.spans.insert((id, Span::Day), newest);
            }
        }
        // The registry, in the same transaction: what the stream Lambda
        // would do with these records, planned by the same code.
        let plan = domain::registry::plan(deduped.winners.iter().map(|&i| (i, &readings[i])));
        registry::apply_plan(tx, names, &mut cache.registry, &plan)
    });
    match result {
        Ok(()) => deduped.report(&[]),
        Err(err) => {
            // One transaction: all or nothing, so every reading is unwritten.
            tracing::error!(error = %err, "sqlite write failed");
            deduped.report(&(0..deduped.winners.len()).collect::<Vec<_>>())
        }
    }
}

/// How many readings a file holds (`SqliteStore::stored_readings`).
fn count_readings(conn: &Connection) -> Result<u64, StoreError> {
    let union: Vec<String> = schema::families()
        .iter()
        .map(|f| format!("SELECT device, ts FROM {}", f.table))
        .collect();
    let hot = conn
        .query_row(
            &format!("SELECT count(*) FROM ({})", union.join(" UNION ")),
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(db_err)? as u64;
    Ok(hot + blocks::sealed_readings(conn)?)
}

impl SqliteStore {
    /// Runs `work` over a device's rollup primitives in one write
    /// transaction (the rollups use case's `rebuild`); `None` for a device
    /// without readings.
    pub async fn in_rollup_transaction<T: Send + 'static>(
        &self,
        device: &DeviceId,
        work: impl FnOnce(&mut rollup_spans::TxSpans<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        let device = device.clone();
        self.blocking(move |s| {
            s.write(|tx, _, cache| {
                let Some(id) = names::find(tx, names::DEVICE, device.as_str())? else {
                    return Ok(None);
                };
                // What an append would continue may change.
                cache.spans.retain(|(d, _), _| *d != id);
                let mut spans = rollup_spans::TxSpans {
                    tx,
                    device: id,
                    device_id: &device,
                    now_ms: Timestamp::now().millis(),
                };
                work(&mut spans).map(Some)
            })
        })
        .await
    }
}

/// The operations on the calling thread. The `Store` impl below runs the
/// sweeps on tokio's blocking pool, and the bounded ones (a page of at most
/// 10,000 readings, a record, a latest value; a batch, through `writing`)
/// directly on the request's task: the hand-off to the pool and back was a
/// third of `/latest`'s server CPU and a sixth of a raw day's. A read waits
/// for a connection only when all are busy, each with a read as bounded.
impl SqliteStore {
    /// Writes readings as at `now_ms`, which tells the closed days (written
    /// into blocks) from the open ones (rows).
    #[cfg(test)]
    fn write_readings_at(&self, readings: &[Reading], now_ms: i64) -> WriteReport {
        write_readings_with(&mut self.lock(), readings, now_ms)
    }

    fn device_readings_now(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let bounds = self
            .bounds(request)
            .after(request.order, request.after.as_ref(), device);
        self.read(|conn| {
            let Some(id) = names::find(conn, names::DEVICE, device.as_str())? else {
                return Ok(Page::default());
            };
            let mut readings = series::device_readings(
                conn,
                id,
                device,
                bounds,
                request.order,
                request.limit + 1,
            )?;
            let more = readings.len() > request.limit;
            readings.truncate(request.limit);
            Ok(Page::of(readings, more))
        })
    }

    /// A room's readings: the room's devices (from the registry) read by
    /// their keys, keeping the rows written in the room; no room index.
    fn room_readings_now(&self, room: &RoomId, request: &RangeRequest) -> Result<Page, StoreError> {
        self.read(|conn| {
            let Some((room_id, devices)) = registry::room_devices(conn, room)? else {
                return Ok(Page::default());
            };
            self.merged(&devices, request, |(id, device), bounds, n| {
                series::room_readings(
                    conn,
                    (room_id, room),
                    (*id, device),
                    bounds,
                    request.order,
                    n,
                )
            })
        })
    }

    /// Every device's readings: their key ranges merged (one seek per device
    /// per page; a household has tens of devices).
    fn all_readings_now(&self, request: &RangeRequest) -> Result<Page, StoreError> {
        self.read(|conn| {
            let devices = names::devices(conn)?;
            self.merged(&devices, request, |(id, device), bounds, n| {
                series::device_readings(conn, *id, device, bounds, request.order, n)
            })
        })
    }

    /// One page of several devices' readings in (time, device) order: each
    /// device's first `limit + 1` after the request's position, merged.
    fn merged(
        &self,
        devices: &[(i64, DeviceId)],
        request: &RangeRequest,
        read: impl Fn(&(i64, DeviceId), Bounds, usize) -> Result<Vec<Reading>, StoreError>,
    ) -> Result<Page, StoreError> {
        let bounds = self.bounds(request);
        let pages = devices
            .iter()
            .map(|device| {
                let bounds = bounds.after(request.order, request.after.as_ref(), &device.1);
                read(device, bounds, request.limit + 1).map(|readings| Page {
                    readings,
                    next: None,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(storage::merge_pages(pages, request))
    }

    fn z_range_now(&self, index: &Index, request: &ZRangeRequest<'_>) -> Result<ZPage, StoreError> {
        let keep_from = self.keep_from();
        self.read(|conn| {
            let Some((room, devices)) = index.devices(conn)? else {
                return Ok(ZPage::default());
            };
            series::z_range(conn, &devices, room, request, keep_from)
        })
    }

    fn sealed_in_box_now(
        &self,
        index: &Index,
        inside: &ClimateBox,
        after: Option<&ZKey>,
        limit: usize,
    ) -> Result<SealedPage, StoreError> {
        let keep_from = self.keep_from();
        let room = match index {
            Index::Room(room) => Some(room),
            Index::Device(_) => None,
        };
        self.read(|conn| {
            let Some((_, devices)) = index.devices(conn)? else {
                return Ok(SealedPage::default());
            };
            series::sealed_in_box(conn, &devices, room, inside, after, limit, keep_from)
        })
    }

    fn latest_reading_now(&self, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
        let bounds = Bounds {
            lo: self
                .keep_from()
                .unwrap_or(domain::model::Timestamp::MIN.millis()),
            hi: domain::model::Timestamp::MAX.millis(),
        };
        self.read(|conn| {
            let Some(id) = names::find(conn, names::DEVICE, device.as_str())? else {
                return Ok(None);
            };
            Ok(
                series::device_readings(conn, id, device, bounds, Order::Desc, 1)?
                    .into_iter()
                    .next(),
            )
        })
    }
}

/// What reading a page would cost on DynamoDB (`storage::format::billing`): the
/// embedded store meters by the same item sizes.
fn meter_page(page: &Page) {
    if !metering::metering() {
        return;
    }
    let bytes = billing::readings_size(&page.readings);
    metering::add_read_units(billing::read_units(bytes));
}

/// What reading `read` items of an index (or readings of decoded blocks)
/// would cost on DynamoDB, at the mean size of those returned.
fn meter_index_read(items: &[(ZKey, Reading)], read: usize) {
    if !metering::metering() || read == 0 {
        return;
    }
    let bytes = billing::readings_size(items.iter().map(|(_, r)| r));
    let mean = bytes / items.len().max(1);
    metering::add_read_units(billing::read_units(bytes.max(mean * read)));
}

/// A room's id (none for a device's index) and the devices it holds.
type IndexDevices = (Option<i64>, Vec<rows::DeviceEntry>);

/// A `ZIndex` owned, to cross onto the blocking pool.
enum Index {
    Room(RoomId),
    Device(DeviceId),
}

impl Index {
    fn of(index: ZIndex<'_>) -> Self {
        match index {
            ZIndex::Room(r) => Index::Room(r.clone()),
            ZIndex::Device(d) => Index::Device(d.clone()),
        }
    }

    /// The devices it holds, with their ids (a room's: every device that has
    /// been in it), and the room's id; `None` when nothing was ever written.
    fn devices(&self, conn: &Connection) -> Result<Option<IndexDevices>, StoreError> {
        Ok(match self {
            Index::Device(device) => names::find(conn, names::DEVICE, device.as_str())?
                .map(|id| (None, vec![(id, device.clone())])),
            Index::Room(room) => registry::room_devices(conn, room)?
                .map(|(room_id, devices)| (Some(room_id), devices)),
        })
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
