//! Rollups on the embedded store (docs/rollups.md): the rows and how
//! they are read. What to recompute is the rollups use case's
//! (`domain::rollup_upkeep::keep`, run in the readings' write transaction, and
//! `rebuild`), over `RollupSpans` (`rollup_spans.rs`).
//!
//! - Day rollups: one row per device and day; the body is the rollup's
//!   stored shape, each number in its shortest exact form
//!   (`storage::format::rollup_body`, version 4; version 3, and versions 1 and 2 in
//!   postcard's binary form, are still read).
//! - Hour rollups are not stored (since version 4): 24 rows a day cost more
//!   bytes than the readings' own block. An hour rollup is computed when
//!   read, from its day's readings (one block) and the chain its day
//!   rollup entered with, by the same fold that would have stored it.

use super::block_spans;
use super::blocks;
use super::hour_cache::{self, CachedHour, HourCache};
use super::rows::Bounds;
use super::series;
use super::{db_err, StoreError};
use domain::aggregate::counter::Chain;
use domain::aggregate::rollup::{spans, Rollup, Tally};
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::{DeviceId, RoomId, Span, TimeRange, Timestamp};
use rusqlite::{params, Connection, OptionalExtension};
use storage::format::rollup::{from_postcard, postcard_version, Stored, StoredV1};
use storage::format::rollup_body;
use storage::Order;

/// Most readings one span may hold (a day of readings every second).
pub const MAX_SPAN_READINGS: usize = 86_400;

fn code(span: Span) -> i64 {
    match span {
        Span::Hour => 0,
        Span::Day => 1,
    }
}

fn decode(span: Span, start: i64, body: &[u8]) -> Result<Rollup, StoreError> {
    decode_sized(span, start, body, None, None)
}

/// `decode`, adding the rollup's DynamoDB item size (`billing::rollup_size`
/// for a device id of `sized.0` bytes) to `sized.1`: from the body's size
/// kept with it (`size`), or, for a rollup written before version 6, from
/// the stored shape just decoded.
fn decode_sized(
    span: Span,
    start: i64,
    body: &[u8],
    size: Option<i64>,
    sized: Option<(usize, &mut usize)>,
) -> Result<Rollup, StoreError> {
    use storage::format::billing;
    let corrupt =
        |e: String| StoreError::Corrupt(format!("{} rollup at {start}: {e}", span.as_str()));
    let start_ms = start;
    let start = Timestamp::from_millis(start).map_err(|e| corrupt(e.to_string()))?;
    if postcard_version(body) == Some(1) {
        // Written before each counter was followed on its own: sized as
        // this build would store it.
        let stored: StoredV1<&str> =
            postcard::from_bytes(body).map_err(|e| corrupt(e.to_string()))?;
        let rollup = stored.decode(span, start).map_err(corrupt)?;
        if let Some((pk_len, bytes)) = sized {
            *bytes += billing::rollup_size(pk_len, &Stored::from(&rollup));
        }
        return Ok(rollup);
    }
    let stored = stored_of(start_ms, body).map_err(corrupt)?;
    if let Some((pk_len, bytes)) = sized {
        *bytes += match size.and_then(|s| usize::try_from(s).ok()) {
            Some(body_size) => billing::rollup_item_size(pk_len, body_size),
            None => billing::rollup_size(pk_len, &stored),
        };
    }
    stored.decode(span, start).map_err(corrupt)
}

/// The stored shape in a body of version 2 (postcard) or 3 to 5
/// (`rollup_body`) of a rollup starting at `start_ms`.
pub(super) fn stored_of(start_ms: i64, body: &[u8]) -> Result<Stored<&str>, String> {
    match postcard_version(body) {
        Some(v) if rollup_body::reads(v) => rollup_body::decode(body, start_ms),
        _ => from_postcard(body),
    }
}

/// The newest rollup of a span starting before `before`.
pub fn latest_before(
    conn: &Connection,
    device: i64,
    span: Span,
    before: i64,
) -> Result<Option<Rollup>, StoreError> {
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT start, body FROM rollups WHERE device = ?1 AND span = ?2 AND start < ?3
             ORDER BY start DESC LIMIT 1",
        )
        .map_err(db_err)?
        .query_row(params![device, code(span), before], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(db_err)?;
    row.map(|(start, body)| decode(span, start, &body))
        .transpose()
}

