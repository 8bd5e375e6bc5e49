//! An online backup of the embedded store's file (docs/backup.md): a
//! snapshot of one moment, taken while a server writes, that never harms the
//! source and never leaves a half file under the final name.
//!
//! A restore puts a checked backup in a store's place, never while a store
//! has the file open (the `.lock` beside it), keeping the file it replaces.
//!
//! The copy is taken inside one read transaction: in WAL mode a read does
//! not block the writer, and the copy is the database as of the
//! transaction's start. A store of up to [`IN_MEMORY_LIMIT`] (a household's
//! years are a few MB) is copied as its file is, in the kernel, when the file
//! holds every frame of the WAL (`wal_index`), or else read into memory in
//! one step (`sqlite3_serialize`); either way that snapshot is checked in the
//! same read transaction while the disk writes the copy. A bigger one is
//! copied page by page by SQLite's online backup API and checked from the
//! file, so that a backup never needs the store's size in memory.
//! (`VACUUM INTO` also makes such a copy, compacted, but rebuilds every
//! b-tree: it took 1.3 to 1.8 times as long as the backup API, and the
//! backup API 2 to 3 times as long as the copy through memory,
//! docs/BENCHMARKS.md.) Either way the copy is written under a temporary
//! name beside the target, checked (`PRAGMA integrity_check`, its readings
//! counted as the store counts them), synced, and only then renamed over the
//! target.

use super::wal_index::{self, wal_of};
use super::{db_err, held_files};
use rusqlite::serialize::Data;
use rusqlite::{Connection, OpenFlags, MAIN_DB};
use std::path::{Path, PathBuf};
use std::time::Duration;
use storage::StoreError;

/// What a backup wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackupReport {
    /// Readings in the copy (expired ones not yet deleted included).
    pub readings: u64,
    /// The copy's size.
    pub bytes: u64,
    /// Where the time went: the copy (from the backup's start to the copy's
    /// end: opening the store, and the kernel's copy or the snapshot and its
    /// write), its check (integrity and count; in a store up to the
    /// in-memory limit, while the disk writes the copy), the sync.
    pub copy_seconds: f64,
    pub check_seconds: f64,
    pub sync_seconds: f64,
    /// How it copied.
    pub copied: CopyWay,
}

/// How a backup copied the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyWay {
    /// The store's file as it is, in the kernel: its bytes were the
    /// snapshot (a store up to the limit, its WAL all copied into it).
    WholeFile,
    /// The snapshot read into memory in one step, then written (a store up
    /// to the limit, its WAL holding frames not yet in the file).
    ThroughMemory,
    /// Page by page, by SQLite's online backup API (a bigger store).
    PageByPage,
}

impl CopyWay {
    /// As the backup's report names it.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyWay::WholeFile => "whole file",
            CopyWay::ThroughMemory => "through memory",
            CopyWay::PageByPage => "page by page",
        }
    }
}

/// The temporary name a backup to `target` is written under.
pub fn partial_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "backup".into());
    target.with_file_name(format!(".{name}.partial"))
}

fn io(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("{what} {}: {e}", path.display()))
}

/// Stores up to this size (their file and WAL) are backed up through memory.
pub const IN_MEMORY_LIMIT: u64 = 128 << 20;

/// How much of the store's file the copy through memory maps (SQLite's
/// `mmap_size`).
const MAP_BYTES: i64 = 1 << 30;

/// Backs up the store's file at `source` to `target` (module comment).
pub async fn backup(source: &Path, target: &Path) -> Result<BackupReport, StoreError> {
    backup_with_limit(source, target, IN_MEMORY_LIMIT).await
}

/// [`backup`], through memory only for stores of up to `in_memory_limit`
/// bytes (`backup --in-memory-up-to`, `serve --backup-in-memory-up-to`).
pub async fn backup_with_limit(
    source: &Path,
    target: &Path,
    in_memory_limit: u64,
) -> Result<BackupReport, StoreError> {
    let (from, to) = (source.to_owned(), target.to_owned());
    tokio::task::spawn_blocking(move || backup_blocking(&from, &to, in_memory_limit))
        .await
        .map_err(|e| StoreError::Unavailable(format!("the backup's thread: {e}")))?
}

