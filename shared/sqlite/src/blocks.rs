//! Sealed days: a device's readings of one closed UTC day as one block of
//! the domain's codec (`domain::block`), one row per device and day.
//!
//! - The row's key is `device << 32 | day` (days since 1970), so a device's
//!   blocks are one range of the table's rowid B-tree, in time order, and no
//!   index is needed. A rowid table keeps a block of up to about 4 KB (a day
//!   at one reading every 30 s or slower) in its leaf page; a WITHOUT ROWID
//!   table would spill anything over 1 KB to overflow pages.
//! - A device's day is either hot (rows of the family tables) or sealed (its
//!   block), never both: sealing moves the day's rows into its block in one
//!   transaction, and a write to a sealed or closed day goes into the block.
//! - A day is closed `GRACE_MS` after it ends: readings that arrive later
//!   still reach their block (decoded, merged, encoded again).
//! - A batch whose readings of a sealed day all come after the day's newest
//!   (history imported in order) is appended as the day's next *segment*,
//!   a block of its own in `day_segments`: re-encoding the growing day with
//!   every batch was a fifth of such an import's CPU. A day's readings are
//!   its block's, then its segments' in order, each strictly after the one
//!   before, so a read concatenates them. Any other write to the day, and
//!   the sealer (every minute, and when the store closes), merges them back
//!   into the day's block.
//! - A block longer than a sixth of a page is cut in two (`block_tail`): a
//!   head in `blocks`, of a length at which rows fill their page, and its
//!   tail in `block_tails` under the same key. Every read joins them.

use super::block_key::{key, LAST_DAY};
use super::rows::{self, Bounds};
use super::{block_spans, block_tail, db_err};
use domain::block;
use domain::model::{DeviceId, Reading, DAY_MS, HOUR_MS};
use rusqlite::{params, Connection, OptionalExtension};
use std::borrow::Cow;
use storage::{Order, StoreError};

/// How long after its end a day is sealed: a buffered sender's last batch
/// of the day usually arrives within it.
pub const GRACE_MS: i64 = HOUR_MS;

/// A device's rows in a key range, blocks and segments, as (key, seq,
/// body, tail), in the day's order, then `$tail` (the order, and a limit).
macro_rules! rows_sql {
    ($tail:literal) => {
        concat!(
            "SELECT b.key AS key, 0 AS seq, b.body, t.body FROM blocks b
                 LEFT JOIN block_tails t ON t.key = b.key WHERE b.key BETWEEN ?1 AND ?2
             UNION ALL SELECT key, seq, body, NULL FROM day_segments WHERE key BETWEEN ?1 AND ?2
             ORDER BY ",
            $tail
        )
    };
}

/// Every row, ascending and descending.
const ROWS: [&str; 2] = [rows_sql!("key, seq"), rows_sql!("key DESC, seq DESC")];
/// The first row and the last.
const EDGE_ROWS: [&str; 2] = [
    rows_sql!("key, seq LIMIT 1"),
    rows_sql!("key DESC, seq DESC LIMIT 1"),
];

fn rows_sql(order: Order) -> &'static str {
    match order {
        Order::Asc => ROWS[0],
        Order::Desc => ROWS[1],
    }
}

/// Where a device's day ends as the writer last stored it: its newest time
/// and the number of the next segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayEnd {
    pub day: i64,
    pub last: i64,
    pub next_seq: i64,
}

/// The day (since 1970) a time falls in.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// A day's times.
pub fn day_bounds(day: i64) -> Bounds {
    Bounds {
        lo: day * DAY_MS,
        hi: (day + 1) * DAY_MS - 1,
    }
}

/// Whether a day is over, with its grace, at `now_ms`.
pub fn closed(day: i64, now_ms: i64) -> bool {
    (day + 1) * DAY_MS + GRACE_MS <= now_ms
}

/// The first time of the first day not closed at `now_ms`.
pub fn closed_before(now_ms: i64) -> i64 {
    day_of(now_ms - GRACE_MS) * DAY_MS
}

