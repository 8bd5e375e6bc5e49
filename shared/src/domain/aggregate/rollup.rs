//! Rollups: a device's readings of one UTC hour or one UTC day, summarized so
//! that answers over buckets of an hour or more compose from them exactly as
//! they would from the readings (docs/rollups.md):
//!
//! - per quantity: count, sum, min and max (the mean is derived);
//! - per room its readings named: the same for temperature and humidity, so a
//!   device that moved counts in the room it was in at the time;
//! - for the energy counters: the chain entering the span, the link into its
//!   first counter reading (growth spread over that interval, which may start
//!   in an earlier span), the growth and resets of the links inside it, and
//!   the chain leaving it (`counter::Chain`).
//!
//! A rollup is always recomputed whole from its readings (or, for a day, from
//! its hours), never incremented, so a reading delivered twice, late or out of
//! order cannot count twice.

use super::counter::{Chain, Link};
use super::{Bucketing, FieldStats};
use crate::model::{Quantity, Reading, RoomId, Span, TimeRange, Timestamp, DAY_MS, HOUR_MS};
use std::collections::{BTreeMap, BTreeSet};

/// Statistics of a set of readings: how many, and each quantity's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub count: u64,
    pub fields: BTreeMap<Quantity, FieldStats>,
}

impl Tally {
    fn add(&mut self, values: impl Iterator<Item = (Quantity, f64)>) {
        self.count += 1;
        for (q, v) in values {
            self.fields
                .entry(q)
                .and_modify(|f| f.add(v))
                .or_insert_with(|| FieldStats::new(v));
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.count += other.count;
        for (q, f) in &other.fields {
            self.fields
                .entry(*q)
                .and_modify(|mine| mine.merge(f))
                .or_insert(*f);
        }
    }
}

/// What a span's counter readings add to energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterSummary {
    /// The chain before the span's first counter reading; `None` when the
    /// device had none before.
    pub entering: Option<Chain>,
    /// The link from `entering` into the first counter reading of the span.
    pub incoming: Option<Link>,
    /// The time of the span's first counter reading.
    pub first_at: Timestamp,
    /// Growth of the links between the span's own readings.
    pub inside_bought: f64,
    pub inside_sold: f64,
    /// Resets at the span's readings after its first.
    pub inside_resets: u32,
    pub leaving: Chain,
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
    pub counters: Option<CounterSummary>,
    /// The device's counter chain after the span: `counters.leaving`, or the
    /// chain it entered with when the span has no counter reading.
    pub chain: Option<Chain>,
}

/// The quantities a room's answers are made of.
pub fn room_values(r: &Reading) -> impl Iterator<Item = (Quantity, f64)> + '_ {
    r.measurement
        .values()
        .iter()
        .copied()
        .filter(|(q, _)| matches!(q, Quantity::Temperature | Quantity::Humidity))
}

/// kWh bought and sold, when a reading has both counters.
pub fn counters(r: &Reading) -> Option<(f64, f64)> {
    Some((r.get(Quantity::EnergyBought)?, r.get(Quantity::EnergySold)?))
}

impl Rollup {
    /// The chain the span was entered with.
    pub fn entering(&self) -> Option<Chain> {
        match &self.counters {
            Some(c) => c.entering,
            None => self.chain,
        }
    }