/// Whether a backup of the store at `source` goes through memory: its file
/// and WAL are at most `in_memory_limit` bytes.
fn fits_in_memory(source: &Path, in_memory_limit: u64) -> bool {
    let size = [source.to_owned(), wal_of(source, "-wal")]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum::<u64>();
    size <= in_memory_limit
}

/// [`backup_with_limit`] on the calling thread: what `ingester-local backup`
/// runs, with no async runtime to start (its start was a sixth of a 1 MB
/// backup's time, docs/BENCHMARKS.md).
pub fn backup_blocking(
    source: &Path,
    target: &Path,
    in_memory_limit: u64,
) -> Result<BackupReport, StoreError> {
    if !source.is_file() {
        return Err(StoreError::Unavailable(format!(
            "{}: no such store file",
            source.display()
        )));
    }
    let partial = partial_name(target);
    let result = if fits_in_memory(source, in_memory_limit) {
        copy_in_one_transaction(source, &partial)
    } else {
        copy_and_check(source, &partial)
    };
    match result {
        Ok(report) => {
            std::fs::rename(&partial, target).map_err(|e| io("renaming onto", target, e))?;
            sync_folder_of(target);
            Ok(report)
        }
        Err(e) => {
            for leftover in [
                partial.clone(),
                wal_of(&partial, "-wal"),
                wal_of(&partial, "-shm"),
            ] {
                let _ = std::fs::remove_file(leftover);
            }
            Err(e)
        }
    }
}

/// Syncs the folder `path` was just renamed into: the rename itself
/// survives a power loss once its folder is synced. A bare file name is in
/// the working folder (`Path::parent` is then empty: before, such a rename
/// went unsynced).
fn sync_folder_of(path: &Path) {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The store's file opened for reading a copy of it.
fn open_source(from: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        from,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(db_err)?;
    // The indexes' expressions call the store's own functions.
    super::register_functions(&conn).map_err(db_err)?;
    conn.busy_timeout(Duration::from_secs(30)).map_err(db_err)?;
    Ok(conn)
}

/// A copy's check: `PRAGMA integrity_check`, then its readings counted.
fn check(copy: &Connection) -> Result<u64, StoreError> {
    integrity(copy)?;
    super::count_readings(copy)
}

fn integrity(copy: &Connection) -> Result<(), StoreError> {
    let check: String = copy
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(db_err)?;
    if check != "ok" {
        return Err(StoreError::Corrupt(format!(
            "the copy fails its integrity check: {check}"
        )));
    }
    Ok(())
}

fn disk_full(to: &Path, from: &Path) -> StoreError {
    StoreError::Unavailable(format!(
        "the disk of {} is full: a backup needs about the store's size free ({} bytes)",
        to.parent().unwrap_or(to).display(),
        std::fs::metadata(from).map(|m| m.len()).unwrap_or(0)
    ))
}

/// An error `what`ing the copy at `to` of the store at `from`: a full disk
/// said so.
fn write_error(what: &str, e: std::io::Error, to: &Path, from: &Path) -> StoreError {
    match e.kind() {
        std::io::ErrorKind::StorageFull => disk_full(to, from),
        _ => io(what, to, e),
    }
}

/// Bytes 18 and 19 of a database file say how it is journaled: 2, WAL, in
/// the store's file; 1, a rollback journal. A copy is a file on its own, with
/// no -wal or -shm beside it; the store turns WAL on again when it opens a
/// restored copy.
const ROLLBACK_JOURNAL: [u8; 2] = [1, 1];
const JOURNAL_MODE_AT: usize = 18;

/// The database as of the read transaction `source` is in, as the bytes of
/// a file on its own.
fn snapshot(
    source: &mut Connection,
    from: &Path,
) -> Result<rusqlite::serialize::OwnedData, StoreError> {
    let mut image = match source.serialize(MAIN_DB).map_err(db_err)? {
        Data::Owned(image) => image,
        Data::Shared(_) => {
            return Err(StoreError::Unavailable(format!(
                "{}: not a file to copy",
                from.display()
            )))
        }
    };
    if image.len() >= 100 {
        image[JOURNAL_MODE_AT..JOURNAL_MODE_AT + 2].copy_from_slice(&ROLLBACK_JOURNAL);
    }
    Ok(image)
}

/// Writes `bytes` to a new file at `to`.
fn write_new(bytes: &[u8], to: &Path) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let mut file = std::fs::File::create_new(to)?;
    file.write_all(bytes)?;
    Ok(file)
}

