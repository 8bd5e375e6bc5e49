//! Files from earlier versions (`schema::VERSION` lists them), migrated in
//! place when they are opened:
//!
//! - version 1 (DynamoDB items in one table) is converted by `from_v1_items`,
//!   the one place the embedded store reads the DynamoDB item shape;
//! - version 2 gains its rollups;
//! - version 3 loses its stored hour rollups (computed from then on) and
//!   gains the `blocks` table;
//! - versions 2 to 5 gain `rollups.size`, NULL in their rollups (sized when
//!   read, and kept when a rollup is written again);
//! - versions 4 to 9 have their long blocks cut to fill their pages
//!   (`block_tail`);
//! - versions 4 to 12 have a slow series' one-day blocks joined into
//!   blocks of up to a week (`day_merge`).
//!
//! Each is one transaction. Their readings stay rows: the sealer then moves
//! closed days into blocks, a device's day to a transaction, so that the
//! conversion resumes where a stop left it (`SqliteStore::seal_closed_days`,
//! with a progress bar in `ingester-local`).

mod from_v1_items;

use super::block_key::{key, LAST_DAY};
use super::names;
use super::{blocks, day_merge, db_err, schema};
use domain::model::{TimeRange, Timestamp};
use from_v1_items::from_items;
use rusqlite::{params, Connection};
use storage::StoreError;

pub(super) fn has_table(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(db_err)
}

/// What a migration moved.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub readings: usize,
    /// Readings already past their `expires_at`: version 1 hid them and would
    /// have deleted them; they are not carried over.
    pub expired: usize,
    pub devices: usize,
    pub rooms: usize,
    /// Change-log readings the registry had not seen yet.
    pub pending: usize,
}

/// Brings a file to the current schema; a no-op for a current or new file.
pub fn to_current(conn: &mut Connection) -> Result<Option<Moved>, StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db_err)?;
    with_catalogue_columns(conn)?;
    if (FIRST_WITH_BLOCKS..FIRST_WITH_TAILS).contains(&version) {
        with_cut_blocks(conn)?;
    }
    if (FIRST_WITH_BLOCKS..FIRST_WITH_SPANS).contains(&version) {
        with_joined_days(conn)?;
    }
    if !has_table(conn, "items")? {
        // Version 2 had the time-series tables but no rollups.
        if has_table(conn, "readings_climate")? && !has_table(conn, "rollups")? {
            let started = std::time::Instant::now();
            let built = with_rollups(conn)?;
            tracing::info!(
                rollups = built,
                seconds = started.elapsed().as_secs_f64(),
                "built the rollups of a version 2 database (once)"
            );
        } else if has_table(conn, "rollups")? && !has_table(conn, "blocks")? {
            from_v3(conn)?;
            tracing::info!(
                "version 3 database: hour rollups dropped (now computed), blocks table added"
            );
        }
        with_rollup_sizes(conn)?;
        return Ok(None);
    }
    tracing::info!("migrating a version 1 database to the time-series schema (once)");
    let started = std::time::Instant::now();
    let moved = from_items(conn)?;
    // The old tables' pages are free now; give them back to the file system
    // (VACUUM writes the new file through the WAL: empty it into the file).
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(db_err)?;
    tracing::info!(
        readings = moved.readings,
        expired = moved.expired,
        devices = moved.devices,
        rooms = moved.rooms,
        pending_registry_changes = moved.pending,
        seconds = started.elapsed().as_secs_f64(),
        "migrated"
    );
    Ok(Some(moved))
}

/// Version 2 to 3: the rollups table, filled from the readings, in one transaction.
fn with_rollups(conn: &mut Connection) -> Result<usize, StoreError> {
    let tx = conn.transaction().map_err(db_err)?;
    tx.execute_batch("DROP INDEX IF EXISTS readings_climate_z;")
        .map_err(db_err)?;
    tx.execute_batch(&schema::create()).map_err(db_err)?;
    let built = build_rollups(&tx)?;
    tx.pragma_update(None, "user_version", schema::VERSION)
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    Ok(built)
}

/// Version 3 to 4, in one transaction: the blocks table, no stored hour
/// rollups (span 0: they are computed from the day's readings from now on),
/// and the Z-order index no longer partial (`schema::Z_INDEX` says why).
fn from_v3(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction().map_err(db_err)?;
    tx.execute_batch("DROP INDEX IF EXISTS readings_climate_z;")
        .map_err(db_err)?;
    tx.execute_batch(&schema::create()).map_err(db_err)?;
    tx.execute("DELETE FROM rollups WHERE span = 0", [])
        .map_err(db_err)?;
    tx.pragma_update(None, "user_version", schema::VERSION)
        .map_err(db_err)?;
    tx.commit().map_err(db_err)
}

/// The first version with `blocks`, and the first with `block_tails`.
const FIRST_WITH_BLOCKS: i64 = 4;
const FIRST_WITH_TAILS: i64 = 10;
/// The first version with blocks of several days (`block_spans`).
const FIRST_WITH_SPANS: i64 = 13;

