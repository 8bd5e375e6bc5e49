//! Rollups: a device's readings of one UTC hour or one UTC day, summarized so
//! that answers over buckets of an hour or more compose from them exactly as
//! they would from the readings (docs/rollups.md):
//!
//! - per quantity: count, sum, min and max (the mean is derived);
//! - per room its readings named: the same for temperature and humidity, so a
//!   device that moved counts in the room it was in at the time;
//! - for each energy counter the span has readings of (bought, sold): its
//!   mark entering the span, the growth into its first reading there (spread
//!   over that interval, which may start in an earlier span), the growth and
//!   resets between its readings inside the span, and its mark leaving it
//!   (`counter::Chain`).
//!
//! A rollup is always recomputed whole from its readings (or, for a day, from
//! its hours), never incremented, so a reading delivered twice, late or out of
//! order cannot count twice.

use super::counter::{Chain, Counter, Counters, Growth, Mark};
use super::stats_map::QuantityStats;
use super::{Bucketing, FieldStats};
use crate::model::{Quantity, Reading, RoomId, Span, TimeRange, Timestamp, DAY_MS, HOUR_MS};
use std::collections::{BTreeMap, BTreeSet};

/// Statistics of a set of readings: how many, and each quantity's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub count: u64,
    pub fields: QuantityStats,
}

impl Tally {
    fn add(&mut self, values: impl Iterator<Item = (Quantity, f64)>) {
        self.count += 1;
        for (q, v) in values {
            self.fields.update(q, |f| f.add(v), || FieldStats::new(v));
        }
    }

    /// Folds a column's values (in time order) into `q`'s field, as `add`
    /// does one by one; the readings are counted by the caller.
    fn add_column(&mut self, q: Quantity, values: &[f64]) {
        let Some((&first, rest)) = values.split_first() else {
            return;
        };
        let (stats, had) = self.fields.get_or_insert_with(q, || FieldStats::new(first));
        if had {
            stats.add(first);
        }
        rest.iter().for_each(|v| stats.add(*v));
    }

    fn merge(&mut self, other: &Tally) {
        self.count += other.count;
        for (q, f) in &other.fields {
            self.fields.update(*q, |mine| mine.merge(f), || *f);
        }
    }
}

/// What a span's readings of one counter add to energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterSpan {
    /// The counter's mark before the span's first reading of it; `None`
    /// when the device had none before.
    pub entering: Option<Mark>,
    /// The growth from `entering` into the span's first reading of it.
    pub incoming: Option<Growth>,
    /// The time of the span's first reading of the counter.
    pub first_at: Timestamp,
    /// Growth and resets between the span's own readings of it.
    pub inside_amount: f64,
    pub inside_resets: u32,
    pub leaving: Mark,
}

/// One device's readings in one span.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    pub span: Span,
    pub start: Timestamp,
    pub all: Tally,
    /// Temperature and humidity of the readings that named a room, by room
    /// (what a room's answers count).
    pub rooms: BTreeMap<RoomId, Tally>,
    /// Per counter, what the span's readings of it add; `None` for a
    /// counter the span has no reading of.
    pub counters: Counters<Option<CounterSpan>>,
    /// The device's counter chain after the span (a counter the span has no
    /// reading of keeps the mark it entered with).
    pub chain: Chain,
}

/// Whether a room's answers are made of the quantity.
pub fn in_room_answers(q: Quantity) -> bool {
    matches!(q, Quantity::Temperature | Quantity::Humidity)
}

/// The values a room's answers are made of.
pub fn room_values(r: &Reading) -> impl Iterator<Item = (Quantity, f64)> + '_ {
    r.measurement
        .values()
        .iter()
        .copied()
        .filter(|(q, _)| in_room_answers(*q))
}

impl Rollup {
    /// Its start and its tally of the readings that named `room`, or of
    /// all of them (`None`); `None` as a tally where no reading named the
    /// room: what a stats answer folds.
    pub fn into_tally(self, room: Option<&RoomId>) -> (Timestamp, Option<Tally>) {
        let tally = match room {
            None => Some(self.all),
            Some(room) => self.rooms.get(room).cloned(),
        };
        (self.start, tally)
    }

    /// The chain the span was entered with.
    pub fn entering(&self) -> Chain {
        entering(present(&self.counters), &self.chain)
    }

    /// Each counter the span has readings of, and what they add.
    pub fn spans(&self) -> impl Iterator<Item = (Counter, &CounterSpan)> + Clone {
        present(&self.counters)
    }

    /// Whether the counters' summaries stand for every reading of a counter
    /// the span counted: always, for a rollup this build made. A rollup
    /// stored by a build before single counters were followed (rollup
    /// version 1) may not: its readings of a meter that reported one counter
    /// were left out, and its energy must be read from its readings.
    pub fn counters_cover_readings(&self) -> bool {
        Counter::ALL.into_iter().all(|c| {
            let read = self
                .all
                .fields
                .get(&c.quantity())
                .is_some_and(|f| f.count > 0);
            read == self.counters.get(c).is_some()
        })
    }

    /// Whether a fold that stands at `chain` may take this rollup's
    /// counters in place of its readings (`EnergyFold::add_counters`): it
    /// stands where the span's readings of each counter began.
    pub fn continues(&self, chain: &Chain) -> bool {
        continues(self.counters_cover_readings(), self.spans(), chain)
    }

