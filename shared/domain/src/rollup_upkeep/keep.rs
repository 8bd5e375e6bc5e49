//! Rollups kept in the readings' own write transaction (the embedded store).
//!
//! A batch that only appends to a device (every reading newer than its
//! newest stored one, the usual case) continues the device's newest day,
//! reading for reading: the same fold a recomputation would do. Any other
//! batch recomputes each touched day from its readings, and the days after
//! it by the cascade rule.

use super::recompute::spans_at;
use super::RollupSpans;
use crate::aggregate::rollup::Rollup;
use crate::model::{Reading, Span, Timestamp};

/// Brings a device's day rollups up to date with a batch of its readings (in
/// time order, as written). `appended`: every one is newer than the
/// device's newest reading before the batch. `newest`: the device's newest
/// day rollup, when the caller remembers it from the batch before; it is
/// what the caller should remember after.
pub async fn keep<P: RollupSpans>(
    p: &mut P,
    newest: &mut Option<Rollup>,
    readings: &[&Reading],
    appended: bool,
) -> Result<(), P::Error> {
    let span = Span::Day;
    if appended {
        return append(p, newest, span, readings).await;
    }
    *newest = None;
    spans_at(p, span, readings.iter().map(|r| span.start_of(r.timestamp))).await?;
    Ok(())
}

/// Continues the device's newest span with readings all newer than it.
async fn append<P: RollupSpans>(
    p: &mut P,
    newest: &mut Option<Rollup>,
    span: Span,
    readings: &[&Reading],
) -> Result<(), P::Error> {
    if readings.is_empty() {
        return Ok(());
    }
    let current = match newest.take() {
        Some(r) => r,
        None => match p.before(span, Timestamp::MAX).await? {
            Some(r) => r,
            None => Rollup::new(
                span,
                span.start_of(readings[0].timestamp),
                Default::default(),
            ),
        },
    };
    let (completed, open) = fold(current, span, readings);
    for done in &completed {
        p.put(done, &[]).await?;
    }
    p.put(&open, &[]).await?;
    *newest = Some(open);
    Ok(())
}

/// Folds readings, all newer than `current`, into it and the spans after
/// it: the spans they completed (to be stored; `current` among them only if
/// a reading was added to it) and the one still open. Not async: the loop
/// runs once per reading of every write, and in an `async fn` its state
/// would live in the future rather than in registers.
fn fold(mut current: Rollup, span: Span, readings: &[&Reading]) -> (Vec<Rollup>, Rollup) {
    let mut completed = Vec::new();
    let mut touched = false;
    for r in readings {
        let start = span.start_of(r.timestamp);
        if current.start != start {
            let fresh = Rollup::new(span, start, current.chain);
            let done = std::mem::replace(&mut current, fresh);
            if touched {
                completed.push(done);
            }
        }
        current.add(r);
        touched = true;
    }
    (completed, current)
}