/// Versions 4 to 12 to 13: every slow series' one-day blocks joined into
/// blocks of up to a week, as the days written from now on are
/// (`day_merge`), their day rollup rows dropped (computed from the blocks).
fn with_joined_days(conn: &mut Connection) -> Result<(), StoreError> {
    let (joined, seconds) = rewritten_once(conn, |tx| {
        let mut joined = 0;
        for (device, device_id) in names::devices(tx)? {
            let days: Vec<i64> = tx
                .prepare("SELECT key & ?3 FROM blocks WHERE key BETWEEN ?1 AND ?2 ORDER BY key")
                .map_err(db_err)?
                .query_map(
                    params![key(device, 0), key(device, LAST_DAY), LAST_DAY],
                    |r| r.get(0),
                )
                .map_err(db_err)?
                .collect::<Result<_, _>>()
                .map_err(db_err)?;
            for day in days {
                joined += usize::from(day_merge::into_previous(tx, (device, &device_id), day)?);
            }
        }
        Ok(joined)
    })?;
    tracing::info!(
        days = joined,
        seconds,
        "a slow series' days joined into blocks of up to a week (version 13, once)"
    );
    Ok(())
}

/// Versions 4 to 9 to 10: `block_tails`, and every block that `block_tail`
/// would cut, cut (before, a block was one row). The heads stay in the
/// pages that held the whole blocks, with the room they left empty, and
/// the tails take new pages: the file grew (a noisy year from 3.97 MB to
/// 4.49 MB) until it is written anew.
fn with_cut_blocks(conn: &mut Connection) -> Result<(), StoreError> {
    let (cut, seconds) = rewritten_once(conn, blocks::cut_whole_blocks)?;
    tracing::info!(
        blocks = cut,
        seconds,
        "long blocks cut to fill their pages, the file written anew (version 10, once)"
    );
    Ok(())
}

/// `change` in one transaction that brings the file to the current version
/// (its tables created first); then, if it changed anything, the file
/// written anew (VACUUM), so that it shrinks. Only the file's size depends
/// on that: a failure (a disk without the room) leaves the store as it is,
/// opened. How many things `change` changed, and the seconds it all took.
fn rewritten_once(
    conn: &mut Connection,
    change: impl FnOnce(&Connection) -> Result<usize, StoreError>,
) -> Result<(usize, f64), StoreError> {
    let started = std::time::Instant::now();
    let tx = conn.transaction().map_err(db_err)?;
    tx.execute_batch(&schema::create()).map_err(db_err)?;
    let changed = change(&tx)?;
    tx.pragma_update(None, "user_version", schema::VERSION)
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    if changed > 0 {
        if let Err(e) = conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::warn!(error = %e, "vacuum after an upgrade failed; the file keeps its size");
        }
    }
    Ok((changed, started.elapsed().as_secs_f64()))
}

/// Versions 2 to 13 to 14: a column for each quantity the catalogue
/// gained since the file's family tables were made (the tariff counters:
/// issue 79), added in place (no rewrite; a row before has NULL there, as a
/// reading without the quantity has). Before anything else: every later
/// step writes rows through statements that name every column.
fn with_catalogue_columns(conn: &Connection) -> Result<(), StoreError> {
    for family in schema::families() {
        if !has_table(conn, &family.table)? {
            continue;
        }
        let mut has = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(db_err)?;
        let names: Vec<String> = has
            .query_map([&family.table], |r| r.get(0))
            .map_err(db_err)?
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
        for q in &family.columns {
            if !names.iter().any(|n| n == q.name()) {
                conn.execute_batch(&format!(
                    "ALTER TABLE {} ADD COLUMN {}",
                    family.table,
                    q.name()
                ))
                .map_err(db_err)?;
                tracing::info!(table = %family.table, column = q.name(), "a catalogue column added (version 14)");
            }
        }
    }
    Ok(())
}

/// Versions 2 to 5 to 6: `rollups.size`, a column added in place (no
/// rewrite; `CREATE TABLE IF NOT EXISTS` leaves an existing table as it is).
fn with_rollup_sizes(conn: &Connection) -> Result<(), StoreError> {
    let has_size: bool = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('rollups') WHERE name = 'size'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .map_err(db_err)?;
    if has_table(conn, "rollups")? && !has_size {
        conn.execute_batch("ALTER TABLE rollups ADD COLUMN size INTEGER")
            .map_err(db_err)?;
        tracing::info!("rollups: a size column added (version 6)");
    }
    Ok(())
}

/// Every device's rollups, from all its readings.
pub(super) fn build_rollups(tx: &Connection) -> Result<usize, StoreError> {
    let all = TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN < MAX");
    let mut built = 0;
    for (id, device) in names::devices(tx)? {
        let mut spans = super::rollup_spans::TxSpans {
            tx,
            device: id,
            device_id: &device,
            now_ms: Timestamp::now().millis(),
        };
        // The rollups use case, whose primitives here answer at once.
        built += domain::rollup_upkeep::at_once(domain::rollup_upkeep::rebuild(&mut spans, all))?;
    }
    Ok(built)
}