/// Copies the first `bytes` of the store's file to a new file at `to`, in
/// the kernel (`copy_file_range`, at offsets of its own: the descriptor is
/// shared, `held_files`), and marks the copy a file on its own.
fn copy_whole(from: &std::fs::File, bytes: u64, to: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::create_new(to)?;
    let read_at = copy_in_kernel(from, bytes, &file)?;
    if read_at < bytes {
        // Another file system, or a kernel or file system without it: the
        // rest through memory.
        copy_by_reading(from, read_at, bytes, &file)?;
    }
    file.write_all_at(&ROLLBACK_JOURNAL, JOURNAL_MODE_AT as u64)?;
    Ok(file)
}

/// Copies up to the first `bytes` of `from` to `to` by `copy_file_range`,
/// as far as the kernel can; how far that was.
#[cfg(target_os = "linux")]
fn copy_in_kernel(from: &std::fs::File, bytes: u64, to: &std::fs::File) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let (mut read_at, mut write_at) = (0i64, 0i64);
    while (read_at as u64) < bytes {
        let left = (bytes - read_at as u64) as usize;
        // SAFETY: both descriptors stay open for the call (borrowed files),
        // and the offsets are locals the kernel advances.
        let copied = unsafe {
            libc::copy_file_range(
                from.as_raw_fd(),
                &mut read_at,
                to.as_raw_fd(),
                &mut write_at,
                left,
                0,
            )
        };
        match copied {
            0 => break,
            n if n > 0 => {}
            _ => {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EXDEV | libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL) => break,
                    Some(libc::EINTR) => {}
                    _ => return Err(e),
                }
            }
        }
    }
    Ok(read_at as u64)
}

#[cfg(not(target_os = "linux"))]
fn copy_in_kernel(_: &std::fs::File, _: u64, _: &std::fs::File) -> std::io::Result<u64> {
    Ok(0)
}