/// The first rollup of a span starting after `after`.
pub fn first_after(
    conn: &Connection,
    device: i64,
    span: Span,
    after: i64,
) -> Result<Option<Rollup>, StoreError> {
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT start, body FROM rollups WHERE device = ?1 AND span = ?2 AND start > ?3
             ORDER BY start LIMIT 1",
        )
        .map_err(db_err)?
        .query_row(params![device, code(span), after], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(db_err)?;
    row.map(|(start, body)| decode(span, start, &body))
        .transpose()
}

/// Stores a rollup, written as at `now_ms` (the writer's clock); a day of a
/// block of several days (`block_spans`) is computed from its block when
/// read, so its row goes instead. Only a day closed at `now_ms` can be in
/// one (the writer joins closed days alone): an open day's (every appended
/// batch's) is stored without a look. (A row left for a day of such a
/// block, were the clock to go back, is passed over by the reads:
/// `each_day`.)
pub fn put(conn: &Connection, device: i64, r: &Rollup, now_ms: i64) -> Result<(), StoreError> {
    let day = blocks::day_of(r.start.millis());
    if r.span == Span::Day
        && blocks::closed(day, now_ms)
        && block_spans::holding(conn, device, day)?.is_some()
    {
        return delete(conn, device, r.span, r.start.millis());
    }
    let (body, size) = stored_form(r)?;
    let size = size as i64;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO rollups (device, span, start, body, size)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .map_err(db_err)?
    .execute(params![device, code(r.span), r.start.millis(), body, size])
    .map_err(db_err)?;
    Ok(())
}

/// Deletes the rollup of `span` at `start`.
pub fn delete(conn: &Connection, device: i64, span: Span, start: i64) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM rollups WHERE device = ?1 AND span = ?2 AND start = ?3")
        .map_err(db_err)?
        .execute(params![device, code(span), start])
        .map_err(db_err)?;
    Ok(())
}

/// Deletes a device's day rollups starting in `from..to`.
pub fn delete_days(conn: &Connection, device: i64, from: i64, to: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "DELETE FROM rollups WHERE device = ?1 AND span = ?2 AND start >= ?3 AND start < ?4",
    )
    .map_err(db_err)?
    .execute(params![device, code(Span::Day), from, to])
    .map_err(db_err)?;
    Ok(())
}

/// The chain a device's day starting at `start` enters with when the days
/// since the last stored day rollup before it hold no counter (the days
/// of blocks of several days): the one that rollup leaves with.
pub fn entering(conn: &Connection, device: i64, start: i64) -> Result<Chain, StoreError> {
    Ok(latest_before(conn, device, Span::Day, start)?
        .map(|r| r.chain)
        .unwrap_or_default())
}

/// The starts of a device's stored rollups of `span` in `from..to`.
pub fn starts(
    conn: &Connection,
    device: i64,
    span: Span,
    from: i64,
    to: i64,
) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT start FROM rollups WHERE device = ?1 AND span = ?2 AND start >= ?3 AND start < ?4",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![device, code(span), from, to], |r| r.get(0))
        .map_err(db_err)?;
    rows.collect::<Result<_, _>>().map_err(db_err)
}

