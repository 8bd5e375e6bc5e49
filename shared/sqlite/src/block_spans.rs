//! Blocks of several days (schema version 13): which of a device's blocks
//! hold more than their first day, and up to which day.
//!
//! A sensor that reports once in five minutes fills a day's block with 173
//! bytes, of which its header and the day's rollup row are a third: the
//! sealer merges such a closed day into the device's block before it
//! (`day_merge`), up to a week a block, and the days of such a block keep
//! no rollup row (computed from the block when read, `rollups`). A block's
//! key stays its first day (`device << 32 | day`); `block_spans` has a row
//! for each block whose last day is after its first, so a reader of a day
//! finds the block that holds it with one probe of a table that is empty
//! for a file whose series report every minute. A file of one-day blocks
//! (every file before version 13) reads as it did.

use super::block_key::{key, LAST_DAY};
use super::db_err;
use rusqlite::{params, Connection, OptionalExtension};
use storage::StoreError;

/// The days (first, last) of a device's block of several days that holds
/// `day`, if one does.
pub fn holding(conn: &Connection, device: i64, day: i64) -> Result<Option<(i64, i64)>, StoreError> {
    let found: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT key, last_day FROM block_spans WHERE key BETWEEN ?1 AND ?2
             ORDER BY key DESC LIMIT 1",
        )
        .map_err(db_err)?
        .query_row(params![key(device, 0), key(device, day)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(db_err)?;
    Ok(found
        .map(|(k, last)| (k & LAST_DAY, last))
        .filter(|(_, last)| *last >= day))
}

/// The first day of the block that holds `day`: its own, or that of the
/// block of several days it is in.
pub fn first_day(conn: &Connection, device: i64, day: i64) -> Result<i64, StoreError> {
    Ok(holding(conn, device, day)?.map_or(day, |(first, _)| first))
}

/// A device's blocks of several days (first, last) that hold any of
/// `days`, oldest first.
pub fn overlapping(
    conn: &Connection,
    device: i64,
    days: std::ops::RangeInclusive<i64>,
) -> Result<Vec<(i64, i64)>, StoreError> {
    if days.is_empty() {
        return Ok(Vec::new());
    }
    let from = first_day(conn, device, *days.start())?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT key, last_day FROM block_spans WHERE key BETWEEN ?1 AND ?2 ORDER BY key",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![key(device, from), key(device, *days.end())], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(db_err)?;
    // From the first day of the block holding the range's first day, every
    // block of several days listed ends at or after it.
    rows.map(|row| row.map(|(k, last)| (k & LAST_DAY, last)).map_err(db_err))
        .collect()
}

/// Records that the block keyed by its first day `first` ends on `last`:
/// a row when `last` is after `first`, none when it is a day's block.
pub fn record(conn: &Connection, device: i64, first: i64, last: i64) -> Result<(), StoreError> {
    let k = key(device, first);
    if last > first {
        conn.prepare_cached("INSERT OR REPLACE INTO block_spans (key, last_day) VALUES (?1, ?2)")
            .map_err(db_err)?
            .execute(params![k, last])
            .map_err(db_err)?;
    } else {
        conn.prepare_cached("DELETE FROM block_spans WHERE key = ?1")
            .map_err(db_err)?
            .execute(params![k])
            .map_err(db_err)?;
    }
    Ok(())
}

/// Forgets a device's blocks of several days that begin before `day` (their
/// blocks removed by retention).
pub fn remove_before(conn: &Connection, device: i64, day: i64) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM block_spans WHERE key >= ?1 AND key < ?2")
        .map_err(db_err)?
        .execute(params![key(device, 0), key(device, day)])
        .map_err(db_err)?;
    Ok(())
}