fn corrupt(device: &DeviceId, day: i64, e: block::BlockError) -> StoreError {
    StoreError::Corrupt(format!("block of {device} on day {day}: {e}"))
}

/// [`corrupt`] for a device known only by its number in `names`.
fn corrupt_numbered(device: i64, day: i64, e: block::BlockError) -> StoreError {
    StoreError::Corrupt(format!("block of device {device} on day {day}: {e}"))
}

/// Whether a device's day is sealed (a block, or segments, or a block of
/// several days that holds it).
pub fn exists(conn: &Connection, device: i64, day: i64) -> Result<bool, StoreError> {
    let own = conn
        .prepare_cached(
            "SELECT 1 FROM blocks WHERE key = ?1 UNION ALL SELECT 1 FROM day_segments WHERE key = ?1 LIMIT 1",
        )
        .map_err(db_err)?
        .query_row(params![key(device, day)], |_| Ok(()))
        .optional()
        .map_err(db_err)?;
    Ok(own.is_some() || block_spans::holding(conn, device, day)?.is_some())
}

/// A sealed day's readings, block then segments (none when it is not
/// sealed); of a block of several days, the day's part.
pub fn load(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    day: i64,
) -> Result<Vec<Reading>, StoreError> {
    match block_spans::holding(conn, device, day)? {
        None => load_block(conn, device, device_id, day),
        Some((first, _)) => {
            let bounds = day_bounds(day);
            let mut all = load_block(conn, device, device_id, first)?;
            all.retain(|r| (bounds.lo..=bounds.hi).contains(&r.timestamp.millis()));
            Ok(all)
        }
    }
}

/// The readings of the block keyed by its first day `first`, whole, then
/// its segments.
pub(super) fn load_block(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    first: i64,
) -> Result<Vec<Reading>, StoreError> {
    let mut stmt = conn.prepare_cached(ROWS[0]).map_err(db_err)?;
    let mut rows = stmt
        .query(params![key(device, first), key(device, first)])
        .map_err(db_err)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(db_err)? {
        let (day, body) = day_and_body(row)?;
        out.extend(block::decode(device_id, &body).map_err(|e| corrupt(device_id, day, e))?);
    }
    Ok(out)
}

/// Writes the block keyed by its first day `day` (readings in strictly
/// increasing time, of that day or, for a block of several days, of it and
/// the days after), or removes it when there are none; either way the
/// day's segments go (the block holds the whole day), and `block_spans`
/// records the days it holds.
pub(super) fn put(
    conn: &Connection,
    device: i64,
    day: i64,
    readings: &[Reading],
) -> Result<(), StoreError> {
    let Some(newest) = readings.last() else {
        return put_encoded(conn, device, (day, day), None);
    };
    let body = block::encode(readings).map_err(|e| corrupt_numbered(device, day, e))?;
    let last = day_of(newest.timestamp.millis());
    put_encoded(conn, device, (day, last), Some(&body))
}

/// Writes the block of the days `first..=last` as its bytes (`None`:
/// removes it), keyed by its first day, and records its days.
pub(super) fn put_encoded(
    conn: &Connection,
    device: i64,
    (first, last): (i64, i64),
    body: Option<&[u8]>,
) -> Result<(), StoreError> {
    block_spans::record(conn, device, first, last)?;
    let k = key(device, first);
    conn.prepare_cached("DELETE FROM day_segments WHERE key = ?1")
        .map_err(db_err)?
        .execute(params![k])
        .map_err(db_err)?;
    let Some(body) = body else {
        for sql in [
            "DELETE FROM blocks WHERE key = ?1",
            "DELETE FROM block_tails WHERE key = ?1",
        ] {
            conn.prepare_cached(sql)
                .map_err(db_err)?
                .execute(params![k])
                .map_err(db_err)?;
        }
        return Ok(());
    };
    put_body(conn, k, body, page_size(conn)?)
}

pub(super) fn page_size(conn: &Connection) -> Result<usize, StoreError> {
    conn.prepare_cached("PRAGMA page_size")
        .map_err(db_err)?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|size| size as usize)
        .map_err(db_err)
}