/// Bytes `from_byte..bytes` of `from`, read and written at the same offsets.
fn copy_by_reading(
    from: &std::fs::File,
    from_byte: u64,
    bytes: u64,
    to: &std::fs::File,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buffer = vec![0u8; 1 << 20];
    let mut at = from_byte;
    while at < bytes {
        let n = (bytes - at).min(buffer.len() as u64) as usize;
        from.read_exact_at(&mut buffer[..n], at)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => std::io::Error::new(
                    e.kind(),
                    format!("the store's file ends before its {bytes} bytes"),
                ),
                _ => e,
            })?;
        to.write_all_at(&buffer[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Asks the kernel to start writing `file`'s pages to disk, without waiting
/// for them: the disk writes while the copy is checked, and the sync after
/// the check waits for what is left. (Best effort: the sync is what makes
/// the copy durable.)
#[cfg(target_os = "linux")]
fn start_writeback(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range takes a descriptor that `file` keeps open for
    // the call, and integers; it reads or writes no memory of ours.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &std::fs::File) {}

/// A store up to the in-memory limit, copied in one read transaction and
/// checked in it, on the connection that took it (the copy is its pages
/// byte for byte):
///
/// - when the store's file holds every frame of the WAL (`wal_index`: a
///   store that is not being written, or whose checkpoint has caught up),
///   the file's own bytes are the snapshot, and nothing writes them until
///   the transaction ends: they are copied as they are, in the kernel;
/// - otherwise the snapshot is read into memory in one step
///   (`sqlite3_serialize`) and written.
///
/// Then the copy's pages start going to disk while the snapshot is checked
/// (`PRAGMA integrity_check`, its readings counted), and the copy is synced.
///
/// One thread does it all: on this machine a second thread began its work
/// 0.2 to 1.9 ms after it was asked for (of a backup's 6), where the disk
/// writes the copy by itself; a thread started at once and spinning until
/// the copy was asked of it made the backup slower (3.35 and 3.46 times
/// `cp`, against 3.10 and 3.11 for one thread), taking the core the check
/// needed. The kernel's copy on a thread of its own beside the check, or
/// the check on one beside the copy, did no better either (the check took
/// a fifth longer beside the copy, and the thread's start and its stack's
/// mappings ate the rest: docs/BENCHMARKS.md, "glibc's malloc for a
/// backup"). The check runs on the connection that took the snapshot: counted
/// from the written file, the count paid for opening and mapping it again
/// (3 ms of a 2 MB backup's 11); on a second connection, for reading the
/// schema again. Through memory, the snapshot's copy and its write took 4
/// to 5 ms of a 2 MB backup's 12, where the kernel's copy takes about 1
/// (docs/BENCHMARKS.md).
fn copy_in_one_transaction(from: &Path, to: &Path) -> Result<BackupReport, StoreError> {
    // A stale partial file of an earlier, interrupted backup.
    let _ = std::fs::remove_file(to);
    let started = std::time::Instant::now();
    // The store's file, held open for good (`held_files`): closing a
    // descriptor of it would drop the locks this process holds on it.
    let file = held_files::held_open(from).map_err(|e| io("opening", from, e))?;
    let mut source = open_source(from)?;
    // Pages read from the mapped file, not copied into a page cache first.
    source
        .pragma_update(None, "mmap_size", MAP_BYTES)
        .map_err(db_err)?;
    source.execute_batch("BEGIN").map_err(db_err)?;
    let outcome = copy_then_check(&mut source, &file, from, to, started);
    let _ = source.execute_batch("COMMIT");
    outcome
}

fn copy_then_check(
    source: &mut Connection,
    file: &std::fs::File,
    from: &Path,
    to: &Path,
    started: std::time::Instant,
) -> Result<BackupReport, StoreError> {
    // The read transaction, and its snapshot, begin with its first read.
    let pages = source
        .query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0))
        .map_err(db_err)?;
    let in_wal_mode = source
        .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
        .is_ok_and(|mode| mode == "wal");
    let (copy, copied) = if in_wal_mode && wal_index::file_holds_every_frame(from) {
        let page_size = source
            .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
            .map_err(db_err)?;
        let bytes = u64::try_from(pages * page_size).map_err(|_| {
            StoreError::Corrupt(format!(
                "{}: {pages} pages of {page_size} bytes",
                from.display()
            ))
        })?;
        (copy_whole(file, bytes, to), CopyWay::WholeFile)
    } else {
        let image = snapshot(source, from)?;
        (write_new(&image, to), CopyWay::ThroughMemory)
    };
    let copy = copy.map_err(|e| write_error("writing", e, to, from))?;
    let copy_seconds = started.elapsed().as_secs_f64();
    start_writeback(&copy);
    let checking = std::time::Instant::now();
    let readings = check(source)?;
    let check_seconds = checking.elapsed().as_secs_f64();
    let syncing = std::time::Instant::now();
    copy.sync_all()
        .map_err(|e| write_error("syncing", e, to, from))?;
    let sync_seconds = syncing.elapsed().as_secs_f64();
    Ok(BackupReport {
        readings,
        bytes: copy.metadata().map_err(|e| io("reading", to, e))?.len(),
        copy_seconds,
        check_seconds,
        sync_seconds,
        copied,
    })
}

/// The copy page by page, by SQLite's online backup API, checked from the
/// file.
fn copy_and_check(from: &Path, to: &Path) -> Result<BackupReport, StoreError> {
    // A stale partial file of an earlier, interrupted backup.
    let _ = std::fs::remove_file(to);
    let started = std::time::Instant::now();
    let conn = open_source(from)?;
    // One step of every page: the whole copy in one read transaction.
    let pages = Connection::open(to).and_then(|mut copy| {
        rusqlite::backup::Backup::new(&conn, &mut copy)?.step(-1)?;
        // A file on its own (no -wal or -shm beside it); the store turns
        // WAL on again when it opens a restored copy.
        copy.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(()))?;
        copy.close().map_err(|(_, e)| e)
    });
    pages.map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => disk_full(to, from),
        _ => StoreError::Unavailable(format!("copying {}: {e}", from.display())),
    })?;
    let copy_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let copy = Connection::open_with_flags(to, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db_err)?;
    super::register_functions(&copy).map_err(db_err)?;
    let readings = check(&copy)?;
    let check_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let file = std::fs::File::open(to).map_err(|e| io("reading", to, e))?;
    file.sync_all().map_err(|e| io("syncing", to, e))?;
    let sync_seconds = started.elapsed().as_secs_f64();
    let bytes = file.metadata().map_err(|e| io("reading", to, e))?.len();
    Ok(BackupReport {
        readings,
        bytes,
        copy_seconds,
        check_seconds,
        sync_seconds,
        copied: CopyWay::PageByPage,
    })
}