/// A device's rollups of a span that lie wholly inside `range`, oldest
/// first; with `sized` (a device id of that many bytes), also their items'
/// DynamoDB size (`billing::rollup_size`, what `read_units` meters): a day's
/// from its stored shape as it is decoded, an hour's (computed, not stored)
/// from the shape it would be stored in. Hours of sealed days are kept in
/// `cache` where one is given (`hour_cache`).
pub fn within(
    conn: &Connection,
    (device, device_id): (i64, &DeviceId),
    span: Span,
    range: &TimeRange,
    sized: Option<usize>,
    cache: Option<&HourCache>,
) -> Result<(Vec<Rollup>, usize), StoreError> {
    let mut bytes = 0;
    let found = match span {
        Span::Day => stored_within(
            conn,
            device,
            range,
            sized.map(|pk_len| (pk_len, &mut bytes)),
            cache,
        )?,
        Span::Hour => {
            let mut out = Vec::new();
            for day in hour_days(conn, (device, device_id), range, cache)? {
                match day {
                    DayHours::Computed(hours) => {
                        if let Some(pk_len) = sized {
                            bytes += hours
                                .iter()
                                .map(|h| {
                                    storage::format::billing::rollup_size(pk_len, &Stored::from(h))
                                })
                                .sum::<usize>();
                        }
                        out.extend(hours);
                    }
                    DayHours::Fresh(mut hours, kept, inside) => {
                        if let Some(pk_len) = sized {
                            bytes += kept[inside.clone()]
                                .iter()
                                .map(|h| storage::format::billing::rollup_item_size(pk_len, h.size))
                                .sum::<usize>();
                        }
                        out.extend(hours.drain(inside));
                    }
                    DayHours::Kept(hours, inside) => {
                        for h in &hours[inside] {
                            let sized = sized.map(|pk_len| (pk_len, &mut bytes));
                            out.push(decode_sized(
                                Span::Hour,
                                h.start,
                                &h.body,
                                Some(h.size as i64),
                                sized,
                            )?);
                        }
                    }
                }
            }
            out
        }
    };
    Ok((found, bytes))
}

/// The tallies of a device's hour rollups that lie wholly inside `range`,
/// oldest first, with their starts: of the readings that named `room`, or of
/// all of them (`None`; `None` as a tally where no reading named the room).
/// What `within` gives for hours, read from the kept hours' bodies where
/// they are kept (`rollup_body::tally`), without decoding them whole.
pub fn hour_tallies_within(
    conn: &Connection,
    (device, device_id): (i64, &DeviceId),
    range: &TimeRange,
    room: Option<&RoomId>,
    mut sized: Option<(usize, &mut usize)>,
    cache: Option<&HourCache>,
) -> Result<Vec<(Timestamp, Option<Tally>)>, StoreError> {
    let mut out = Vec::with_capacity(spans_in(Span::Hour, range));
    for day in hour_days(conn, (device, device_id), range, cache)? {
        match day {
            DayHours::Computed(hours) => {
                for h in hours {
                    if let Some((pk_len, bytes)) = sized.as_mut() {
                        **bytes +=
                            storage::format::billing::rollup_size(*pk_len, &Stored::from(&h));
                    }
                    out.push(h.into_tally(room));
                }
            }
            DayHours::Kept(hours, inside) | DayHours::Fresh(_, hours, inside) => {
                for h in &hours[inside] {
                    // The tally kept decoded, metered as its body.
                    if let Some((pk_len, bytes)) = sized.as_mut() {
                        **bytes += storage::format::billing::rollup_item_size(*pk_len, h.size);
                    }
                    let at = Timestamp::from_millis(h.start).map_err(|e| {
                        StoreError::Corrupt(format!("hour rollup at {}: {e}", h.start))
                    })?;
                    out.push((at, h.tally_of(room)));
                }
            }
        }
    }
    Ok(out)
}

pub fn stored_within(
    conn: &Connection,
    device: i64,
    range: &TimeRange,
    mut sized: Option<(usize, &mut usize)>,
    cache: Option<&HourCache>,
) -> Result<Vec<Rollup>, StoreError> {
    let span = Span::Day;
    let mut out = Vec::with_capacity(spans_in(span, range));
    each_day(conn, device, range, cache, |start, body, size| {
        let sized = sized.as_mut().map(|(len, bytes)| (*len, &mut **bytes));
        out.push(decode_sized(span, start, body, size, sized)?);
        Ok(())
    })?;
    Ok(out)
}