/// Stores a block's bytes under `k`: the head `block_tail` keeps in
/// `blocks`, the tail (if any; else none left) in `block_tails`.
fn put_body(conn: &Connection, k: i64, body: &[u8], page_size: usize) -> Result<(), StoreError> {
    let (head, tail) = body.split_at(block_tail::head_len(body.len(), page_size));
    conn.prepare_cached("INSERT OR REPLACE INTO blocks (key, body) VALUES (?1, ?2)")
        .map_err(db_err)?
        .execute(params![k, head])
        .map_err(db_err)?;
    let (sql, args) = if tail.is_empty() {
        ("DELETE FROM block_tails WHERE key = ?1", params![k])
    } else {
        (
            "INSERT OR REPLACE INTO block_tails (key, body) VALUES (?1, ?2)",
            params![k, tail],
        )
    };
    conn.prepare_cached(sql)
        .map_err(db_err)?
        .execute(args)
        .map_err(db_err)?;
    Ok(())
}

/// Whole blocks read a query at a time by `cut_whole_blocks`.
const CUT_BATCH: i64 = if cfg!(test) { 2 } else { 1000 };

/// Cuts the whole blocks of a file from before version 10 that
/// `block_tail` would cut, in the caller's transaction, `CUT_BATCH` rows a
/// query: how many were cut.
pub fn cut_whole_blocks(tx: &Connection) -> Result<usize, StoreError> {
    let page_size = page_size(tx)?;
    let (mut cut, mut after) = (0, i64::MIN);
    loop {
        let batch: Vec<(i64, Vec<u8>)> = tx
            .prepare_cached(
                "SELECT key, body FROM blocks b WHERE key > ?1
                 AND NOT EXISTS (SELECT 1 FROM block_tails t WHERE t.key = b.key)
                 ORDER BY key LIMIT ?2",
            )
            .map_err(db_err)?
            .query_map(params![after, CUT_BATCH], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
        let Some((last, _)) = batch.last() else {
            return Ok(cut);
        };
        after = *last;
        for (k, body) in batch {
            if block_tail::head_len(body.len(), page_size) < body.len() {
                put_body(tx, k, &body, page_size)?;
                cut += 1;
            }
        }
    }
}

/// Writes readings of one device's day into its own block (not one of
/// several days: `day_merge::write_day` takes those), in the caller's
/// transaction: the block's and segments' readings, then the day's hot rows
/// (moved out of the family tables), then `new` (its own order: the last of
/// a time wins), each replacing the one before at the same time. With `new`
/// empty this seals the day, and merges its segments. Returns where the day
/// now ends (`None`: it is empty), and how many readings it holds.
pub fn write_day(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    day: i64,
    new: Vec<Reading>,
) -> Result<(Option<DayEnd>, usize), StoreError> {
    let mut all = load(tx, device, device_id, day)?;
    all.extend(hot_rows(tx, device, device_id, day)?);
    all.extend(new);
    let all = block::normalize(all);
    put(tx, device, day, &all)?;
    let end = all.last().map(|r| DayEnd {
        day,
        last: r.timestamp.millis(),
        next_seq: 1,
    });
    Ok((end, all.len()))
}

/// Writes `new` into the block of several days keyed by its first day
/// `first`, which holds `day`, with the day's hot rows: the whole block
/// encoded again.
pub fn write_into_block(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    (first, day): (i64, i64),
    new: Vec<Reading>,
) -> Result<(), StoreError> {
    let mut all = load_block(tx, device, device_id, first)?;
    all.extend(hot_rows(tx, device, device_id, day)?);
    all.extend(new);
    put(tx, device, first, &block::normalize(all))
}

/// A day's hot rows, taken out of the family tables.
fn hot_rows(
    tx: &Connection,
    device: i64,
    device_id: &DeviceId,
    day: i64,
) -> Result<Vec<Reading>, StoreError> {
    let bounds = day_bounds(day);
    let hot = rows::device_readings(tx, device, device_id, bounds, Order::Asc, usize::MAX >> 1)?;
    if !hot.is_empty() {
        rows::delete_range(tx, device, bounds)?;
    }
    Ok(hot)
}

/// Appends readings of a sealed day, in strictly increasing time and all
/// after `end.last` (the caller's rule: then the day stays in order), as
/// its next segment. Returns where the day now ends.
pub fn append(
    tx: &Connection,
    device: i64,
    end: DayEnd,
    new: &[&Reading],
) -> Result<DayEnd, StoreError> {
    let Some(newest) = new.last() else {
        return Ok(end);
    };
    debug_assert!(new[0].timestamp.millis() > end.last);
    let body = block::encode(new).map_err(|e| {
        StoreError::Corrupt(format!(
            "segment of device {device} on day {}: {e}",
            end.day
        ))
    })?;
    tx.prepare_cached("INSERT INTO day_segments (key, seq, body) VALUES (?1, ?2, ?3)")
        .map_err(db_err)?
        .execute(params![key(device, end.day), end.next_seq, body])
        .map_err(db_err)?;
    Ok(DayEnd {
        day: end.day,
        last: newest.timestamp.millis(),
        next_seq: end.next_seq + 1,
    })
}

/// The header of the block keyed by its first day `day`, read from its head
/// (a header is far shorter than a head), and the block's whole length.
/// `None` when there is no such block, or its head does not hold its
/// header (then it is not one to join).
pub fn head_header(
    conn: &Connection,
    device: i64,
    day: i64,
) -> Result<Option<(block::BlockHeader, usize)>, StoreError> {
    let row: Option<(Vec<u8>, i64)> = conn
        .prepare_cached(
            "SELECT body, length(body) + coalesce((SELECT length(t.body) FROM block_tails t
               WHERE t.key = b.key), 0) FROM blocks b WHERE key = ?1",
        )
        .map_err(db_err)?
        .query_row(params![key(device, day)], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(db_err)?;
    Ok(row.and_then(|(head, len)| {
        block::header(&head)
            .ok()
            .map(|header| (header, len as usize))
    }))
}