/// The lock file beside a store's file.
fn lock_path(db: &Path) -> PathBuf {
    wal_of(db, ".lock")
}

/// Takes the shared lock a store holds while it is open; an error while a
/// restore holds it.
pub(super) fn open_lock(db: &Path) -> Result<std::fs::File, StoreError> {
    let path = lock_path(db);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io("opening", &path, e))?;
    match file.try_lock_shared() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Unavailable(format!(
            "{}: a restore is replacing it",
            db.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(io("locking", &path, e)),
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Readings in the restored file.
    pub readings: u64,
    /// Where the file it replaced was kept (`None`: there was none, or it
    /// was discarded).
    pub replaced: Option<PathBuf>,
}

/// Checks the backup at `from` and puts it in the place of the store file
/// `db`: refused while a store has `db` open; the file it replaces (with its
/// WAL) is kept beside it as `DB.replaced-<time>` unless `discard`.
pub async fn restore(from: &Path, db: &Path, discard: bool) -> Result<Restored, StoreError> {
    let (source, target) = (from.to_owned(), db.to_owned());
    tokio::task::spawn_blocking(move || restore_now(&source, &target, discard))
        .await
        .map_err(|e| StoreError::Unavailable(format!("the restore's thread: {e}")))?
}

fn restore_now(from: &Path, db: &Path, discard: bool) -> Result<Restored, StoreError> {
    if !from.is_file() {
        return Err(StoreError::Unavailable(format!(
            "{}: no such backup file",
            from.display()
        )));
    }
    // The backup first: whole, and of a version this build reads.
    let readings = {
        let conn =
            Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db_err)?;
        super::register_functions(&conn).map_err(db_err)?;
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", from.display())))?;
        if check != "ok" {
            return Err(StoreError::Corrupt(format!(
                "{}: fails its integrity check: {check}",
                from.display()
            )));
        }
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)?;
        if version > super::schema::VERSION {
            return Err(StoreError::Corrupt(format!(
                "{}: written by a newer version (file version {version})",
                from.display()
            )));
        }
        super::count_readings(&conn)?
    };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(db))
        .map_err(|e| io("opening", &lock_path(db), e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::Unavailable(format!(
                "{}: a server has it open; stop it first",
                db.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io("locking", &lock_path(db), e)),
    }
    // The copy goes in under a temporary name, then over the store's.
    let partial = wal_of(db, ".restoring");
    std::fs::copy(from, &partial).map_err(|e| io("copying to", &partial, e))?;
    std::fs::File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("syncing", &partial, e))?;
    let mut replaced = None;
    if db.exists() {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let aside = wal_of(db, &format!(".replaced-{stamp}"));
        for suffix in ["", "-wal", "-shm"] {
            let (old, new) = (wal_of(db, suffix), wal_of(&aside, suffix));
            if !old.exists() {
                continue;
            }
            if discard {
                std::fs::remove_file(&old).map_err(|e| io("removing", &old, e))?;
            } else {
                std::fs::rename(&old, &new).map_err(|e| io("keeping", &old, e))?;
            }
        }
        replaced = (!discard).then_some(aside);
    }
    std::fs::rename(&partial, db).map_err(|e| io("renaming onto", db, e))?;
    sync_folder_of(db);
    drop(lock);
    Ok(Restored { readings, replaced })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// Bytes that differ at every offset a copy could get wrong: past the
    /// reading fallback's 1 MB buffer, and not a multiple of a page.
    fn source_bytes() -> Vec<u8> {
        let mut rng = fastrand::Rng::with_seed(41);
        (0..(3 << 20) + 123).map(|_| rng.u8(..)).collect()
    }

    /// A fresh folder holding those bytes as `from`, open for reading.
    fn written_source(name: &str) -> (PathBuf, Vec<u8>, std::fs::File) {
        let dir = crate::tests::temp_dir(&format!("backup-copy-{name}"));
        let bytes = source_bytes();
        std::fs::write(dir.join("from"), &bytes).unwrap();
        let from = std::fs::File::open(dir.join("from")).unwrap();
        (dir, bytes, from)
    }

    /// The whole file, in the kernel: every byte as the source's but the
    /// journal mode's two.
    #[test]
    fn a_whole_copy_is_the_file_but_its_journal_mode() {
        let (dir, bytes, from) = written_source("whole");
        copy_whole(&from, bytes.len() as u64, &dir.join("to")).unwrap();
        let copy = std::fs::read(dir.join("to")).unwrap();
        assert_eq!(copy.len(), bytes.len());
        assert_eq!(copy[JOURNAL_MODE_AT..JOURNAL_MODE_AT + 2], ROLLBACK_JOURNAL);
        assert!(copy[..JOURNAL_MODE_AT] == bytes[..JOURNAL_MODE_AT]);
        assert!(copy[JOURNAL_MODE_AT + 2..] == bytes[JOURNAL_MODE_AT + 2..]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Where the kernel stopped (another file system), reading and writing
    /// go on from the same offset to the end.
    #[test]
    fn the_reading_fallback_goes_on_where_the_kernel_stopped() {
        let (dir, bytes, from) = written_source("fallback");
        for stopped_at in [0, 4096, 1_500_001] {
            let to_path = dir.join(format!("to-{stopped_at}"));
            let to = std::fs::File::create_new(&to_path).unwrap();
            to.write_all_at(&bytes[..stopped_at], 0).unwrap();
            copy_by_reading(&from, stopped_at as u64, bytes.len() as u64, &to).unwrap();
            assert!(
                std::fs::read(&to_path).unwrap() == bytes,
                "from {stopped_at}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A store's file shorter than its pages says so, by either way.
    #[test]
    fn a_file_shorter_than_its_pages_is_an_error_that_says_so() {
        let (dir, bytes, from) = written_source("short");
        let claimed = bytes.len() as u64 + 4096;
        let e = copy_whole(&from, claimed, &dir.join("to")).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("ends before its {claimed} bytes")),
            "{e}"
        );
        let to = std::fs::File::create_new(dir.join("to-read")).unwrap();
        let e = copy_by_reading(&from, 0, claimed, &to).unwrap_err();
        assert!(e.to_string().contains("ends before"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