    /// An empty span, entered with the device's counter chain `entering`.
    pub fn new(span: Span, start: Timestamp, entering: Chain) -> Self {
        Self {
            span,
            start,
            all: Tally::default(),
            rooms: BTreeMap::new(),
            counters: Counters::default(),
            chain: entering,
        }
    }

    pub fn end(&self) -> Timestamp {
        self.span.end_of(self.start)
    }

    /// Adds the next reading of the span (later than every one added).
    pub fn add(&mut self, r: &Reading) {
        self.all.add(r.measurement.values().iter().copied());
        if let Some(room) = r.room() {
            let mut values = room_values(r).peekable();
            if values.peek().is_some() {
                // No id clone per reading: the room is nearly always there already.
                match self.rooms.get_mut(room) {
                    Some(tally) => tally.add(values),
                    None => self.rooms.entry(room.clone()).or_default().add(values),
                }
            }
        }
        // Each counter the reading carries (each followed on its own, so in
        // any order), straight from its values: no `Counters` built for
        // every reading of an ingest.
        for &(q, v) in r.measurement.values() {
            if let Some(c) = Counter::of_quantity(q) {
                self.add_counter(c, r.timestamp, v);
            }
        }
    }

    /// Adds the span's next reading of counter `c`: `v` (its unit) at `at`.
    fn add_counter(&mut self, c: Counter, at: Timestamp, v: f64) {
        let entering = *self.chain.get(c);
        let growth = self.chain.read(c, at, v);
        let leaving = self.chain.get(c).expect("just read");
        match self.counters.get_mut(c) {
            None => {
                *self.counters.get_mut(c) = Some(CounterSpan {
                    entering,
                    incoming: growth,
                    first_at: at,
                    inside_amount: 0.0,
                    inside_resets: 0,
                    leaving,
                })
            }
            Some(span) => {
                let growth = growth.expect("a mark exists after the span's first reading");
                span.inside_amount += growth.amount;
                span.inside_resets += growth.resets;
                span.leaving = leaving;
            }
        }
    }
}

/// The hour rollups of one device's readings (in time order, distinct
/// times), one per UTC hour that has readings. `entering` is the device's
/// counter chain before the first reading (the `chain` of the hour before).
pub fn hours(entering: Chain, readings: &[Reading]) -> Vec<Rollup> {
    spans(Span::Hour, entering, readings.iter())
}

/// The rollups of a span of one device's readings (in time order, distinct times).
pub fn spans<'a>(
    span: Span,
    entering: Chain,
    readings: impl Iterator<Item = &'a Reading>,
) -> Vec<Rollup> {
    let mut out: Vec<Rollup> = Vec::new();
    for r in readings {
        let start = span.start_of(r.timestamp);
        if out.last().map(|h| h.start) != Some(start) {
            let chain = out.last().map_or(entering, |h| h.chain);
            out.push(Rollup::new(span, start, chain));
        }
        out.last_mut().expect("pushed").add(r);
    }
    out
}

/// `spans` of readings given as a block's columns (`block::decode_columns`),
/// appended to `out`, without building a reading: the same rollups, field
/// by field the same fold in the same order. The readings are later than
/// those `out` holds; a span the last of `out` started is continued (a
/// day's block, then its segments), and a new one enters with the chain
/// the last leaves, or `entering`.
pub fn extend_spans_from_columns(
    out: &mut Vec<Rollup>,
    span: Span,
    entering: Chain,
    cols: &crate::block::Columns,
) -> Result<(), String> {
    let at = |ms: i64| Timestamp::from_millis(ms).map_err(|e| e.to_string());
    let room_bits = Quantity::ALL
        .iter()
        .filter(|q| in_room_answers(**q))
        .fold(0u64, |bits, q| bits | 1 << q.index());
    // Each column's next holder, as the spans move on.
    let mut next = vec![0usize; cols.columns.len()];
    let times = &cols.times;
    let mut lo = 0;
    while lo < times.len() {
        let start = span.start_of(at(times[lo])?);
        let end = span.end_of(start).millis();
        let hi = lo + times[lo..].partition_point(|t| *t < end);
        if out.last().map(|r| r.start) != Some(start) {
            let chain = out.last().map_or(entering, |r| r.chain);
            out.push(Rollup::new(span, start, chain));
        }
        let rollup = out.last_mut().expect("pushed");
        rollup.all.count += (hi - lo) as u64;
        for ((quantity, holders, column), from) in cols.columns.iter().zip(&mut next) {
            let to = *from + holders[*from..].partition_point(|i| *i < hi);
            if to > *from {
                rollup.all.add_column(*quantity, &column[*from..to]);
                if let Some(c) = Counter::of_quantity(*quantity) {
                    for k in *from..to {
                        rollup.add_counter(c, at(times[holders[k]])?, column[k]);
                    }
                }
            }
            *from = to;
        }
        if !cols.rooms.is_empty() {
            add_rooms(rollup, cols, lo..hi, room_bits);
        }
        lo = hi;
    }
    Ok(())
}