/// Whether a device's day has segments.
pub fn has_segments(conn: &Connection, device: i64, day: i64) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT 1 FROM day_segments WHERE key = ?1 LIMIT 1")
        .map_err(db_err)?
        .query_row(params![key(device, day)], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
        .map_err(db_err)
}

/// The first day of the device's last block before `day` (`Order::Desc`)
/// or first block after it (`Order::Asc`).
pub fn first_day_beside(
    conn: &Connection,
    device: i64,
    day: i64,
    order: Order,
) -> Result<Option<i64>, StoreError> {
    let (sql, bounds) = match order {
        Order::Desc => (
            "SELECT key FROM blocks WHERE key >= ?1 AND key < ?2 ORDER BY key DESC LIMIT 1",
            (key(device, 0), key(device, day)),
        ),
        Order::Asc => (
            "SELECT key FROM blocks WHERE key > ?1 AND key <= ?2 ORDER BY key LIMIT 1",
            (key(device, day), key(device, LAST_DAY)),
        ),
    };
    conn.prepare_cached(sql)
        .map_err(db_err)?
        .query_row(params![bounds.0, bounds.1], |r| r.get::<_, i64>(0))
        .optional()
        .map(|k| k.map(|k| k & LAST_DAY))
        .map_err(db_err)
}

/// The first day of a device that has segments, to merge into its block.
pub fn first_segmented(conn: &Connection, device: i64) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached("SELECT key FROM day_segments WHERE key BETWEEN ?1 AND ?2 LIMIT 1")
        .map_err(db_err)?
        .query_row(params![key(device, 0), key(device, LAST_DAY)], |r| {
            r.get::<_, i64>(0)
        })
        .optional()
        .map(|k| k.map(|k| k & LAST_DAY))
        .map_err(db_err)
}

/// The first day of a device that has hot rows and is closed at `now_ms`.
pub fn first_unsealed(
    conn: &Connection,
    device: i64,
    now_ms: i64,
) -> Result<Option<i64>, StoreError> {
    Ok(rows::oldest_time(conn, device)?
        .map(day_of)
        .filter(|day| closed(*day, now_ms)))
}

