//! Rollups kept in the readings' own write transaction (the embedded store).
//!
//! A batch that only appends to a device (every reading newer than its
//! newest stored one, the usual case) continues the device's newest day,
//! reading for reading: the same fold a recomputation would do. Any other
//! batch recomputes each touched day from its readings, and the days after
//! it by the cascade rule.

use super::recompute::spans_at;
use crate::domain::aggregate::rollup::Rollup;
use crate::model::{Reading, Span, Timestamp};
use crate::store::{RollupSpans, StoreError};

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
) -> Result<(), StoreError> {
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
) -> Result<(), StoreError> {
    if readings.is_empty() {
        return Ok(());
    }
    let mut current = match newest.take() {
        Some(r) => Some(r),
        None => p.before(span, Timestamp::MAX).await?,
    };
    let mut dirty = false;
    for r in readings {
        let start = span.start_of(r.timestamp);
        match &mut current {
            Some(c) if c.start == start => c.add(r),
            _ => {
                let entering = current.as_ref().map_or_else(Default::default, |c| c.chain);
                if let Some(done) = current.take().filter(|_| dirty) {
                    p.put(&done, &[]).await?;
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
            p.put(&done, &[]).await?;
        }
        *newest = Some(done);
    }
    Ok(())
}