/// The rooms' tallies of the readings `range` of `cols` (one span's), as
/// `Rollup::add` keeps them: temperature and humidity of each reading that
/// names a room and has either. A room's readings come in runs (a sensor
/// stays in its room): each run's tally is found once, and each of its
/// columns folded in one pass.
fn add_rooms(
    rollup: &mut Rollup,
    cols: &crate::block::Columns,
    range: std::ops::Range<usize>,
    room_bits: u64,
) {
    let mut room_columns: Vec<(Quantity, &[usize], &[f64])> = cols
        .columns
        .iter()
        .filter(|(q, ..)| in_room_answers(*q))
        .map(|(q, holders, values)| {
            let from = holders.partition_point(|i| *i < range.start);
            (*q, &holders[from..], &values[from..])
        })
        .collect();
    let mut lo = range.start;
    while lo < range.end {
        let k = cols.room_index[lo];
        let hi = (lo + 1..range.end)
            .find(|&i| cols.room_index[i] != k)
            .unwrap_or(range.end);
        let with_values = cols.masks[lo..hi]
            .iter()
            .filter(|m| *m & room_bits != 0)
            .count() as u64;
        if let (Some(room), true) = (cols.room(lo), with_values > 0) {
            let tally = match rollup.rooms.get_mut(room) {
                Some(tally) => tally,
                None => rollup.rooms.entry(room.clone()).or_default(),
            };
            tally.count += with_values;
            for (quantity, holders, values) in &mut room_columns {
                let from = holders.partition_point(|i| *i < lo);
                let to = holders.partition_point(|i| *i < hi);
                tally.add_column(*quantity, &values[from..to]);
                *holders = &holders[to..];
                *values = &values[to..];
            }
        }
        lo = hi;
    }
}

/// The chain leaving a recomputed span: the new rollup's, or, when the span
/// has no readings any more, the chain it was entered with.
pub fn leaving(recomputed: Option<&Rollup>, entering: Chain) -> Chain {
    recomputed.map_or(entering, |r| r.chain)
}

/// The one cascade rule, for both engines: a rollup is computed with the
/// chain leaving the span before it, so after a span is recomputed, the next
/// stored rollup of that span is recomputed too while it entered with another
/// chain than the one that now leaves. Comparing with the next rollup itself
/// (not with what the span held before) also heals a cascade that a failed
/// batch left half done, when the batch is retried.
#[derive(Debug, Default)]
pub struct Cascade {
    todo: BTreeSet<Timestamp>,
}

impl Cascade {
    /// Spans to recompute (their starts), oldest first.
    pub fn new(starts: impl IntoIterator<Item = Timestamp>) -> Self {
        Self {
            todo: starts.into_iter().collect(),
        }
    }

    /// The oldest span still to recompute.
    pub fn next_start(&mut self) -> Option<Timestamp> {
        self.todo.pop_first()
    }

    /// Records that a span was recomputed and now leaves with `leaving`;
    /// `next` is the first stored rollup after it, if any.
    pub fn recomputed(&mut self, leaving: Chain, next: Option<&Rollup>) {
        if let Some(next) = next {
            if next.entering() != leaving {
                self.todo.insert(next.start);
            }
        }
    }
}

/// The day rollup of a UTC day from its hour rollups (in time order).
pub fn day(start: Timestamp, hours: &[Rollup]) -> Rollup {
    let entering = hours.first().map(Rollup::entering).unwrap_or_default();
    let mut d = Rollup::new(Span::Day, start, entering);
    for h in hours {
        d.chain = h.chain;
        d.all.merge(&h.all);
        for (room, t) in &h.rooms {
            d.rooms.entry(room.clone()).or_default().merge(t);
        }
        for c in Counter::ALL {
            let Some(hour) = h.counters.get(c) else {
                continue;
            };
            match d.counters.get_mut(c) {
                None => *d.counters.get_mut(c) = Some(*hour),
                Some(day) => {
                    let growth = hour
                        .incoming
                        .expect("a mark exists after the day's first reading of the counter");
                    day.inside_amount += growth.amount + hour.inside_amount;
                    day.inside_resets += growth.resets + hour.inside_resets;
                    day.leaving = hour.leaving;
                }
            }
        }
    }
    d
}

/// A part of a query's range, and what answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// The readings themselves (a range's ragged ends, or all of it).
    Raw(TimeRange),
    /// Rollups of this span, every one of which lies in one bucket.
    Rollups(Span, TimeRange),
}

