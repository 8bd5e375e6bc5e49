//! Rollups on the embedded store (docs/rollups.md).
//!
//! - Day rollups are kept in the write transaction of the readings they
//!   summarize: one row per device and day; the body is the rollup's stored
//!   shape in postcard's compact binary form.
//! - Hour rollups are not stored (since version 4): 24 rows a day cost more
//!   bytes than the readings' own block. An hour rollup is computed when
//!   read, from its day's readings (one block) and the chain its day
//!   rollup entered with, by the same fold that would have stored it.
//!
//! A batch that only appends to a device (every reading newer than its
//! newest stored one, the usual case) continues the device's newest day,
//! reading for reading: the same fold a recomputation would do. Any other
//! batch recomputes each touched day from its readings, and the days after
//! it by the domain's one cascade rule (`rollup::Cascade`).

use super::rows::Bounds;
use super::series;
use super::{db_err, StoreError};
use crate::domain::aggregate::rollup::{
    leaving, postcard_version, spans, Cascade, Rollup, Stored, StoredV1,
};
use crate::model::{DeviceId, Reading, Span, TimeRange, Timestamp};
use crate::store::FastMap;
use crate::store::Order;
use rusqlite::{params, Connection, OptionalExtension};

/// The spans stored.
pub const SPANS: [Span; 1] = [Span::Day];

/// Most readings one span may hold (a day of readings every second).
const MAX_SPAN_READINGS: usize = 86_400;

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
    use crate::domain::billing;
    let corrupt =
        |e: String| StoreError::Corrupt(format!("{} rollup at {start}: {e}", span.as_str()));
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
    let stored: Stored<&str> = postcard::from_bytes(body).map_err(|e| corrupt(e.to_string()))?;
    if let Some((pk_len, bytes)) = sized {
        *bytes += match size.and_then(|s| usize::try_from(s).ok()) {
            Some(body_size) => billing::rollup_item_size(pk_len, body_size),
            None => billing::rollup_size(pk_len, &stored),
        };
    }
    stored.decode(span, start).map_err(corrupt)
}

/// The newest rollup of a span starting before `before`.
fn latest_before(
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
fn first_after(
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

fn put(conn: &Connection, device: i64, r: &Rollup) -> Result<(), StoreError> {
    let stored = Stored::from(r);
    let body =
        postcard::to_allocvec(&stored).map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
    let size = crate::domain::billing::stored_size(&stored) as i64;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO rollups (device, span, start, body, size)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .map_err(db_err)?
    .execute(params![device, code(r.span), r.start.millis(), body, size])
    .map_err(db_err)?;
    Ok(())
}

/// Brings a device's rollups up to date with a batch of its readings (in
/// time order, as written). `appended`: every one is newer than the
/// device's newest reading before the batch.
pub fn update(
    tx: &Connection,
    newest: &mut FastMap<(i64, Span), Rollup>,
    device: i64,
    device_id: &DeviceId,
    readings: &[&Reading],
    appended: bool,
) -> Result<(), StoreError> {
    for span in SPANS {
        if appended {
            append(tx, newest, device, span, readings)?;
        } else {
            newest.remove(&(device, span));
            let starts = readings.iter().map(|r| span.start_of(r.timestamp));
            recompute(tx, device, device_id, span, Cascade::new(starts))?;
        }
    }
    Ok(())
}

/// Continues the device's newest span (remembered from the last batch, or
/// read) with readings all newer than it, and remembers the newest after.
fn append(
    tx: &Connection,
    newest: &mut FastMap<(i64, Span), Rollup>,
    device: i64,
    span: Span,
    readings: &[&Reading],
) -> Result<(), StoreError> {
    if readings.is_empty() {
        return Ok(());
    }
    let mut current = match newest.remove(&(device, span)) {
        Some(r) => Some(r),
        None => latest_before(tx, device, span, i64::MAX)?,
    };
    let mut dirty = false;
    for r in readings {
        let start = span.start_of(r.timestamp);
        match &mut current {
            Some(c) if c.start == start => c.add(r),
            _ => {
                let entering = current.as_ref().map_or_else(Default::default, |c| c.chain);
                if let Some(done) = current.take().filter(|_| dirty) {
                    put(tx, device, &done)?;
                }
                let mut fresh = Rollup::new(span, start, entering);
                fresh.add(r);
                current = Some(fresh);
            }
        }
        dirty = true;
    }
    if let Some(done) = current {
        if dirty {
            put(tx, device, &done)?;
        }
        newest.insert((device, span), done);
    }
    Ok(())
}

/// Recomputes the spans of `cascade` from their readings, in time order,
/// and the spans after them that the cascade rule names.
fn recompute(
    tx: &Connection,
    device: i64,
    device_id: &DeviceId,
    span: Span,
    mut cascade: Cascade,
) -> Result<(), StoreError> {
    while let Some(start_at) = cascade.next_start() {
        let start = start_at.millis();
        let entering = latest_before(tx, device, span, start)?
            .map(|r| r.chain)
            .unwrap_or_default();
        let end = span.end_of(start_at);
        let readings = series::device_readings(
            tx,
            device,
            device_id,
            Bounds {
                lo: start,
                hi: end.millis() - 1,
            },
            Order::Asc,
            MAX_SPAN_READINGS,
        )?;
        let new = spans(span, entering, readings.iter()).pop();
        match &new {
            Some(r) => put(tx, device, r)?,
            None => {
                tx.prepare_cached(
                    "DELETE FROM rollups WHERE device = ?1 AND span = ?2 AND start = ?3",
                )
                .map_err(db_err)?
                .execute(params![device, code(span), start])
                .map_err(db_err)?;
            }
        }
        let next = first_after(tx, device, span, start)?;
        cascade.recomputed(leaving(new.as_ref(), entering), next.as_ref());
    }
    Ok(())
}

/// A device's rollups of a span that lie wholly inside `range`, oldest
/// first; with `sized` (a device id of that many bytes), also their items'
/// DynamoDB size (`billing::rollup_size`, what `read_units` meters): a day's
/// from its stored shape as it is decoded, an hour's (computed, not stored)
/// from the shape it would be stored in.
pub fn within(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    span: Span,
    range: &TimeRange,
    sized: Option<usize>,
) -> Result<(Vec<Rollup>, usize), StoreError> {
    let mut bytes = 0;
    let found = match span {
        Span::Day => stored_within(
            conn,
            device,
            span,
            range,
            sized.map(|pk_len| (pk_len, &mut bytes)),
        )?,
        Span::Hour => {
            let hours = hours_within(conn, device, device_id, range)?;
            if let Some(pk_len) = sized {
                bytes = hours
                    .iter()
                    .map(|h| crate::domain::billing::rollup_size(pk_len, &Stored::from(h)))
                    .sum();
            }
            hours
        }
    };
    Ok((found, bytes))
}

fn stored_within(
    conn: &Connection,
    device: i64,
    span: Span,
    range: &TimeRange,
    mut sized: Option<(usize, &mut usize)>,
) -> Result<Vec<Rollup>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT start, body, size FROM rollups WHERE device = ?1 AND span = ?2
               AND start >= ?3 AND start <= ?4 ORDER BY start",
        )
        .map_err(db_err)?;
    let last_start = range.to().millis() - span.millis();
    let mut rows = stmt
        .query(params![
            device,
            code(span),
            range.from().millis(),
            last_start
        ])
        .map_err(db_err)?;
    // Sized for the range's spans, so a year of days is not grown and copied.
    let spans = (range.to().millis() - range.from().millis()) / span.millis() + 1;
    let mut out = Vec::with_capacity(spans.clamp(0, 4096) as usize);
    while let Some(row) = rows.next().map_err(db_err)? {
        let start: i64 = row.get(0).map_err(db_err)?;
        let body = row
            .get_ref(1)
            .map_err(db_err)?
            .as_blob()
            .map_err(|e| db_err(e.into()))?;
        let size: Option<i64> = row.get(2).map_err(db_err)?;
        let sized = sized.as_mut().map(|(len, bytes)| (*len, &mut **bytes));
        out.push(decode_sized(span, start, body, size, sized)?);
    }
    Ok(out)
}