/// The tallies of a device's day rollups that lie wholly inside `range`,
/// oldest first, with their starts: of the readings that named `room`, or
/// of all of them (`None`; `None` as a tally where no reading named the
/// room). What `stored_within` gives, read from each body's first fields,
/// and its rooms' where a room is asked for (`rollup_body::tally`), where
/// it can be: a body in postcard's form, or one to be sized that was
/// stored without its size, is decoded whole.
pub fn day_tallies_within(
    conn: &Connection,
    device: i64,
    range: &TimeRange,
    room: Option<&RoomId>,
    mut sized: Option<(usize, &mut usize)>,
    cache: Option<&HourCache>,
) -> Result<Vec<(Timestamp, Option<Tally>)>, StoreError> {
    let span = Span::Day;
    let mut out = Vec::with_capacity(spans_in(span, range));
    each_day(conn, device, range, cache, |start, body, size| {
        out.push(body_tally(span, start, body, size, room, &mut sized)?);
        Ok(())
    })?;
    Ok(out)
}

/// A rollup body's start and tally (of the readings that named `room`, or
/// of all of them), metered into `sized`: read from the body's first fields
/// (`rollup_body::tally`) where it can be; a body in postcard's form, or one
/// to be sized that was stored without its size, is decoded whole.
fn body_tally(
    span: Span,
    start: i64,
    body: &[u8],
    size: Option<i64>,
    room: Option<&RoomId>,
    sized: &mut Option<(usize, &mut usize)>,
) -> Result<(Timestamp, Option<Tally>), StoreError> {
    body_read(
        (span, start, body, size),
        sized,
        |at| Ok((at, rollup_body::tally(body, room.map(RoomId::as_str))?)),
        |rollup| rollup.into_tally(room),
    )
}

/// A rollup body's counters (`RollupCounters`), metered into `sized`: read
/// past its tallies (`rollup_body::counters`) where it can be, as
/// `body_tally` reads.
fn body_counters(
    span: Span,
    start: i64,
    body: &[u8],
    size: Option<i64>,
    sized: &mut Option<(usize, &mut usize)>,
) -> Result<RollupCounters, StoreError> {
    body_read(
        (span, start, body, size),
        sized,
        |at| rollup_body::counters(body, start)?.decode(span, at),
        |rollup| RollupCounters::from(&rollup),
    )
}

/// What `light` reads of a rollup body of `span` starting at `start` (its
/// start given), metered into `sized` from the `size` kept with it; a body
/// in postcard's form, or one to be sized that was stored without its
/// size, is decoded whole and given to `whole`.
fn body_read<T>(
    (span, start, body, size): (Span, i64, &[u8], Option<i64>),
    sized: &mut Option<(usize, &mut usize)>,
    light: impl FnOnce(Timestamp) -> Result<T, String>,
    whole: impl FnOnce(Rollup) -> T,
) -> Result<T, StoreError> {
    let body_size = size.and_then(|s| usize::try_from(s).ok());
    match postcard_version(body) {
        Some(v) if rollup_body::reads(v) && (body_size.is_some() || sized.is_none()) => {
            let corrupt = |e: String| {
                StoreError::Corrupt(format!("{} rollup at {start}: {e}", span.as_str()))
            };
            let at = Timestamp::from_millis(start).map_err(|e| corrupt(e.to_string()))?;
            let read = light(at).map_err(corrupt)?;
            if let (Some((pk_len, bytes)), Some(body_size)) = (sized.as_mut(), body_size) {
                **bytes += storage::format::billing::rollup_item_size(*pk_len, body_size);
            }
            Ok(read)
        }
        _ => {
            let sized = sized.as_mut().map(|(len, bytes)| (*len, &mut **bytes));
            Ok(whole(decode_sized(span, start, body, size, sized)?))
        }
    }
}