/// How an aggregate over `range` in `bucketing`'s buckets splits into raw
/// readings and rollups: in each bucket, the whole UTC days inside it from
/// day rollups and the rest of it from hour rollups, where every bucket
/// boundary is a whole UTC hour; and the readings of what is left at the
/// ends. All raw when buckets are shorter than an hour, or a boundary falls
/// inside an hour (a zone whose offset is not a whole number of hours:
/// India, Nepal, parts of Australia). A local day of a zone a whole number
/// of hours off UTC holds no whole UTC day, and is its hours; a local week
/// or month is its whole UTC days and the hours at its two ends (before,
/// any boundary off UTC midnight made every bucket hours: a year of months
/// in Berlin computed 8,040 hours where 335 days and 22 days' hours do,
/// docs/BENCHMARKS.md).
///
/// Day rollups are used for days before `days_until` only: on DynamoDB a
/// device's open day (its newest) has no up-to-date day item yet, and is
/// read from its hours (docs/rollups.md).
pub fn segments(bucketing: &Bucketing, range: TimeRange, days_until: Timestamp) -> Vec<Segment> {
    let all_raw = vec![Segment::Raw(range)];
    if bucketing.width().shortest_millis() < HOUR_MS {
        return all_raw;
    }
    let (from, to) = (range.from().millis(), range.to().millis());
    let ceil = |ms: i64, unit: i64| ms + (unit - ms.rem_euclid(unit)).rem_euclid(unit);
    let floor = |ms: i64, unit: i64| ms - ms.rem_euclid(unit);
    let (h0, h1) = (ceil(from, HOUR_MS), floor(to, HOUR_MS));
    // The whole hours, cut at each bucket boundary inside them (sized for
    // them: a year of days grew these lists eight times each).
    let boundaries = bucketing.max_buckets(&range).min(super::MAX_BUCKETS + 2);
    let mut edges = Vec::with_capacity(boundaries + 1);
    edges.push(h0);
    let mut start = bucketing.start_of(range.from());
    while start < range.to() {
        if start.millis() > from {
            if start.millis().rem_euclid(HOUR_MS) != 0 {
                return all_raw;
            }
            if start.millis() < h1 {
                edges.push(start.millis());
            }
        }
        start = bucketing.end_of(start);
    }
    if h0 >= h1 {
        return all_raw;
    }
    edges.push(h1);
    let days_end = floor(days_until.millis().max(h0), DAY_MS);
    let mut cuts = Vec::with_capacity(3 * edges.len() + 3);
    cuts.push((from, None));
    for piece in edges.windows(2) {
        let (d0, d1) = (
            ceil(piece[0], DAY_MS),
            floor(piece[1], DAY_MS).min(days_end),
        );
        cuts.push((piece[0], Some(Span::Hour)));
        if d0 < d1 {
            cuts.push((d0, Some(Span::Day)));
            cuts.push((d1, Some(Span::Hour)));
        }
    }
    cuts.push((h1, None));
    cuts.push((to, None));
    // Empty pieces dropped, and pieces of one kind that meet made one.
    let mut kept: Vec<(i64, i64, Option<Span>)> = Vec::with_capacity(cuts.len());
    for w in cuts.windows(2).filter(|w| w[0].0 < w[1].0) {
        match kept.last_mut() {
            Some(last) if last.2 == w[0].1 && last.1 == w[0].0 => last.1 = w[1].0,
            _ => kept.push((w[0].0, w[1].0, w[0].1)),
        }
    }
    kept.into_iter()
        .map(|(a, b, span)| {
            let r = TimeRange::new(
                Timestamp::from_millis(a).expect("inside the range"),
                Timestamp::from_millis(b).expect("inside the range"),
            )
            .expect("from < to");
            match span {
                Some(span) => Segment::Rollups(span, r),
                None => Segment::Raw(r),
            }
        })
        .collect()
}

/// Each counter a span has readings of, and what they add, in
/// `Counter::ALL`'s order.
pub fn present(
    counters: &Counters<Option<CounterSpan>>,
) -> impl Iterator<Item = (Counter, &CounterSpan)> + Clone {
    Counter::ALL
        .into_iter()
        .filter_map(move |c| counters.get(c).as_ref().map(|span| (c, span)))
}

/// The chain a span leaving `chain` was entered with, from the `spans` of
/// the counters it has readings of: one it has no reading of keeps the
/// mark it entered with.
pub fn entering<'a>(
    spans: impl IntoIterator<Item = (Counter, &'a CounterSpan)>,
    chain: &Chain,
) -> Chain {
    let mut out = *chain;
    for (c, span) in spans {
        *out.get_mut(c) = span.entering;
    }
    out
}

/// Whether a fold standing at `chain` may take a span's counter `spans` in
/// place of its readings: they cover them (`covers`), and each counter
/// entered where the fold stands.
pub fn continues<'a>(
    covers: bool,
    mut spans: impl Iterator<Item = (Counter, &'a CounterSpan)>,
    chain: &Chain,
) -> bool {
    covers && spans.all(|(c, span)| *chain.get(c) == span.entering)
}

/// The chain a span leaves: each counter's leaving mark (of its `spans`),
/// or the mark kept through it (time in epoch milliseconds, reference) by
/// one it has no reading of.
pub fn chain_after<'a>(
    spans: impl IntoIterator<Item = (Counter, &'a CounterSpan)>,
    kept: Counters<Option<(i64, f64)>>,
) -> Result<Chain, String> {
    let mut chain = Chain::default();
    for c in Counter::ALL {
        *chain.get_mut(c) = kept.get(c).map(mark).transpose()?;
    }
    for (c, span) in spans {
        *chain.get_mut(c) = Some(span.leaving);
    }
    Ok(chain)
}

/// A time in epoch milliseconds, as stored.
pub fn time(ms: i64) -> Result<Timestamp, String> {
    Timestamp::from_millis(ms).map_err(|e| format!("time {ms}: {e}"))
}

