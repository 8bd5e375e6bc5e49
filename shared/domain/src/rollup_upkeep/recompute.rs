//! Recomputing spans from their readings, and the spans after them that the
//! domain's cascade rule names (`rollup::Cascade`).

use super::{RollupSpans, RollupWrites};
use crate::aggregate::rollup::{day, leaving, spans, Cascade};
use crate::model::{Span, TimeRange, Timestamp};
use std::collections::BTreeSet;

/// Recomputes the rollups of `span` at `starts` from their readings, in
/// time order, each entered with the chain of the stored one before it.
/// Returns each recomputed start with the write units spent on it (`None`:
/// nothing written).
pub async fn spans_at<P: RollupSpans>(
    p: &mut P,
    span: Span,
    starts: impl IntoIterator<Item = Timestamp>,
) -> Result<Vec<(Timestamp, Option<f64>)>, P::Error> {
    let mut done = Vec::new();
    let mut cascade = Cascade::new(starts);
    while let Some(start) = cascade.next_start() {
        let entering = p
            .before(span, start)
            .await?
            .map(|r| r.chain)
            .unwrap_or_default();
        let whole = TimeRange::new(start, span.end_of(start)).expect("a span is not empty");
        let readings = p.readings(&whole).await?;
        let new = spans(span, entering, readings.iter()).pop();
        let units = match &new {
            Some(r) => p.put(r, &readings).await?,
            None => p.delete(span, start).await?,
        };
        done.push((start, units));
        let next = p.after(span, start).await?;
        cascade.recomputed(leaving(new.as_ref(), entering), next.as_ref());
    }
    Ok(done)
}

/// Recomputes the hours at `hours` and those the cascade names; then their
/// days before `open_day` (a later day stays open, read from its hours),
/// and the days of `closing`.
pub async fn hours_and_days<P: RollupSpans>(
    p: &mut P,
    hours: BTreeSet<Timestamp>,
    open_day: Timestamp,
    closing: BTreeSet<Timestamp>,
) -> Result<RollupWrites, P::Error> {
    let mut writes = RollupWrites::default();
    let mut days = closing;
    for (hour, units) in spans_at(p, Span::Hour, hours).await? {
        if let Some(units) = units {
            writes.hours += 1;
            writes.write_units += units;
        }
        if Span::Day.start_of(hour) < open_day {
            days.insert(Span::Day.start_of(hour));
        }
    }
    for start in days {
        if let Some(units) = day_from_hours(p, start).await? {
            writes.days += 1;
            writes.write_units += units;
        }
    }
    Ok(writes)
}

/// Recomputes a day rollup from its stored hours; returns the write units
/// (`None`: nothing written).
async fn day_from_hours<P: RollupSpans>(
    p: &mut P,
    start: Timestamp,
) -> Result<Option<f64>, P::Error> {
    let whole = TimeRange::new(start, Span::Day.end_of(start)).expect("a day is not empty");
    let hours = p.within(Span::Hour, &whole).await?;
    let old = p.within(Span::Day, &whole).await?.pop();
    match (old, hours.is_empty()) {
        (None, true) => Ok(None),
        (Some(_), true) => p.delete(Span::Day, start).await,
        (old, false) => {
            let new = day(start, &hours);
            if old.as_ref() == Some(&new) {
                return Ok(None);
            }
            p.put(&new, &[]).await
        }
    }
}