/// The counters of a device's rollups of a span that lie wholly inside
/// `range`, oldest first (`RollupCounters`): what `within` gives, read past
/// the tallies where the bodies allow, metered as `within` meters them.
pub fn counters_within(
    conn: &Connection,
    (device, device_id): (i64, &DeviceId),
    span: Span,
    range: &TimeRange,
    mut sized: Option<(usize, &mut usize)>,
    cache: &HourCache,
) -> Result<Vec<RollupCounters>, StoreError> {
    use storage::format::billing;
    let mut out = Vec::with_capacity(spans_in(span, range));
    if span == Span::Day {
        each_day(conn, device, range, Some(cache), |start, body, size| {
            out.push(body_counters(span, start, body, size, &mut sized)?);
            Ok(())
        })?;
        return Ok(out);
    }
    for day in hour_days(conn, (device, device_id), range, Some(cache))? {
        match day {
            DayHours::Computed(hours) => {
                for h in &hours {
                    if let Some((pk_len, bytes)) = sized.as_mut() {
                        **bytes += billing::rollup_size(*pk_len, &Stored::from(h));
                    }
                    out.push(RollupCounters::from(h));
                }
            }
            DayHours::Fresh(hours, kept, inside) => {
                for (h, k) in hours[inside.clone()].iter().zip(&kept[inside]) {
                    if let Some((pk_len, bytes)) = sized.as_mut() {
                        **bytes += billing::rollup_item_size(*pk_len, k.size);
                    }
                    out.push(RollupCounters::from(h));
                }
            }
            DayHours::Kept(kept, inside) => {
                for h in &kept[inside] {
                    if let Some(counters) = &h.counters {
                        // Kept decoded, metered as its body.
                        if let Some((pk_len, bytes)) = sized.as_mut() {
                            **bytes += billing::rollup_item_size(*pk_len, h.size);
                        }
                        out.push(RollupCounters::clone(counters));
                        continue;
                    }
                    let size = Some(h.size as i64);
                    out.push(body_counters(
                        Span::Hour,
                        h.start,
                        &h.body,
                        size,
                        &mut sized,
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// How many spans `range` may hold: what a list of its rollups is sized
/// for, so a year of days or of hours is not grown and copied.
pub(super) fn spans_in(span: Span, range: &TimeRange) -> usize {
    let spans = (range.to().millis() - range.from().millis()) / span.millis() + 1;
    spans.clamp(0, 366 * 24) as usize
}

/// Each day rollup of a device that lies wholly inside `range`, oldest
/// first: its start, body and the body's size kept with it. The days of
/// blocks of several days (`block_spans`), which have no row, come computed
/// from their blocks, in the form and size a row would have, and are kept
/// in `cache` where one is given.
fn each_day(
    conn: &Connection,
    device: i64,
    range: &TimeRange,
    cache: Option<&HourCache>,
    mut each: impl FnMut(i64, &[u8], Option<i64>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let span = Span::Day;
    let last_start = range.to().millis() - span.millis();
    let from = range.from().millis();
    let blocks = computed_days(conn, device, from, last_start, cache)?;
    let mut computed = blocks
        .iter()
        .flat_map(|days| days.iter())
        .filter(|d| (from..=last_start).contains(&d.start))
        .peekable();
    let mut stmt = conn
        .prepare_cached(
            "SELECT start, body, size FROM rollups WHERE device = ?1 AND span = ?2
               AND start >= ?3 AND start <= ?4 ORDER BY start",
        )
        .map_err(db_err)?;
    let mut rows = stmt
        .query(params![
            device,
            code(span),
            range.from().millis(),
            last_start
        ])
        .map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        // Read as the columns' own types (`get_ref`, not `get`'s conversions:
        // a year of days spent a twentieth of its reads there).
        let column = |i| row.get_ref(i).map_err(db_err);
        let start = column(0)?.as_i64().map_err(|e| db_err(e.into()))?;
        let mut is_computed = false;
        while let Some(d) = computed.next_if(|d| d.start <= start) {
            is_computed |= d.start == start;
            each(d.start, &d.body, Some(d.size as i64))?;
        }
        if is_computed {
            continue;
        }
        let body = column(1)?.as_blob().map_err(|e| db_err(e.into()))?;
        let size = column(2)?.as_i64_or_null().map_err(|e| db_err(e.into()))?;
        each(start, body, size)?;
    }
    for d in computed {
        each(d.start, &d.body, Some(d.size as i64))?;
    }
    Ok(())
}

/// The day rollups of each of a device's blocks of several days that
/// overlap `from..=last_start`, in the form `put` would store (each block's
/// columns folded by day, `blocks::spans_of_bodies`, the fold a stored day
/// went through), entered with the chain of the stored day before the
/// block (`entering`); the caller keeps those in its range. A year of a
/// slow sensor's days is a year of its readings decoded and folded: kept in
/// `cache` where one is given, under the fingerprint of the block's bytes
/// and chain, as a day's hours are.
fn computed_days(
    conn: &Connection,
    device: i64,
    from: i64,
    last_start: i64,
    cache: Option<&HourCache>,
) -> Result<Vec<std::sync::Arc<[CachedHour]>>, StoreError> {
    if last_start < from {
        return Ok(Vec::new());
    }
    let days = blocks::day_of(from)..=blocks::day_of(last_start);
    let several = block_spans::overlapping(conn, device, days)?;
    let mut out = Vec::with_capacity(several.len());
    let mut device_id = None;
    let mut statement = blocks::day_rows_statement(conn)?;
    for (first, _) in several {
        let entering = entering(conn, device, first * domain::model::DAY_MS)?;
        let mut rows = blocks::DayRows::new(&mut statement, device, first..=first)?;
        let bodies = rows.bodies(first, first)?;
        let keep = cache.map(|c| (c, hour_cache::fingerprint(bodies.clone(), &entering)));
        if let Some(kept) = keep.and_then(|(c, print)| c.get(device, Span::Day, first, print)) {
            out.push(kept);
            continue;
        }
        let device_id = match &device_id {
            Some(id) => id,
            None => device_id.insert(super::names::device(conn, device)?),
        };
        let computed: std::sync::Arc<[CachedHour]> =
            blocks::spans_of_bodies(device_id, first, bodies, Span::Day, entering)?
                .iter()
                .map(cached)
                .collect::<Result<_, _>>()?;
        if let Some((c, print)) = keep {
            c.put(device, Span::Day, first, print, computed.clone());
        }
        out.push(computed);
    }
    Ok(out)
}

/// A day's hour rollups: computed now, or kept (`hour_cache`).
enum DayHours {
    /// Those inside the range.
    Computed(Vec<Rollup>),
    /// The day's kept hours, and which of them lie inside the range.
    Kept(std::sync::Arc<[CachedHour]>, std::ops::Range<usize>),
    /// Computed now and kept: every hour of the day both ways (in the same
    /// order), and which of them lie inside the range. Rollups are taken as
    /// computed, not decoded again from what was kept.
    Fresh(
        Vec<Rollup>,
        std::sync::Arc<[CachedHour]>,
        std::ops::Range<usize>,
    ),
}

/// The hour rollups inside `range`, day by day, from the readings of each
/// day that has a day rollup: entered with that day's entering chain, as
/// they would have been kept. A sealed day alone (a zone's days read a year
/// of them) is folded from its blocks' columns, and its hours kept in
/// `cache`; a day with hot rows is folded from its readings.
fn hour_days(
    conn: &Connection,
    (device, device_id): (i64, &DeviceId),
    range: &TimeRange,
    cache: Option<&HourCache>,
) -> Result<Vec<DayHours>, StoreError> {
    let first_day = Span::Day.start_of(range.from());
    let last_hour = range.to().saturating_add_millis(-Span::Hour.millis());
    if last_hour < range.from() {
        return Ok(Vec::new());
    }
    let days_end = Span::Day.end_of(Span::Day.start_of(last_hour));
    let Ok(days) = TimeRange::new(first_day, days_end) else {
        return Ok(Vec::new());
    };
    let inside = |start: i64| start >= range.from().millis() && start <= last_hour.millis();
    let mut out = Vec::new();
    // The days' spans and entering chains: their counters, read past their
    // tallies (a year of them decoded whole was a fifth of a zone's energy).
    let mut read = Vec::with_capacity(spans_in(Span::Day, &days));
    each_day(conn, device, &days, cache, |start, body, size| {
        read.push(body_counters(Span::Day, start, body, size, &mut None)?);
        Ok(())
    })?;
    // The blocks of several days among them, where hot rows lie, and the
    // days' sealed rows: each looked up once, not once a day.
    let day_numbers = blocks::day_of(first_day.millis())..=blocks::day_of(days_end.millis() - 1);
    let several = block_spans::overlapping(conn, device, day_numbers.clone())?;
    let hot = series::HotSpan::of(conn, device)?;
    let rows_from = several.first().map_or(*day_numbers.start(), |(first, _)| {
        (*first).min(*day_numbers.start())
    });
    let mut statement = blocks::day_rows_statement(conn)?;
    let mut rows = blocks::DayRows::new(&mut statement, device, rows_from..=*day_numbers.end())?;
    for day in read {
        let bounds = Bounds {
            lo: day.start.millis(),
            hi: day.end().millis() - 1,
        };
        if hot.within(bounds) {
            let readings = series::device_readings(
                conn,
                device,
                device_id,
                bounds,
                Order::Asc,
                MAX_SPAN_READINGS,
            )?;
            let hours = spans(Span::Hour, day.entering(), readings.iter());
            out.push(DayHours::Computed(
                hours
                    .into_iter()
                    .filter(|h| inside(h.start.millis()))
                    .collect(),
            ));
            continue;
        }
        let number = blocks::day_of(bounds.lo);
        let first = several
            .iter()
            .find(|(first, last)| (*first..=*last).contains(&number))
            .map_or(number, |(first, _)| *first);
        let bodies = rows.bodies(first, number)?;
        let entering = day.entering();
        let fingerprint = cache.map(|_| hour_cache::fingerprint(bodies.clone(), &entering));
        if let (Some(cache), Some(fingerprint)) = (cache, fingerprint) {
            if let Some(kept) = cache.get(device, Span::Hour, number, fingerprint) {
                let span = kept_inside(&kept, range, last_hour);
                out.push(DayHours::Kept(kept, span));
                continue;
            }
        }
        // Of a block of several days, the day's hours (the days before it
        // hold no counter: the chain enters it as it entered the block).
        let mut hours = blocks::spans_of_bodies(device_id, number, bodies, Span::Hour, entering)?;
        hours.retain(|h| (bounds.lo..=bounds.hi).contains(&h.start.millis()));
        if let (Some(cache), Some(fingerprint)) = (cache, fingerprint) {
            let kept: std::sync::Arc<[CachedHour]> =
                hours.iter().map(cached).collect::<Result<_, _>>()?;
            cache.put(device, Span::Hour, number, fingerprint, kept.clone());
            let span = kept_inside(&kept, range, last_hour);
            out.push(DayHours::Fresh(hours, kept, span));
            continue;
        }
        out.push(DayHours::Computed(
            hours
                .into_iter()
                .filter(|h| inside(h.start.millis()))
                .collect(),
        ));
    }
    Ok(out)
}

/// Which of a day's kept hours (in time order) start inside `range`, up to
/// its last whole hour.
fn kept_inside(
    kept: &[CachedHour],
    range: &TimeRange,
    last_hour: Timestamp,
) -> std::ops::Range<usize> {
    let lo = kept.partition_point(|h| h.start < range.from().millis());
    let hi = kept.partition_point(|h| h.start <= last_hour.millis());
    lo..hi.max(lo)
}

/// A rollup's body as it is stored (`rollup_body`, or postcard's form for
/// a field outside the catalogue) and the size a read of it meters
/// (`billing::stored_size`): what `put` writes and the hour cache keeps.
fn stored_form(r: &Rollup) -> Result<(Vec<u8>, usize), StoreError> {
    let stored = Stored::from(r);
    let body = match rollup_body::encode(&stored, r.start.millis()) {
        Some(body) => body,
        None => storage::format::rollup::to_postcard(&stored)
            .map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?,
    };
    Ok((body, storage::format::billing::stored_size(&stored)))
}

/// A computed rollup (an hour, or a day of a block of several days) as the
/// cache keeps it.
fn cached(h: &Rollup) -> Result<CachedHour, StoreError> {
    let (body, size) = stored_form(h)?;
    Ok(CachedHour {
        start: h.start.millis(),
        body,
        size,
        tally: h.all.clone(),
        rooms: h
            .rooms
            .iter()
            .map(|(room, t)| (room.clone(), (t != &h.all).then(|| Box::new(t.clone()))))
            .collect(),
        counters: (h.counters != Default::default() || h.chain != Chain::default())
            .then(|| Box::new(RollupCounters::from(h))),
    })
}