/// A mark as stored: (time in epoch milliseconds, reference).
pub fn mark((at, reference): (i64, f64)) -> Result<Mark, String> {
    Ok(Mark {
        at: time(at)?,
        reference,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::counter::nearest;
    use crate::aggregate::{Bucketing, EnergyFold, StatsFold, Width};
    use crate::fixtures::{history, readings, Kind};
    use crate::model::TimeRange;
    use proptest::prelude::*;

    const T0: i64 = 1_795_000_000_000 - 1_795_000_000_000 % DAY_MS;

    fn ts(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms).unwrap()
    }

    /// Each counter's last reading before `from`, as `query::energy` feeds them.
    fn before(all: &[Reading], from: Timestamp) -> Vec<(Timestamp, Counters<Option<f64>>)> {
        nearest(all.iter().rev().filter(|r| r.timestamp < from))
    }

    /// Each counter's first reading at or after `to`.
    fn after(all: &[Reading], to: Timestamp) -> Vec<(Timestamp, Counters<Option<f64>>)> {
        nearest(all.iter().filter(|r| r.timestamp >= to))
    }

    /// The raw answers: what `query::stats` and `query::energy` compute.
    fn raw(
        all: &[Reading],
        b: Bucketing,
        range: TimeRange,
    ) -> (
        Vec<super::super::BucketStats>,
        Vec<super::super::EnergyBucket>,
    ) {
        let mut stats = StatsFold::new(b);
        let mut energy = EnergyFold::new(b, range);
        for (t, values) in before(all, range.from()) {
            energy.add(t, values);
        }
        for r in all.iter().filter(|r| range.contains(r.timestamp)) {
            stats.add(r);
            energy.add(r.timestamp, Counters::of(r));
        }
        for (t, values) in after(all, range.to()) {
            energy.add(t, values);
        }
        (stats.finish(), energy.finish())
    }

    /// Energy from the readings by the definition alone, without the fold:
    /// for each counter, each pair of its consecutive readings grows by the
    /// meter rule (`counter::step`), spread over the buckets the interval
    /// (its last hour, when it is longer) overlaps inside the range in
    /// proportion to time; a reset is counted
    /// in the bucket of the reading that made it. (bucket start, each
    /// counter's amount in `Counter::ALL`'s order, resets) for each bucket
    /// an interval overlaps. Each counter is read from its last reading
    /// before the range, as an answer reads it.
    fn reference(
        all: &[Reading],
        b: Bucketing,
        range: TimeRange,
    ) -> Vec<(Timestamp, [f64; 8], u32)> {
        use super::super::counter::{step, Step};
        let mut out: BTreeMap<Timestamp, ([f64; 8], u32)> = BTreeMap::new();
        let mut seen = [false; 8];
        for (i, c) in Counter::ALL.into_iter().enumerate() {
            let series: Vec<(i64, f64)> = all
                .iter()
                .filter_map(|r| Counters::of(r).get(c).map(|v| (r.timestamp.millis(), v)))
                .collect();
            // What a range's answer reads: from the counter's last reading
            // before the range to its first at or after its end (a dip
            // before that reading is not remembered).
            let first = series
                .iter()
                .rposition(|(t, _)| *t < range.from().millis())
                .unwrap_or(0);
            let end = series
                .iter()
                .position(|(t, _)| *t >= range.to().millis())
                .map_or(series.len(), |i| i + 1);
            let series = series.get(first..end).unwrap_or_default();
            seen[i] = !series.is_empty();
            let mut reference = None::<f64>;
            for pair in series.windows(2) {
                let ((t0, _), (t1, v1)) = (pair[0], pair[1]);
                // An interval over an hour grows in its last hour only.
                let t0 = t0.max(t1 - 3_600_000);
                let prev = reference.unwrap_or(pair[0].1);
                let (growth, reset, next) = match step(prev, v1) {
                    Step::Growth(g) => (g, false, v1),
                    Step::Dip => (0.0, false, prev),
                    Step::Reset => (0.0, true, v1),
                };
                reference = Some(next);
                if reset && range.contains(ts(t1)) {
                    out.entry(b.start_of(ts(t1))).or_default().1 += 1;
                }
                let (a, z) = (t0.max(range.from().millis()), t1.min(range.to().millis()));
                let mut start = b.start_of(ts(a)).millis();
                while start < z {
                    let end = b.end_of(ts(start)).millis();
                    let share = (end.min(z) - start.max(a)) as f64 / (t1 - t0) as f64;
                    out.entry(ts(start)).or_default().0[i] += growth * share;
                    start = end;
                }
            }
        }
        // A direction read only from its tariffs is their sum.
        for (total, [t1, t2]) in [(0, [4, 5]), (1, [6, 7])] {
            if !seen[total] && (seen[t1] || seen[t2]) {
                for (amounts, _) in out.values_mut() {
                    amounts[total] = amounts[t1] + amounts[t2];
                }
            }
        }
        out.into_iter()
            .map(|(t, (amounts, r))| (t, amounts, r))
            .collect()
    }

    /// The same from the hour rollups (the range is whole hours), falling
    /// back to an hour's readings where the fold does not continue it.
    fn from_rollups(
        all: &[Reading],
        hours: &[Rollup],
        b: Bucketing,
        range: TimeRange,
    ) -> (
        Vec<super::super::BucketStats>,
        Vec<super::super::EnergyBucket>,
    ) {
        let pieces = [Segment::Rollups(Span::Hour, range)];
        from_pieces(all, (hours, &[]), b, range, &pieces)
    }

    /// The same as `segments` plans it, as a store's answer reads it.
    fn from_segments(
        all: &[Reading],
        b: Bucketing,
        range: TimeRange,
    ) -> (
        Vec<super::super::BucketStats>,
        Vec<super::super::EnergyBucket>,
    ) {
        let hours = hours(Chain::default(), all);
        let days = spans(Span::Day, Chain::default(), all.iter());
        let pieces = segments(&b, range, Timestamp::MAX);
        from_pieces(all, (&hours, &days), b, range, &pieces)
    }

    /// The same from `pieces` of the range: readings for a raw piece; the
    /// hour or day rollups (of `rollups`) inside a rollups piece, falling
    /// back to a rollup's readings where the energy fold does not continue
    /// it.
    fn from_pieces(
        all: &[Reading],
        (hours, days): (&[Rollup], &[Rollup]),
        b: Bucketing,
        range: TimeRange,
        pieces: &[Segment],
    ) -> (
        Vec<super::super::BucketStats>,
        Vec<super::super::EnergyBucket>,
    ) {
        let mut stats = StatsFold::new(b);
        let mut energy = EnergyFold::new(b, range);
        for (t, values) in before(all, range.from()) {
            energy.add(t, values);
        }
        for piece in pieces {
            let (rollups, piece) = match *piece {
                Segment::Raw(piece) => {
                    for r in all.iter().filter(|r| piece.contains(r.timestamp)) {
                        stats.add(r);
                        energy.add(r.timestamp, Counters::of(r));
                    }
                    continue;
                }
                Segment::Rollups(Span::Hour, piece) => (hours, piece),
                Segment::Rollups(Span::Day, piece) => (days, piece),
            };
            for h in rollups
                .iter()
                .filter(|h| h.start >= piece.from() && h.end() <= piece.to())
            {
                stats.add_tally(h.start, &h.all);
                if h.continues(energy.chain()) {
                    energy.add_counters(h.start, h.spans());
                } else {
                    for r in all
                        .iter()
                        .filter(|r| h.start <= r.timestamp && r.timestamp < h.end())
                    {
                        energy.add(r.timestamp, Counters::of(r));
                    }
                }
            }
        }
        for (t, values) in after(all, range.to()) {
            energy.add(t, values);
        }
        (stats.finish(), energy.finish())
    }

    /// Two computations' stats and energy agree: the same buckets, counts
    /// and extremes, sums and kWh equal but for rounding.
    fn same_answers(
        (stats, energy): (&[super::super::BucketStats], &[super::super::EnergyBucket]),
        (o_stats, o_energy): (&[super::super::BucketStats], &[super::super::EnergyBucket]),
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(stats.len(), o_stats.len());
        for (a, b) in stats.iter().zip(o_stats) {
            prop_assert_eq!((a.start, a.count), (b.start, b.count));
            prop_assert_eq!(
                a.fields.keys().collect::<Vec<_>>(),
                b.fields.keys().collect::<Vec<_>>()
            );
            for (k, f) in &a.fields {
                let g = b.fields[k];
                prop_assert!(
                    (f.min, f.max, f.count) == (g.min, g.max, g.count) && close(f.sum, g.sum),
                    "{k}: {f:?} {g:?}"
                );
            }
        }
        prop_assert_eq!(energy.len(), o_energy.len(), "{:?}\n{:?}", energy, o_energy);
        for (a, b) in energy.iter().zip(o_energy) {
            prop_assert_eq!((a.start, a.resets), (b.start, b.resets));
            for c in Counter::ALL {
                let (x, y) = (a.amount(c), b.amount(c));
                prop_assert!(
                    x.is_some() == y.is_some() && close(x.unwrap_or(0.0), y.unwrap_or(0.0)),
                    "{c:?}: {a:?} {b:?}"
                );
            }
        }
        Ok(())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
    }

    fn utc(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn shown(segs: &[Segment]) -> Vec<String> {
        segs.iter()
            .map(|s| match s {
                Segment::Raw(r) => format!(
                    "raw {}..{}",
                    &r.from().to_string()[5..16],
                    &r.to().to_string()[5..16]
                ),
                Segment::Rollups(span, r) => format!(
                    "{} {}..{}",
                    span.as_str(),
                    &r.from().to_string()[5..16],
                    &r.to().to_string()[5..16]
                ),
            })
            .collect()
    }

    /// A meter on the quarter hour, whose readings fall on local midnights
    /// (23:00 UTC in Berlin's winter): each local day's energy from hour
    /// rollups is what its readings give, none of an hour that starts a day
    /// counted in the day before (the fold keeps the bucket it last placed).
    #[test]
    fn hours_that_start_a_local_day_count_in_it() {
        let h: Vec<(i64, Kind)> = (0..4 * 24 * 3)
            .map(|i| {
                (
                    15 * 60_000,
                    Kind::Meter(
                        3,
                        [
                            0.001 + (i % 7) as f64 * 1e-4,
                            0.002,
                            0.0,
                            0.0,
                            0.0,
                            0.0,
                            0.0,
                            0.0,
                        ],
                    ),
                )
            })
            .collect();
        let all = readings(&h);
        let hours = hours(Chain::default(), &all);
        let berlin = Bucketing::new(
            Width::Day,
            Some(crate::model::Zone::named("Europe/Berlin").unwrap()),
        );
        let from = berlin.start_of(ts(T0 + 2 * HOUR_MS));
        let range = TimeRange::new(from, berlin.end_of(berlin.end_of(from))).unwrap();
        assert_eq!(from.millis() % HOUR_MS, 0);
        let (stats, energy) = raw(&all, berlin, range);
        let (r_stats, r_energy) = from_rollups(&all, &hours, berlin, range);
        assert_eq!(energy.len(), 2);
        for (a, (start, amounts, _)) in r_energy.iter().zip(reference(&all, berlin, range)) {
            assert_eq!(a.start, start);
            assert!(
                close(a.kwh_bought, amounts[0]) && close(a.kwh_sold, amounts[1]),
                "{a:?} {amounts:?}"
            );
        }
        same_answers((&stats, &energy), (&r_stats, &r_energy)).unwrap();
    }

    #[test]
    fn a_range_splits_into_ragged_ends_hours_and_days() {
        let r = TimeRange::new(utc("2026-11-01T10:30:00Z"), utc("2026-11-04T05:15:00Z")).unwrap();
        assert_eq!(
            shown(&segments(
                &Bucketing::new(Width::Day, None),
                r,
                Timestamp::MAX
            )),
            [
                "raw 11-01T10:30..11-01T11:00",
                "hour 11-01T11:00..11-02T00:00",
                "day 11-02T00:00..11-04T00:00",
                "hour 11-04T00:00..11-04T05:00",
                "raw 11-04T05:00..11-04T05:15"
            ]
        );
        // Local days in a whole-hour zone compose hours; in India, readings.
        let berlin = Bucketing::new(
            Width::Day,
            Some(crate::model::Zone::named("Europe/Berlin").unwrap()),
        );
        assert_eq!(
            shown(&segments(&berlin, r, Timestamp::MAX)),
            [
                "raw 11-01T10:30..11-01T11:00",
                "hour 11-01T11:00..11-04T05:00",
                "raw 11-04T05:00..11-04T05:15"
            ]
        );
        let india = Bucketing::new(
            Width::Day,
            Some(crate::model::Zone::named("Asia/Kolkata").unwrap()),
        );
        assert_eq!(
            shown(&segments(&india, r, Timestamp::MAX)),
            ["raw 11-01T10:30..11-04T05:15"]
        );
        let quarter = Bucketing::new(Width::FifteenMinutes, None);
        assert_eq!(segments(&quarter, r, Timestamp::MAX), vec![Segment::Raw(r)]);
        let short =
            TimeRange::new(utc("2026-11-01T10:30:00Z"), utc("2026-11-01T11:15:00Z")).unwrap();
        assert_eq!(
            segments(&Bucketing::new(Width::Hour, None), short, Timestamp::MAX),
            vec![Segment::Raw(short)]
        );
        // From a device's open day on, hours stand in for days.
        let open = utc("2026-11-03T00:00:00Z");
        assert_eq!(
            shown(&segments(&Bucketing::new(Width::Day, None), r, open)),
            [
                "raw 11-01T10:30..11-01T11:00",
                "hour 11-01T11:00..11-02T00:00",
                "day 11-02T00:00..11-03T00:00",
                "hour 11-03T00:00..11-04T05:00",
                "raw 11-04T05:00..11-04T05:15"
            ]
        );
        assert_eq!(
            shown(&segments(
                &Bucketing::new(Width::Day, None),
                r,
                utc("2026-11-01T00:00:00Z")
            )),
            [
                "raw 11-01T10:30..11-01T11:00",
                "hour 11-01T11:00..11-04T05:00",
                "raw 11-04T05:00..11-04T05:15"
            ]
        );
    }

    #[test]
    fn a_local_month_is_its_whole_utc_days_and_the_hours_at_its_ends() {
        let berlin =
            |w| Bucketing::new(w, Some(crate::model::Zone::named("Europe/Berlin").unwrap()));
        // November and December in Berlin (an hour ahead of UTC).
        let r = TimeRange::new(utc("2026-10-31T23:00:00Z"), utc("2026-12-31T23:00:00Z")).unwrap();
        assert_eq!(
            shown(&segments(&berlin(Width::Month), r, Timestamp::MAX)),
            [
                "hour 10-31T23:00..11-01T00:00",
                "day 11-01T00:00..11-30T00:00",
                "hour 11-30T00:00..12-01T00:00",
                "day 12-01T00:00..12-31T00:00",
                "hour 12-31T00:00..12-31T23:00"
            ]
        );
        // Its weeks, Monday to Monday, likewise; its days are hours.
        let w = TimeRange::new(utc("2026-11-01T23:00:00Z"), utc("2026-11-15T23:00:00Z")).unwrap();
        assert_eq!(
            shown(&segments(&berlin(Width::Week), w, Timestamp::MAX)),
            [
                "hour 11-01T23:00..11-02T00:00",
                "day 11-02T00:00..11-08T00:00",
                "hour 11-08T00:00..11-09T00:00",
                "day 11-09T00:00..11-15T00:00",
                "hour 11-15T00:00..11-15T23:00"
            ]
        );
        assert_eq!(
            shown(&segments(&berlin(Width::Day), w, Timestamp::MAX)),
            ["hour 11-01T23:00..11-15T23:00"]
        );
        // Days from a device's open day on are its hours.
        assert_eq!(
            shown(&segments(
                &berlin(Width::Month),
                r,
                utc("2026-12-10T00:00:00Z")
            )),
            [
                "hour 10-31T23:00..11-01T00:00",
                "day 11-01T00:00..11-30T00:00",
                "hour 11-30T00:00..12-01T00:00",
                "day 12-01T00:00..12-10T00:00",
                "hour 12-10T00:00..12-31T23:00"
            ]
        );
    }

    proptest! {
        /// Stats and energy from hour rollups equal the raw computation, for
        /// hour and day buckets, in UTC and in zones a whole number of hours
        /// off, over any whole-hour range.
        #[test]
        fn rollups_answer_as_the_readings_do(
            h in history(),
            from_h in 0i64..48,
            len_h in 1i64..200,
            zone in 0usize..4,
            hourly in any::<bool>(),
        ) {
            let all = readings(&h);
            let hours = hours(Chain::default(), &all);
            let tz = [None, Some(crate::model::Zone::named("Europe/Berlin").unwrap()), Some(crate::model::Zone::named("America/New_York").unwrap()), Some(crate::model::Zone::named("Asia/Tokyo").unwrap())][zone];
            let b = Bucketing::new(if hourly { Width::Hour } else { Width::Day }, tz);
            // A range of whole buckets: whole hours, or local days.
            let from = b.start_of(ts(T0 + from_h * HOUR_MS));
            let mut to = from;
            for _ in 0..(if hourly { len_h } else { 1 + len_h / 24 }) {
                to = b.end_of(to);
            }
            let range = TimeRange::new(from, to).unwrap();
            let (stats, energy) = raw(&all, b, range);
            let (r_stats, r_energy) = from_rollups(&all, &hours, b, range);
            let oracle = reference(&all, b, range);
            prop_assert_eq!(energy.len(), oracle.len(), "{:?}\n{:?}", energy, oracle);
            for (a, (start, amounts, resets)) in energy.iter().zip(&oracle) {
                prop_assert_eq!((a.start, a.resets), (*start, *resets));
                for (c, want) in Counter::ALL.into_iter().zip(amounts) {
                    prop_assert!(close(a.amount(c).unwrap_or(0.0), *want), "{c:?}: {a:?} {amounts:?}");
                }
            }
            same_answers((&stats, &energy), (&r_stats, &r_energy))?;
        }

        /// Stats and energy as `segments` plans them (days inside each
        /// bucket, hours at its ends, readings at the range's ends) equal the
        /// raw computation, for hour, day, week and month buckets, in UTC
        /// and in zones a whole number of hours off, over any range.
        #[test]
        fn planned_segments_answer_as_the_readings_do(
            h in history(),
            from_m in 0i64..48 * 60,
            len_m in 1i64..30 * 24 * 60,
            zone in 0usize..4,
            width in 0usize..4,
        ) {
            let all = readings(&h);
            let tz = [None, Some(crate::model::Zone::named("Europe/Berlin").unwrap()), Some(crate::model::Zone::named("America/New_York").unwrap()), Some(crate::model::Zone::named("Asia/Tokyo").unwrap())][zone];
            let b = Bucketing::new([Width::Hour, Width::Day, Width::Week, Width::Month][width], tz);
            let from = ts(T0 + from_m * 60_000);
            let range = TimeRange::new(from, from.saturating_add_millis(len_m * 60_000)).unwrap();
            let (stats, energy) = raw(&all, b, range);
            let (p_stats, p_energy) = from_segments(&all, b, range);
            same_answers((&stats, &energy), (&p_stats, &p_energy))?;
        }

        /// Rollups folded from blocks' columns are the rollups of the
        /// readings, bit for bit (PartialEq compares every float), for hours
        /// and days: counters with their resets and marks, rooms a sensor
        /// moved between, watts alone, raw and thousandths columns, a
        /// history cut into blocks (a day's block and its segments) whose
        /// spans continue from one block into the next, entered with the
        /// chain a prefix of the history leaves.
        #[test]
        fn spans_from_columns_are_the_readings_spans(
            h in history(),
            prefix in 0usize..40,
            cuts in proptest::collection::vec(0usize..120, 0..3),
        ) {
            let all = readings(&h);
            let prefix = prefix.min(all.len() - 1);
            let entering = spans(Span::Hour, Chain::default(), all[..prefix].iter())
                .last()
                .map_or(Chain::default(), |r| r.chain);
            let rest = &all[prefix..];
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % rest.len()).chain([0, rest.len()]).collect();
            cuts.sort_unstable();
            cuts.dedup();
            for span in [Span::Hour, Span::Day] {
                let mut folded = Vec::new();
                for piece in cuts.windows(2) {
                    let bytes = crate::block::encode(&rest[piece[0]..piece[1]]).unwrap();
                    let columns = crate::block::decode_columns(&bytes).unwrap();
                    extend_spans_from_columns(&mut folded, span, entering, &columns).unwrap();
                }
                prop_assert_eq!(&folded, &spans(span, entering, rest.iter()));
            }
        }

        /// A day rollup is its hours merged: the same tallies, and counters
        /// that answer a day bucket as the hours do.
        #[test]
        fn a_day_is_its_hours(h in history()) {
            let all = readings(&h);
            let hours = hours(Chain::default(), &all);
            let first_day = Span::Day.start_of(all[0].timestamp);
            let of_day: Vec<Rollup> = hours.iter().filter(|r| Span::Day.start_of(r.start) == first_day).cloned().collect();
            let d = day(first_day, &of_day);
            let count: u64 = of_day.iter().map(|r| r.all.count).sum();
            prop_assert_eq!(d.all.count, count);
            let b = Bucketing::new(Width::Day, None);
            let range = TimeRange::new(first_day, Span::Day.end_of(first_day)).unwrap();
            let mut from_hours = EnergyFold::new(b, range);
            let mut from_day = EnergyFold::new(b, range);
            for r in &of_day {
                from_hours.add_counters(r.start, r.spans());
            }
            from_day.add_counters(d.start, d.spans());
            prop_assert_eq!(from_hours.chain(), from_day.chain());
            let (x, y) = (from_hours.finish(), from_day.finish());
            prop_assert_eq!(x.len(), y.len());
            for (a, b) in x.iter().zip(&y) {
                prop_assert!(a.resets == b.resets && close(a.kwh_bought, b.kwh_bought) && close(a.kwh_sold, b.kwh_sold), "{a:?} {b:?}");
            }
        }
    }
}
