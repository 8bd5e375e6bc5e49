//! Rebuilding a device's rollups from its readings, a day at a time (a file
//! or a table written before rollups, `rollups rebuild`, `blocks rebuild`).

use super::recompute::{hours_and_days, spans_at};
use super::{Keeping, Marker, RollupSpans};
use crate::aggregate::counter::Chain;
use crate::aggregate::rollup::{spans, Rollup};
use crate::model::{Reading, Span, TimeRange, Timestamp};
use std::collections::BTreeSet;

/// Rebuilds a device's stored rollups over the days that overlap `range`
/// and hold readings; rollups there without readings any more are deleted;
/// then the span after, whose entering chain may have changed; and, where
/// rollups are kept behind the writes, the marker, when the rebuilt days
/// reach back to the device's first reading or join the hours the stream
/// function already covers. Returns the rollups written.
pub async fn rebuild<P: RollupSpans>(p: &mut P, range: TimeRange) -> Result<usize, P::Error> {
    let keeping = p.keeping();
    let stored = keeping.stored();
    let from = Span::Day.start_of(range.from());
    let to = Span::Day.end_of(Span::Day.start_of(range.to().saturating_add_millis(-1)));
    let days = TimeRange::new(from, to).expect("whole days around a range");
    let Some((first, last)) = p.reading_times(&days).await? else {
        return Ok(0);
    };
    // Every stored rollup there; those the rebuild does not write again go.
    let mut stale: BTreeSet<(Span, Timestamp)> = BTreeSet::new();
    let mut chains: Vec<Chain> = Vec::with_capacity(stored.len());
    for &span in stored {
        stale.extend(p.starts(span, &days).await?.into_iter().map(|s| (span, s)));
        chains.push(
            p.before(span, from)
                .await?
                .map(|r| r.chain)
                .unwrap_or_default(),
        );
    }
    let mut built = 0;
    let mut day_start = Span::Day.start_of(first);
    while day_start <= last {
        let whole = TimeRange::new(day_start, Span::Day.end_of(day_start)).expect("a day");
        let readings = p.readings(&whole).await?;
        let mut rollups: Vec<(Rollup, &[Reading])> = Vec::new();
        for (&span, chain) in stored.iter().zip(chains.iter_mut()) {
            for r in spans(span, *chain, readings.iter()) {
                *chain = r.chain;
                stale.remove(&(span, r.start));
                let lo = readings.partition_point(|x| x.timestamp < r.start);
                let hi = readings.partition_point(|x| x.timestamp < r.end());
                rollups.push((r, &readings[lo..hi]));
            }
        }
        built += rollups.len();
        p.put_all(&rollups).await?;
        day_start = Span::Day.end_of(day_start);
    }
    for (span, start) in stale {
        p.delete(span, start).await?;
    }
    // The span after the rebuilt days entered with the chain they leave.
    let finest = stored[0];
    let last_start = to.saturating_add_millis(-finest.millis());
    let after = p.after(finest, last_start).await?;
    match keeping {
        Keeping::DaysInTheWrite => {
            if let Some(after) = after {
                spans_at(p, finest, [after.start]).await?;
            }
        }
        Keeping::HoursAndDaysBehind => {
            if let Some(after) = after {
                let open = p
                    .marker()
                    .await?
                    .and_then(|m| m.open_day)
                    .unwrap_or(Timestamp::MAX);
                hours_and_days(p, BTreeSet::from([after.start]), open, BTreeSet::new()).await?;
            }
            mark_rebuilt(p, from, to, first).await?;
        }
    }
    Ok(built)
}

/// Moves the marker back over rebuilt days `from..to` (whose first reading
/// is at `first`) where they join what the stream function keeps.
async fn mark_rebuilt<P: RollupSpans>(
    p: &mut P,
    from: Timestamp,
    to: Timestamp,
    first: Timestamp,
) -> Result<(), P::Error> {
    let earliest = p.first_reading_before(Timestamp::MAX).await?;
    let reaches_back = earliest.is_some_and(|e| e >= from);
    let new_since = if reaches_back {
        Span::Day.start_of(first)
    } else {
        from
    };
    // The rebuild wrote every day whole: the open day stays what the stream
    // function said (its later batches close it).
    match p.marker().await? {
        // Joins what the stream function keeps: complete from the rebuilt days on.
        Some(m) if m.since <= to && new_since < m.since => {
            p.set_marker(Marker {
                since: new_since,
                ..m
            })
            .await
        }
        // Never seen by the function: complete when the rebuild reaches now.
        None if to.millis() >= Timestamp::now().millis().div_euclid(1000) * 1000 => {
            p.set_marker(Marker {
                since: new_since,
                open_day: None,
            })
            .await
        }
        _ => Ok(()),
    }
}