/// At most `n` of a device's sealed readings in `bounds`, in `order`, that
/// `keep` keeps (and maps; `None` keeps all), with how many readings were
/// decoded. Only the readings that can be returned are built.
pub fn readings(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    bounds: Bounds,
    order: Order,
    n: usize,
    mut keep: Option<&mut dyn FnMut(Reading) -> Option<Reading>>,
) -> Result<(Vec<Reading>, usize), StoreError> {
    let mut out = Vec::new();
    let mut decoded = 0;
    if bounds.is_empty() || n == 0 {
        return Ok((out, decoded));
    }
    let mut stmt = conn.prepare_cached(rows_sql(order)).map_err(db_err)?;
    let mut found = stmt
        .query(params![
            key(
                device,
                block_spans::first_day(conn, device, day_of(bounds.lo))?
            ),
            key(device, day_of(bounds.hi))
        ])
        .map_err(db_err)?;
    while let Some(row) = found.next().map_err(db_err)? {
        let (day, body) = day_and_body(row)?;
        let wanted = n - out.len();
        let limited = keep.is_none();
        let mut day_readings = block::decode_picked(device_id, &body, |times| {
            decoded += times.len();
            let lo = times.partition_point(|t| *t < bounds.lo);
            let hi = times.partition_point(|t| *t <= bounds.hi).max(lo);
            match (limited, order) {
                (false, _) => lo..hi,
                (true, Order::Asc) => lo..hi.min(lo.saturating_add(wanted)),
                (true, Order::Desc) => hi.saturating_sub(wanted).max(lo)..hi,
            }
        })
        .map_err(|e| corrupt(device_id, day, e))?;
        if order == Order::Desc {
            day_readings.reverse();
        }
        if keep.is_none() {
            // All of them (the decode picked at most `wanted`): the day's
            // vector itself when it is the first, else appended whole, not
            // moved reading by reading into a vector grown as it goes.
            if out.is_empty() {
                out = day_readings;
            } else {
                out.append(&mut day_readings);
            }
            if out.len() == n {
                return Ok((out, decoded));
            }
            continue;
        }
        for r in day_readings {
            let kept = match keep.as_mut() {
                Some(keep) => keep(r),
                None => Some(r),
            };
            if let Some(r) = kept {
                out.push(r);
                if out.len() == n {
                    return Ok((out, decoded));
                }
            }
        }
    }
    Ok((out, decoded))
}

/// A `ROWS` row (key, seq, body, tail): its day and its block's bytes,
/// the head alone (borrowed) when there is no tail.
fn day_and_body<'r>(row: &'r rusqlite::Row<'_>) -> Result<(i64, Cow<'r, [u8]>), StoreError> {
    let k: i64 = row.get(0).map_err(db_err)?;
    let blob = |i: usize| -> Result<Option<&'r [u8]>, StoreError> {
        row.get_ref(i)
            .map_err(db_err)?
            .as_blob_or_null()
            .map_err(|e| StoreError::Unavailable(format!("sqlite: {e}")))
    };
    let head = blob(2)?.ok_or_else(|| StoreError::Corrupt(format!("block {k}: no body")))?;
    let body = match blob(3)? {
        None => Cow::Borrowed(head),
        Some(tail) => Cow::Owned([head, tail].concat()),
    };
    Ok((k & LAST_DAY, body))
}

/// A device's sealed rows of a run of days, read in one pass, oldest
/// first, for a caller that takes the days in order: each day's bodies
/// from one query, not one a day (a zone's year of hours asked 366, a
/// sixth of its instructions).
pub struct DayRows<'s> {
    rows: rusqlite::Rows<'s>,
    /// The rows read and not yet passed: their day and body, in order.
    window: Vec<(i64, Vec<u8>)>,
    done: bool,
}