    /// An empty span, entered with the device's counter chain `entering`.
    pub fn new(span: Span, start: Timestamp, entering: Option<Chain>) -> Self {
        Self {
            span,
            start,
            all: Tally::default(),
            rooms: BTreeMap::new(),
            counters: None,
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
        let Some((bought, sold)) = counters(r) else {
            return;
        };
        let (next, link) = match self.chain {
            None => (Chain::start(r.timestamp, bought, sold), None),
            Some(c) => {
                let (next, link) = c.next(r.timestamp, bought, sold);
                (next, Some(link))
            }
        };
        match &mut self.counters {
            None => {
                self.counters = Some(CounterSummary {
                    entering: self.chain,
                    incoming: link,
                    first_at: r.timestamp,
                    inside_bought: 0.0,
                    inside_sold: 0.0,
                    inside_resets: 0,
                    leaving: next,
                })
            }
            Some(c) => {
                let link = link.expect("a chain exists after the span's first counter reading");
                c.inside_bought += link.bought;
                c.inside_sold += link.sold;
                c.inside_resets += link.resets;
                c.leaving = next;
            }
        }
        self.chain = Some(next);
    }
}

/// The hour rollups of one device's readings (in time order, distinct
/// times), one per UTC hour that has readings. `entering` is the device's
/// counter chain before the first reading (the `leaving` of the hour before).
pub fn hours(entering: Option<Chain>, readings: &[Reading]) -> Vec<Rollup> {
    spans(Span::Hour, entering, readings.iter())
}

/// The rollups of a span of one device's readings (in time order, distinct times).
pub fn spans<'a>(
    span: Span,
    entering: Option<Chain>,
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

/// The chain leaving a recomputed span: the new rollup's, or, when the span
/// has no readings any more, the chain it was entered with.
pub fn leaving(recomputed: Option<&Rollup>, entering: Option<Chain>) -> Option<Chain> {
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
    pub fn recomputed(&mut self, leaving: Option<Chain>, next: Option<&Rollup>) {
        if let Some(next) = next {
            if next.entering() != leaving {
                self.todo.insert(next.start);
            }
        }
    }
}

/// The day rollup of a UTC day from its hour rollups (in time order).
pub fn day(start: Timestamp, hours: &[Rollup]) -> Rollup {
    let mut d = Rollup::new(Span::Day, start, hours.first().and_then(|h| h.entering()));
    for h in hours {
        d.chain = h.chain;
        d.all.merge(&h.all);
        for (room, t) in &h.rooms {
            d.rooms.entry(room.clone()).or_default().merge(t);
        }
        let Some(c) = h.counters else { continue };
        match &mut d.counters {
            None => d.counters = Some(c),
            Some(dc) => {
                let link = c
                    .incoming
                    .expect("a chain exists after the day's first counter reading");
                dc.inside_bought += link.bought + c.inside_bought;
                dc.inside_sold += link.sold + c.inside_sold;
                dc.inside_resets += link.resets + c.inside_resets;
                dc.leaving = c.leaving;
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
/// readings and rollups: whole UTC days where every bucket boundary is a
/// UTC midnight, whole hours where every one is a whole UTC hour, and the
/// readings of what is left at the ends. All raw when buckets are shorter
/// than an hour, or a boundary falls inside an hour (a zone whose offset is
/// not a whole number of hours: India, Nepal, parts of Australia).
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
    let mut aligned_to = [true, true]; // hours, days
    let mut start = bucketing.start_of(range.from());
    while start < range.to() {
        if start.millis() > from {
            aligned_to[0] &= start.millis().rem_euclid(HOUR_MS) == 0;
            aligned_to[1] &= start.millis().rem_euclid(DAY_MS) == 0;
        }
        start = bucketing.end_of(start);
    }
    if !aligned_to[0] {
        return all_raw;
    }
    let ceil = |ms: i64, unit: i64| ms + (unit - ms.rem_euclid(unit)).rem_euclid(unit);
    let floor = |ms: i64, unit: i64| ms - ms.rem_euclid(unit);
    let (h0, h1) = (ceil(from, HOUR_MS), floor(to, HOUR_MS));
    if h0 >= h1 {
        return all_raw;
    }
    let (d0, d1) = (
        ceil(h0, DAY_MS),
        floor(h1, DAY_MS).min(floor(days_until.millis().max(h0), DAY_MS)),
    );
    let mut cuts = vec![(from, None), (h0, Some(Span::Hour))];
    if aligned_to[1] && d0 < d1 {
        cuts.push((d0, Some(Span::Day)));
        cuts.push((d1, Some(Span::Hour)));
    }
    cuts.push((h1, None));
    cuts.push((to, None));
    cuts.windows(2)
        .filter(|w| w[0].0 < w[1].0)
        .map(|w| {
            let r = TimeRange::new(
                Timestamp::from_millis(w[0].0).expect("inside the range"),
                Timestamp::from_millis(w[1].0).expect("inside the range"),
            )
            .expect("from < to");
            match w[0].1 {
                Some(span) => Segment::Rollups(span, r),
                None => Segment::Raw(r),
            }
        })
        .collect()
}

/// A rollup as both engines store it (postcard bytes on SQLite, an item's
/// attributes on DynamoDB): short names, quantities and rooms by name, times
/// in epoch milliseconds. `v` is the shape's version. The names are `S`:
/// owned to store, or borrowed from the bytes read (`Stored<&str>`), so that
/// reading a year of daily rollups allocates no name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stored<S = String> {
    pub v: u8,
    /// Readings.
    pub n: u64,
    /// (quantity, count, min, max, sum) per quantity.
    pub f: Vec<StoredField<S>>,
    /// Per room: its name and its tally, or `None` when that is the whole
    /// span's (a room sensor's usual case).
    pub r: Vec<StoredRoom<S>>,
    pub c: Option<StoredCounters>,
    /// The chain after a span without counter readings (time, kWh bought,
    /// kWh sold); with them, it is `c.leaving`.
    pub ch: Option<(i64, f64, f64)>,
}

pub type StoredField<S = String> = (S, u64, f64, f64, f64);
pub type StoredRoom<S = String> = (S, Option<(u64, Vec<StoredField<S>>)>);

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredCounters {
    pub entering: Option<(i64, f64, f64)>,
    /// from, to, bought, sold, resets.
    pub incoming: Option<(i64, i64, f64, f64, u32)>,
    pub first: i64,
    pub inside: (f64, f64, u32),
    pub leaving: (i64, f64, f64),
}

const STORED_VERSION: u8 = 1;

fn stored_fields(t: &Tally) -> Vec<StoredField> {
    t.fields
        .iter()
        .map(|(q, f)| (q.name().to_owned(), f.count, f.min, f.max, f.sum))
        .collect()
}

fn stored_chain(c: &Chain) -> (i64, f64, f64) {
    (c.at.millis(), c.bought, c.sold)
}

impl From<&Rollup> for Stored {
    fn from(r: &Rollup) -> Self {
        Stored {
            v: STORED_VERSION,
            n: r.all.count,
            f: stored_fields(&r.all),
            r: r.rooms
                .iter()
                .map(|(room, t)| {
                    let tally = (t != &r.all).then(|| (t.count, stored_fields(t)));
                    (room.as_str().to_owned(), tally)
                })
                .collect(),
            c: r.counters.as_ref().map(|c| StoredCounters {
                entering: c.entering.as_ref().map(stored_chain),
                incoming: c
                    .incoming
                    .map(|l| (l.from.millis(), l.to.millis(), l.bought, l.sold, l.resets)),
                first: c.first_at.millis(),
                inside: (c.inside_bought, c.inside_sold, c.inside_resets),
                leaving: stored_chain(&c.leaving),
            }),
            ch: r
                .chain
                .as_ref()
                .filter(|_| r.counters.is_none())
                .map(stored_chain),
        }
    }
}

impl<S: AsRef<str>> Stored<S> {
    /// The rollup of `span` at `start`; an error names what does not decode.
    pub fn decode(self, span: Span, start: Timestamp) -> Result<Rollup, String> {
        if self.v != STORED_VERSION {
            return Err(format!(
                "rollup version {} (this build reads {STORED_VERSION})",
                self.v
            ));
        }
        let time = |ms: i64| Timestamp::from_millis(ms).map_err(|e| format!("time {ms}: {e}"));
        let chain = |(at, bought, sold): (i64, f64, f64)| -> Result<Chain, String> {
            Ok(Chain {
                at: time(at)?,
                bought,
                sold,
            })
        };
        let tally = |count: u64, fields: Vec<StoredField<S>>| -> Result<Tally, String> {
            let mut t = Tally {
                count,
                fields: BTreeMap::new(),
            };
            for (name, count, min, max, sum) in fields {
                let name = name.as_ref();
                let q =
                    Quantity::parse(name).ok_or_else(|| format!("unknown quantity {name:?}"))?;
                t.fields.insert(
                    q,
                    FieldStats {
                        min,
                        max,
                        sum,
                        count,
                    },
                );
            }
            Ok(t)
        };
        let all = tally(self.n, self.f)?;
        let mut rooms = BTreeMap::new();
        for (name, t) in self.r {
            let name = name.as_ref();
            let room = RoomId::parse(name).map_err(|e| format!("room {name:?}: {e}"))?;
            let t = match t {
                Some((count, fields)) => tally(count, fields)?,
                None => all.clone(),
            };
            rooms.insert(room, t);
        }
        let counters = match self.c {
            None => None,
            Some(c) => Some(CounterSummary {
                entering: c.entering.map(chain).transpose()?,
                incoming: match c.incoming {
                    None => None,
                    Some((from, to, bought, sold, resets)) => Some(Link {
                        from: time(from)?,
                        to: time(to)?,
                        bought,
                        sold,
                        resets,
                    }),
                },
                first_at: time(c.first)?,
                inside_bought: c.inside.0,
                inside_sold: c.inside.1,
                inside_resets: c.inside.2,
                leaving: chain(c.leaving)?,
            }),
        };
        let chain = match &counters {
            Some(c) => Some(c.leaving),
            None => self.ch.map(chain).transpose()?,
        };
        Ok(Rollup {
            span,
            start,
            all,
            rooms,
            counters,
            chain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::aggregate::{Bucketing, EnergyFold, StatsFold, Width};
    use crate::model::{DeviceId, Measurement, TimeRange};
    use proptest::prelude::*;

    const T0: i64 = 1_795_000_000_000 - 1_795_000_000_000 % DAY_MS;

    fn ts(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms).unwrap()
    }

    /// What a reading of the generated history is.
    #[derive(Debug, Clone)]
    enum Kind {
        /// The counter moves by this share of its value: growth, or a dip.
        Meter(f64),
        Zero,
        NewMeter,
        Climate(u8, f64),
    }

    fn history() -> impl Strategy<Value = Vec<(i64, Kind)>> {
        let kind = prop_oneof![
            8 => (0.0f64..0.01).prop_map(Kind::Meter),
            1 => (-0.08f64..0.0).prop_map(Kind::Meter),
            1 => Just(Kind::Zero),
            1 => Just(Kind::NewMeter),
            6 => (0u8..2, 15.0f64..25.0).prop_map(|(room, t)| Kind::Climate(room, t)),
        ];
        // Gaps from a second to five hours.
        prop::collection::vec((1_000i64..5 * HOUR_MS, kind), 1..120)
    }

    fn readings(h: &[(i64, Kind)]) -> Vec<Reading> {
        let device = DeviceId::parse("m-1").unwrap();
        let (mut t, mut kwh) = (T0, 1000.0f64);
        h.iter()
            .map(|(gap, kind)| {
                t += gap;
                let measurement = match kind {
                    Kind::Climate(room, temp) => Measurement::climate(
                        RoomId::parse(["bedroom", "hall"][*room as usize]).unwrap(),
                        (temp * 100.0).round() / 100.0,
                        50.0,
                    ),
                    Kind::Meter(share) => {
                        kwh = ((kwh * (1.0 + share)) * 1000.0).round() / 1000.0;
                        Measurement::power(kwh, 2.0, 100.0)
                    }
                    Kind::Zero => Measurement::power(0.0, 2.0, 100.0),
                    Kind::NewMeter => {
                        kwh = 3.0;
                        Measurement::power(kwh, 2.0, 100.0)
                    }
                }
                .unwrap();
                Reading {
                    device_id: device.clone(),
                    timestamp: ts(t),
                    measurement,
                }
            })
            .collect()
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
        let before = all
            .iter()
            .filter(|r| r.timestamp < range.from())
            .filter_map(|r| counters(r).map(|c| (r.timestamp, c)))
            .next_back();
        let after = all
            .iter()
            .filter(|r| r.timestamp >= range.to())
            .find_map(|r| counters(r).map(|c| (r.timestamp, c)));
        if let Some((t, (p, n))) = before {
            energy.add(t, p, n);
        }
        for r in all.iter().filter(|r| range.contains(r.timestamp)) {
            stats.add(r);
            if let Some((p, n)) = counters(r) {
                energy.add(r.timestamp, p, n);
            }
        }
        if let Some((t, (p, n))) = after {
            energy.add(t, p, n);
        }
        (stats.finish(), energy.finish())
    }

    /// The same from the hour rollups (the range is whole hours), falling
    /// back to an hour's readings while the fold's chain is not the rollups'.
    fn from_rollups(
        all: &[Reading],
        hours: &[Rollup],
        b: Bucketing,
        range: TimeRange,
    ) -> (
        Vec<super::super::BucketStats>,
        Vec<super::super::EnergyBucket>,
    ) {
        let mut stats = StatsFold::new(b);
        let mut energy = EnergyFold::new(b, range);
        let feed = |energy: &mut EnergyFold, r: &Reading| {
            if let Some((p, n)) = counters(r) {
                energy.add(r.timestamp, p, n);
            }
        };
        if let Some(r) = all
            .iter()
            .rfind(|r| r.timestamp < range.from() && counters(r).is_some())
        {
            feed(&mut energy, r);
        }
        for h in hours
            .iter()
            .filter(|h| h.start >= range.from() && h.end() <= range.to())
        {
            stats.add_tally(h.start, &h.all);
            let Some(c) = &h.counters else { continue };
            if energy.chain() == c.entering {
                energy.add_counters(h.start, c);
            } else {
                for r in all
                    .iter()
                    .filter(|r| h.start <= r.timestamp && r.timestamp < h.end())
                {
                    feed(&mut energy, r);
                }
            }
        }
        if let Some(r) = all
            .iter()
            .find(|r| r.timestamp >= range.to() && counters(r).is_some())
        {
            feed(&mut energy, r);
        }
        (stats.finish(), energy.finish())
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
        let berlin = Bucketing::new(Width::Day, Some(chrono_tz::Europe::Berlin));
        assert_eq!(
            shown(&segments(&berlin, r, Timestamp::MAX)),
            [
                "raw 11-01T10:30..11-01T11:00",
                "hour 11-01T11:00..11-04T05:00",
                "raw 11-04T05:00..11-04T05:15"
            ]
        );
        let india = Bucketing::new(Width::Day, Some(chrono_tz::Asia::Kolkata));
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
            let hours = hours(None, &all);
            let tz = [None, Some(chrono_tz::Europe::Berlin), Some(chrono_tz::America::New_York), Some(chrono_tz::Asia::Tokyo)][zone];
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
            prop_assert_eq!(stats.len(), r_stats.len());
            for (a, b) in stats.iter().zip(&r_stats) {
                prop_assert_eq!((a.start, a.count), (b.start, b.count));
                prop_assert_eq!(a.fields.keys().collect::<Vec<_>>(), b.fields.keys().collect::<Vec<_>>());
                for (k, f) in &a.fields {
                    let g = b.fields[k];
                    prop_assert!((f.min, f.max, f.count) == (g.min, g.max, g.count) && close(f.sum, g.sum), "{k}: {f:?} {g:?}");
                }
            }
            prop_assert_eq!(energy.len(), r_energy.len(), "{:?}\n{:?}", energy, r_energy);
            for (a, b) in energy.iter().zip(&r_energy) {
                prop_assert_eq!((a.start, a.resets), (b.start, b.resets));
                prop_assert!(close(a.kwh_bought, b.kwh_bought) && close(a.kwh_sold, b.kwh_sold), "{a:?} {b:?}");
            }
        }

        /// The stored shape gives back the rollup, bit for bit.
        #[test]
        fn a_stored_rollup_comes_back_whole(h in history()) {
            let all = readings(&h);
            for r in hours(None, &all).into_iter().chain(spans(Span::Day, None, all.iter())) {
                let text = serde_json::to_string(&Stored::from(&r)).unwrap();
                let back: Stored = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back.decode(r.span, r.start).unwrap(), r.clone());
                let bytes = postcard::to_allocvec(&Stored::from(&r)).unwrap();
                let back: Stored = postcard::from_bytes(&bytes).unwrap();
                prop_assert_eq!(back.decode(r.span, r.start).unwrap(), r);
            }
        }

        /// A day rollup is its hours merged: the same tallies, and counters
        /// that answer a day bucket as the hours do.
        #[test]
        fn a_day_is_its_hours(h in history()) {
            let all = readings(&h);
            let hours = hours(None, &all);
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
                if let Some(c) = &r.counters { from_hours.add_counters(r.start, c); }
            }
            if let Some(c) = &d.counters { from_day.add_counters(d.start, c); }
            prop_assert_eq!(from_hours.chain(), from_day.chain());
            let (x, y) = (from_hours.finish(), from_day.finish());
            prop_assert_eq!(x.len(), y.len());
            for (a, b) in x.iter().zip(&y) {
                prop_assert!(a.resets == b.resets && close(a.kwh_bought, b.kwh_bought), "{a:?} {b:?}");
            }
        }
    }
}
