//! The checkpointer: the WAL copied into the database file on a thread of
//! its own, and cut back once it has been quiet.

use super::{db_err, prepared, PAGE_BYTES};
use crate::{periodic, quiet_wal};
use rusqlite::Connection;
use std::path::Path;
use storage::StoreError;

/// How often the checkpointer copies the WAL into the database file.
pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// WAL pages after which the committing writer checkpoints itself (SQLite's
/// default is 1000). The checkpointer thread copies nearly everything first;
/// the writer's own checkpoint is what lets the WAL start over while writes
/// keep coming, and a rarer one takes its fsyncs off most commits. 32 MB
/// of WAL in a new file's pages (a file with 4 KB pages: 64 MB).
pub(crate) const WRITER_AUTOCHECKPOINT_PAGES: i64 = (32 << 20) / PAGE_BYTES;

/// What an emptied WAL file is cut back to, so that a burst does not leave
/// a large file behind.
pub(crate) const WAL_KEPT_BYTES: i64 = 8 << 20;

/// How long the WAL stays unchanged, all of it copied into the file, before
/// the checkpointer cuts it to nothing: after a burst (an import, a
/// catch-up) the WAL was up to 32 MB beside a household's 1 MB file until
/// the next write, and 8 MB after it.
pub(crate) const QUIET_BEFORE_TRUNCATE: std::time::Duration = if cfg!(test) {
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
pub(crate) fn checkpointer(path: &Path) -> Result<periodic::Periodic, StoreError> {
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
