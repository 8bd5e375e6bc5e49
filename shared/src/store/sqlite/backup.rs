//! An online backup of the embedded store's file (docs/backup.md): a
//! snapshot of one moment, taken while a server writes, that never harms the
//! source and never leaves a half file under the final name.
//!
//! A restore puts a checked backup in a store's place, never while a store
//! has the file open (the `.lock` beside it), keeping the file it replaces.
//!
//! SQLite's online backup API copies every page of the file in one step,
//! inside one read transaction: in WAL mode a read does not block the
//! writer, and the copy is the database as of the transaction's start.
//! (`VACUUM INTO` also makes such a copy, compacted, but rebuilds every
//! b-tree: it took 1.3 to 1.8 times as long, docs/BENCHMARKS.md.) The copy
//! is written under a temporary name beside the target, checked
//! (`PRAGMA integrity_check`, its readings counted as the store counts
//! them), synced, and only then renamed over the target.

use super::db_err;
use crate::store::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a backup wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackupReport {
    /// Readings in the copy (expired ones not yet deleted included).
    pub readings: u64,
    /// The copy's size.
    pub bytes: u64,
    /// Where the time went: the copy, its check (integrity and count), the sync.
    pub copy_seconds: f64,
    pub check_seconds: f64,
    pub sync_seconds: f64,
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

/// Backs up the store's file at `source` to `target` (module comment).
pub async fn backup(source: &Path, target: &Path) -> Result<BackupReport, StoreError> {
    if !source.is_file() {
        return Err(StoreError::Unavailable(format!(
            "{}: no such store file",
            source.display()
        )));
    }
    let partial = partial_name(target);
    let result = copy_and_check(source, &partial).await;
    match result {
        Ok(report) => {
            std::fs::rename(&partial, target).map_err(|e| io("renaming onto", target, e))?;
            if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                // The rename itself survives a power loss once its folder is synced.
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
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

fn wal_of(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

async fn copy_and_check(source: &Path, partial: &Path) -> Result<BackupReport, StoreError> {
    // A stale partial file of an earlier, interrupted backup.
    let _ = std::fs::remove_file(partial);
    let (from, to) = (source.to_owned(), partial.to_owned());
    let (readings, copy_seconds, check_seconds) =
        tokio::task::spawn_blocking(move || -> Result<(u64, f64, f64), StoreError> {
            let started = std::time::Instant::now();
            let conn = Connection::open_with_flags(
                &from,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(db_err)?;
            // The indexes' expressions call the store's own functions.
            super::register_functions(&conn).map_err(db_err)?;
            conn.busy_timeout(Duration::from_secs(30)).map_err(db_err)?;
            // One step of every page: the whole copy in one read transaction.
            let pages = Connection::open(&to).and_then(|mut copy| {
                rusqlite::backup::Backup::new(&conn, &mut copy)?.step(-1)?;
                // A file on its own (no -wal or -shm beside it); the store turns
                // WAL on again when it opens a restored copy.
                copy.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(()))?;
                copy.close().map_err(|(_, e)| e)
            });
            pages.map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DiskFull) => StoreError::Unavailable(format!(
                    "the disk of {} is full: a backup needs about the store's size free ({} bytes)",
                    to.parent().unwrap_or(&to).display(),
                    std::fs::metadata(&from).map(|m| m.len()).unwrap_or(0)
                )),
                _ => StoreError::Unavailable(format!("copying {}: {e}", from.display())),
            })?;
            let copied = started.elapsed().as_secs_f64();
            let started = std::time::Instant::now();
            let copy = Connection::open_with_flags(&to, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(db_err)?;
            super::register_functions(&copy).map_err(db_err)?;
            let check: String = copy
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .map_err(db_err)?;
            if check != "ok" {
                return Err(StoreError::Corrupt(format!(
                    "the copy fails its integrity check: {check}"
                )));
            }
            let readings = super::count_readings(&copy)?;
            Ok((readings, copied, started.elapsed().as_secs_f64()))
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("the backup's thread: {e}")))??;
    let started = std::time::Instant::now();
    let file = std::fs::File::open(partial).map_err(|e| io("reading", partial, e))?;
    file.sync_all().map_err(|e| io("syncing", partial, e))?;
    let sync_seconds = started.elapsed().as_secs_f64();
    let bytes = file
        .metadata()
        .map_err(|e| io("reading", partial, e))?
        .len();
    Ok(BackupReport {
        readings,
        bytes,
        copy_seconds,
        check_seconds,
        sync_seconds,
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
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    drop(lock);
    Ok(Restored { readings, replaced })
}