impl<'s> DayRows<'s> {
    /// The rows of the days `days`, through `stmt` (`day_rows_statement`).
    pub fn new(
        stmt: &'s mut rusqlite::CachedStatement<'_>,
        device: i64,
        days: std::ops::RangeInclusive<i64>,
    ) -> Result<Self, StoreError> {
        let rows = stmt
            .query(params![
                key(device, *days.start()),
                key(device, *days.end())
            ])
            .map_err(db_err)?;
        Ok(DayRows {
            rows,
            window: Vec::new(),
            done: false,
        })
    }

    /// The bodies of `day`'s sealed rows, in order: its block (with its
    /// tail), then its segments; or the block of several days that holds
    /// it, which begins on `first` (`block_spans`; `first` is `day` for a
    /// day's own block). `first` and `day` may not go back from one call
    /// to the next (rows before `first` are let go).
    pub fn bodies(
        &mut self,
        first: i64,
        day: i64,
    ) -> Result<impl Iterator<Item = &[u8]> + Clone, StoreError> {
        while !self.done && self.window.last().is_none_or(|(d, _)| *d <= day) {
            match self.rows.next().map_err(db_err)? {
                Some(row) => {
                    let (d, body) = day_and_body(row)?;
                    self.window.push((d, body.into_owned()));
                }
                None => self.done = true,
            }
        }
        let passed = self.window.partition_point(|(d, _)| *d < first);
        self.window.drain(..passed);
        let end = self.window.partition_point(|(d, _)| *d <= day);
        Ok(self.window[..end].iter().map(|(_, b)| b.as_slice()))
    }
}

/// The statement `DayRows` reads through.
pub fn day_rows_statement(conn: &Connection) -> Result<rusqlite::CachedStatement<'_>, StoreError> {
    conn.prepare_cached(ROWS[0]).map_err(db_err)
}

/// The rollups of `span` of a device's sealed readings of `day`, given as
/// its rows' bodies (`DayRows::bodies`), entered with `entering`, from the
/// blocks' columns (`rollup::extend_spans_from_columns`): what
/// `rollup::spans` makes of the day's readings, without building them (of
/// a block of several days, those of all its days; `day` names it in an
/// error).
pub fn spans_of_bodies<'b>(
    device_id: &DeviceId,
    day: i64,
    bodies: impl IntoIterator<Item = &'b [u8]>,
    span: domain::model::Span,
    entering: domain::aggregate::counter::Chain,
) -> Result<Vec<domain::aggregate::rollup::Rollup>, StoreError> {
    let mut out = Vec::new();
    for body in bodies {
        let columns = block::decode_columns(body).map_err(|e| corrupt(device_id, day, e))?;
        domain::aggregate::rollup::extend_spans_from_columns(&mut out, span, entering, &columns)
            .map_err(|e| corrupt(device_id, day, block::BlockError::Corrupt(e)))?;
    }
    Ok(out)
}

/// A device's blocks and segments of the days `days` with their day, oldest
/// first (a day with segments comes more than once; a block of several
/// days with its first day, which may be before `days`), headers only: for
/// counts and box tests without decoding.
pub fn headers(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    days: std::ops::RangeInclusive<i64>,
) -> Result<Vec<(i64, block::BlockHeader)>, StoreError> {
    let mut stmt = conn.prepare_cached(ROWS[0]).map_err(db_err)?;
    let mut found = stmt
        .query(params![
            key(device, block_spans::first_day(conn, device, *days.start())?),
            key(device, *days.end())
        ])
        .map_err(db_err)?;
    let mut out = Vec::new();
    while let Some(row) = found.next().map_err(db_err)? {
        let (day, body) = day_and_body(row)?;
        out.push((
            day,
            block::header(&body).map_err(|e| corrupt(device_id, day, e))?,
        ));
    }
    Ok(out)
}

