//! What the commands and tests ask of a store beyond the interface: a
//! checkpoint, a count of what it holds, sealing closed days, the query
//! plan of a Z-order read.

use super::{db_err, SqliteStore};
#[cfg(test)]
use crate::rows;
use crate::{blocks, schema, sealer};
use rusqlite::Connection;
use storage::StoreError;

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
    pub(crate) fn z_query_plan(&self) -> Result<String, StoreError> {
        self.read(rows::z_query_plan)
    }
}

/// How many readings a file holds (`SqliteStore::stored_readings`).
pub(crate) fn count_readings(conn: &Connection) -> Result<u64, StoreError> {
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