/// The hour rollups inside `range`, from the readings of each day that has
/// a day rollup: entered with that day's entering chain, as they would have
/// been kept.
fn hours_within(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    range: &TimeRange,
) -> Result<Vec<Rollup>, StoreError> {
    let first_day = Span::Day.start_of(range.from());
    let last_hour = range.to().saturating_add_millis(-Span::Hour.millis());
    if last_hour < range.from() {
        return Ok(Vec::new());
    }
    let days_end = Span::Day.end_of(Span::Day.start_of(last_hour));
    let Ok(days) = TimeRange::new(first_day, days_end) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for day in stored_within(conn, device, Span::Day, &days, None)? {
        let readings = series::device_readings(
            conn,
            device,
            device_id,
            Bounds {
                lo: day.start.millis(),
                hi: day.end().millis() - 1,
            },
            Order::Asc,
            MAX_SPAN_READINGS,
        )?;
        out.extend(
            spans(Span::Hour, day.entering(), readings.iter())
                .into_iter()
                .filter(|h| h.start >= range.from() && h.start <= last_hour),
        );
    }
    Ok(out)
}

/// Builds a device's rollups from its readings, a day at a time, for the
/// days that overlap `range` (a file written before rollups, and
/// `ingester-local rollups rebuild`); the span after them is recomputed too
/// when the chain it entered with changed. Returns the rollups written.
pub fn rebuild(
    tx: &Connection,
    device: i64,
    device_id: &DeviceId,
    range: &TimeRange,
) -> Result<usize, StoreError> {
    let from = Span::Day.start_of(range.from()).millis();
    let to = Span::Day
        .end_of(Span::Day.start_of(range.to().saturating_add_millis(-1)))
        .millis();
    // Days with readings only: the range may be all time.
    let Some((first, last)) = series::time_span(tx, device, device_id)? else {
        return Ok(0);
    };
    let day_of = |ms: i64| ms - ms.rem_euclid(Span::Day.millis());
    let (read_from, read_to) = (
        from.max(day_of(first)),
        to.min(day_of(last) + Span::Day.millis()),
    );
    for span in SPANS {
        tx.prepare_cached(
            "DELETE FROM rollups WHERE device = ?1 AND span = ?2 AND start >= ?3 AND start < ?4",
        )
        .map_err(db_err)?
        .execute(params![device, code(span), from, to])
        .map_err(db_err)?;
    }
    // In the order of SPANS.
    let mut chains = [latest_before(tx, device, Span::Day, from)?
        .map(|r| r.chain)
        .unwrap_or_default()];
    let mut built = 0;
    let mut day = read_from;
    while day < read_to {
        let readings = series::device_readings(
            tx,
            device,
            device_id,
            Bounds {
                lo: day,
                hi: day + Span::Day.millis() - 1,
            },
            Order::Asc,
            usize::MAX >> 1,
        )?;
        for (span, chain) in SPANS.into_iter().zip(chains.iter_mut()) {
            for r in spans(span, *chain, readings.iter()) {
                *chain = r.chain;
                put(tx, device, &r)?;
                built += 1;
            }
        }
        day += Span::Day.millis();
    }
    for span in SPANS {
        if let Some(next) = first_after(tx, device, span, to - 1)? {
            recompute(tx, device, device_id, span, Cascade::new([next.start]))?;
        }
    }
    Ok(built)
}