/// How many readings every device's blocks and segments hold: each row's
/// count alone, the tables read in their stored order (a backup's check
/// counts a year of four devices, 9,812 rows, in about 2 ms with the
/// file's opening). A block's count is in its first bytes, which its head
/// holds (a head is at least a sixth of a page): a tail is read only where
/// the head alone does not give the count, so a file whose every block is
/// cut (2 KB pages) is counted without a join.
pub fn sealed_readings(conn: &Connection) -> Result<u64, StoreError> {
    let mut sealed = 0u64;
    for (sql, with_tails) in [
        ("SELECT key, 0, body, NULL FROM blocks", true),
        ("SELECT key, seq, body, NULL FROM day_segments", false),
    ] {
        let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
        let mut rows = stmt.query([]).map_err(db_err)?;
        while let Some(row) = rows.next().map_err(db_err)? {
            let (day, head) = day_and_body(row)?;
            let counted = match block::count(&head) {
                Err(_) if with_tails => match tail(conn, row.get(0).map_err(db_err)?)? {
                    Some(tail) => block::count(&[&head[..], &tail].concat()),
                    None => block::count(&head),
                },
                counted => counted,
            };
            let count = counted.map_err(|e| {
                let number = row.get::<_, i64>(0).unwrap_or_default() >> 32;
                match super::names::device(conn, number) {
                    Ok(device) => corrupt(&device, day, e),
                    Err(_) => corrupt_numbered(number, day, e),
                }
            })?;
            sealed += u64::from(count);
        }
    }
    Ok(sealed)
}

/// The tail of the block keyed `k`, if it has one.
fn tail(conn: &Connection, k: i64) -> Result<Option<Vec<u8>>, StoreError> {
    conn.prepare_cached("SELECT body FROM block_tails WHERE key = ?1")
        .map_err(db_err)?
        .query_row([k], |r| r.get(0))
        .optional()
        .map_err(db_err)
}

/// The first and last times of a device's sealed readings.
pub fn time_span(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
) -> Result<Option<(i64, i64)>, StoreError> {
    let edge = |order: Order| -> Result<Option<block::BlockHeader>, StoreError> {
        let mut stmt = conn
            .prepare_cached(match order {
                Order::Asc => EDGE_ROWS[0],
                Order::Desc => EDGE_ROWS[1],
            })
            .map_err(db_err)?;
        let mut rows = stmt
            .query(params![key(device, 0), key(device, LAST_DAY)])
            .map_err(db_err)?;
        match rows.next().map_err(db_err)? {
            None => Ok(None),
            Some(row) => {
                let (day, body) = day_and_body(row)?;
                block::header(&body)
                    .map(Some)
                    .map_err(|e| corrupt(device_id, day, e))
            }
        }
    };
    Ok(match (edge(Order::Asc)?, edge(Order::Desc)?) {
        (Some(first), Some(last)) => Some((first.first.millis(), last.last.millis())),
        _ => None,
    })
}

/// Removes a device's sealed readings before `before`: whole blocks, and the
/// older part of the block `before` falls in. Returns how many went. No
/// block of several days may reach `before`'s day (`day_merge::delete_before`
/// makes them blocks a day first).
pub fn delete_before(
    tx: &Connection,
    device: i64,
    device_id: &DeviceId,
    before: i64,
) -> Result<usize, StoreError> {
    let day = day_of(before);
    let mut gone = 0;
    if day > 0 {
        for (_, header) in headers(tx, device, device_id, 0..=day - 1)? {
            gone += header.count as usize;
        }
    }
    for sql in [
        "DELETE FROM blocks WHERE key >= ?1 AND key < ?2",
        "DELETE FROM block_tails WHERE key >= ?1 AND key < ?2",
        "DELETE FROM day_segments WHERE key >= ?1 AND key < ?2",
    ] {
        tx.prepare_cached(sql)
            .map_err(db_err)?
            .execute(params![key(device, 0), key(device, day)])
            .map_err(db_err)?;
    }
    block_spans::remove_before(tx, device, day)?;
    let straddling = load(tx, device, device_id, day)?;
    let kept: Vec<Reading> = straddling
        .iter()
        .filter(|r| r.timestamp.millis() >= before)
        .cloned()
        .collect();
    if kept.len() != straddling.len() {
        gone += straddling.len() - kept.len();
        put(tx, device, day, &kept)?;
    }
    Ok(gone)
}
