//! Rollups kept behind the writes (DynamoDB's rollups stream function): a
//! batch's touched hours recomputed from what the table holds, so that
//! duplicate, late and reordered delivery cannot count a reading twice.
//!
//! A marker per device says from which hour on its rollups are complete: the
//! first hour the function saw, where every hour with readings from there on
//! was recomputed (the beginning of time, for a device with no reading
//! before that hour), or what `rebuild` covered. Day rollups are written
//! when their day closes: the newest day touched stays open (read from its
//! hours), and the day that was open until now is written whole.

use super::recompute::hours_and_days;
use super::{Marker, RollupSpans, RollupWrites};
use crate::model::{Span, Timestamp};
use std::collections::BTreeSet;

/// Recomputes a device's hour rollups at `hours`, the hours after them whose
/// entering chain changed, and their days; keeps the marker.
pub async fn refresh<P: RollupSpans>(
    p: &mut P,
    hours: BTreeSet<Timestamp>,
) -> Result<RollupWrites, P::Error> {
    let floor = p.floor();
    let mut todo: BTreeSet<Timestamp> = hours
        .into_iter()
        .map(|h| Span::Hour.start_of(h))
        .filter(|h| *h >= floor)
        .collect();
    let Some(&first) = todo.first() else {
        return Ok(RollupWrites::default());
    };
    let marker = p.marker().await?;
    let first_sight = marker.is_none();
    if first_sight {
        // Hours from here on may hold readings written before rollups were
        // kept: recompute them all, so that the marker holds.
        todo.extend(p.hours_with_readings(first).await?);
    }
    let newest_day = Span::Day.start_of(*todo.last().expect("not empty"));
    let was_open = marker.and_then(|m| m.open_day);
    let open_day = was_open.map_or(newest_day, |o| o.max(newest_day));
    let mut closing = BTreeSet::new();
    if let Some(o) = was_open.filter(|o| *o < open_day) {
        closing.insert(o);
    }
    // Boxed: a deep future (a debug test thread's stack overflowed).
    let writes = Box::pin(hours_and_days(p, todo, open_day, closing)).await?;
    let since = match marker {
        Some(m) => m.since,
        // Complete from the start when nothing lies before (a new device).
        None if p.first_reading_before(first).await?.is_some() => first,
        None => Timestamp::MIN,
    };
    if first_sight || was_open != Some(open_day) {
        p.set_marker(Marker {
            since,
            open_day: Some(open_day),
        })
        .await?;
    }
    Ok(writes)
}
