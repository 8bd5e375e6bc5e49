//! A slow series' closed days merged into one block (schema version 13,
//! `block_spans`), and such a block made blocks a day again.
//!
//! A device's closed day, once written (sealed, or written to as history),
//! joins the device's block before it when the day's block is short (under
//! a quarter of a page, and a reading every two minutes or slower), neither
//! holds an energy counter, the block began at most six days before and
//! holds as few readings a day, and the merged block still fits a page. The
//! merged days' rollup rows go: a day of such a block is computed from its
//! columns when read (`rollups`), entered with the chain of the stored
//! rollup before the block (no counter in the block, so the chain passes
//! through its days unchanged).
//!
//! Why (docs/embedded-store.md, "Where a slow sensor's bytes go"): a slow
//! sensor's day costs 173 bytes of block and 64 of rollup row; a week a
//! block spreads a block's header over seven days, and the rollups cost
//! nothing on disk.

use super::blocks::{self, day_bounds};
use super::{block_spans, rollups};
use domain::aggregate::counter::{Counter, Counters};
use domain::aggregate::rollup::spans;
use domain::block;
use domain::model::{DeviceId, Reading, Span, DAY_MS};
use rusqlite::Connection;
use storage::{Order, StoreError};

/// Most days a block of several days spans (a week).
pub const MOST_DAYS: i64 = 7;

/// Most readings a day merged may hold: a reading every two minutes. A
/// series that reports every minute spreads its block's header and its
/// rollup over enough readings, and its raw days are read a block a day.
pub const MOST_READINGS: u32 = 720;

fn header_counts_energy(header: &block::BlockHeader) -> bool {
    header
        .quantities
        .iter()
        .any(|q| Counter::of_quantity(q.quantity).is_some())
}

/// Merges a device's sealed `day` (its block alone, no segment, or a block
/// of several days that begins on it) into the block before it, when the
/// rules above allow: whether it did.
pub fn into_previous(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    day: i64,
) -> Result<bool, StoreError> {
    if block_spans::holding(tx, device, day)?.is_some_and(|(first, _)| first != day) {
        return Ok(false);
    }
    joined_to_previous(tx, (device, device_id), day)
}

/// `into_previous` of a `day` known to begin its block.
fn joined_to_previous(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    day: i64,
) -> Result<bool, StoreError> {
    // The two blocks' headers first (read from their heads): most days
    // that are not a slow series' stop here, before a block is decoded.
    let Some((header, len)) = blocks::head_header(tx, device, day)? else {
        return Ok(false);
    };
    let last = blocks::day_of(header.last.millis());
    if !few_readings(&header, last - day + 1) {
        return Ok(false);
    }
    let Some(first) = blocks::first_day_beside(tx, device, day, Order::Desc)? else {
        return Ok(false);
    };
    if last - first >= MOST_DAYS {
        return Ok(false);
    }
    let Some((before, before_len)) = blocks::head_header(tx, device, first)? else {
        return Ok(false);
    };
    let days = blocks::day_of(before.last.millis()) - first + 1;
    if !few_readings(&before, days) {
        return Ok(false);
    }
    let page = blocks::page_size(tx)?;
    if !short(len, last - day + 1, page)
        || !short(before_len, days, page)
        || blocks::has_segments(tx, device, first)?
        || blocks::has_segments(tx, device, day)?
    {
        return Ok(false);
    }
    let mut readings = blocks::load_block(tx, device, device_id, first)?;
    readings.extend(blocks::load_block(tx, device, device_id, day)?);
    let merged = block::encode(&readings)
        .map_err(|e| StoreError::Corrupt(format!("block of {device_id} on day {day}: {e}")))?;
    if merged.len() > page {
        return Ok(false);
    }
    blocks::put_encoded(tx, device, (day, day), None)?;
    blocks::put_encoded(tx, device, (first, last), Some(&merged))?;
    rollups::delete_days(tx, device, first * DAY_MS, (last + 1) * DAY_MS)?;
    Ok(true)
}

/// Whether a block of `days` days is a slow series': at most
/// `MOST_READINGS` a day, and no energy counter.
fn few_readings(header: &block::BlockHeader, days: i64) -> bool {
    i64::from(header.count) <= days.max(1) * i64::from(MOST_READINGS)
        && !header_counts_energy(header)
}

/// Whether a block of `days` days, of `len` bytes, is short for its days:
/// at most a quarter of a page a day.
fn short(len: usize, days: i64, page: usize) -> bool {
    len as i64 <= days.max(1) * (page / 4) as i64
}

/// Writes readings of one device's closed day (`blocks::write_day`): into
/// the block of several days that holds it, encoded again whole, or into
/// the day's own block, which then joins the block before it or is joined
/// by the one after (history written in batches seals a day before the day
/// after). A reading with an energy counter first makes a block of several
/// days blocks a day again. Returns where the day now ends, for the next
/// batch to append a segment to: `None` when it is empty or in a block of
/// several days (whose later days come after it).
pub fn write_day(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    day: i64,
    new: Vec<Reading>,
) -> Result<Option<blocks::DayEnd>, StoreError> {
    if let Some((first, _)) = block_spans::holding(tx, device, day)? {
        if !new.iter().any(|r| Counters::of(r).any()) {
            blocks::write_into_block(tx, (device, device_id), (first, day), new)?;
            return Ok(None);
        }
        // A counter's readings make the days' chain depend on them.
        unpack(tx, (device, device_id), first)?;
    }
    let (end, readings) = blocks::write_day(tx, (device, device_id), day, new)?;
    // A day of a series that reports every minute is not looked at again.
    let merged = end.is_some()
        && readings <= MOST_READINGS as usize
        && (joined_to_previous(tx, (device, device_id), day)?
            | next_into(tx, (device, device_id), day)?);
    Ok(end.filter(|_| !merged))
}

/// Removes a device's sealed readings before `before`
/// (`blocks::delete_before`), after making every block of several days it
/// reaches blocks a day, their days' rollups stored: rollups outlive their
/// readings, and the rest of a week reads on. Returns how many went.
pub fn delete_before(
    tx: &Connection,
    device: i64,
    device_id: &DeviceId,
    before: i64,
) -> Result<usize, StoreError> {
    for (first, _) in block_spans::overlapping(tx, device, 0..=blocks::day_of(before))? {
        unpack(tx, (device, device_id), first)?;
    }
    blocks::delete_before(tx, device, device_id, before)
}

/// Merges the device's next block after `day` (a day's, not yet merged)
/// into the block that holds `day`, by the same rules: whether it did.
pub fn next_into(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    day: i64,
) -> Result<bool, StoreError> {
    match blocks::first_day_beside(tx, device, day, Order::Asc)? {
        Some(next) => into_previous(tx, (device, device_id), next),
        None => Ok(false),
    }
}

/// Makes the block of several days keyed by its first day `first` blocks
/// a day again, its days' rollups stored (what they were computed as).
pub fn unpack(
    tx: &Connection,
    (device, device_id): (i64, &DeviceId),
    first: i64,
) -> Result<(), StoreError> {
    let readings = blocks::load_block(tx, device, device_id, first)?;
    let entering = rollups::entering(tx, device, first * DAY_MS)?;
    let days = spans(Span::Day, entering, readings.iter());
    blocks::put_encoded(tx, device, (first, first), None)?;
    let mut rest = readings.as_slice();
    while let Some(r) = rest.first() {
        let day = blocks::day_of(r.timestamp.millis());
        let end = rest.partition_point(|r| r.timestamp.millis() <= day_bounds(day).hi);
        blocks::put(tx, device, day, &rest[..end])?;
        rest = &rest[end..];
    }
    // Days closed long before any clock the writer reads (they were joined
    // as closed days), and now held by no block of several days: stored.
    for d in &days {
        rollups::put(tx, device, d, i64::MAX)?;
    }
    Ok(())
}
