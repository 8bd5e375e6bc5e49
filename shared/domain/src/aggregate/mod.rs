//! Aggregation: buckets aligned to UTC (day buckets optionally to local
//! midnight in an IANA time zone), min/max/mean/count per numeric field, and
//! energy per bucket from cumulative kWh counters. Pure folds: the query layer
//! streams pages of readings through them, so memory is bounded by the number
//! of buckets, never by the number of readings.

pub mod counter;
pub mod field_name;
pub mod rollup;
pub mod rollup_counters;
pub mod stats_map;

use crate::model::Zone;
use crate::model::{Reading, TimeRange, Timestamp};
use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use counter::{Chain, Counter, Counters, Growth};
use field_name::FieldName;
use rollup::{CounterSpan, Tally};
use stats_map::StatsMap;
use std::collections::BTreeMap;

/// Most buckets one request may ask for (a year of days, a month of 15 minutes).
pub const MAX_BUCKETS: usize = 5000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Minute,
    FiveMinutes,
    FifteenMinutes,
    Hour,
    Day,
    /// Calendar weeks, Monday to Monday, in the query's zone.
    Week,
    /// Calendar months in the query's zone.
    Month,
}

impl Width {
    pub const NAMES: [&'static str; 7] = ["1m", "5m", "15m", "1h", "1d", "1w", "1mo"];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "1m" => Width::Minute,
            "5m" => Width::FiveMinutes,
            "15m" => Width::FifteenMinutes,
            "1h" => Width::Hour,
            "1d" => Width::Day,
            "1w" => Width::Week,
            "1mo" => Width::Month,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Width::Minute => "1m",
            Width::FiveMinutes => "5m",
            Width::FifteenMinutes => "15m",
            Width::Hour => "1h",
            Width::Day => "1d",
            Width::Week => "1w",
            Width::Month => "1mo",
        }
    }

    /// The length of a bucket in UTC; `None` for weeks and months, whose
    /// length the calendar decides.
    fn fixed_millis(self) -> Option<i64> {
        Some(
            60_000
                * match self {
                    Width::Minute => 1,
                    Width::FiveMinutes => 5,
                    Width::FifteenMinutes => 15,
                    Width::Hour => 60,
                    Width::Day => 1440,
                    Width::Week | Width::Month => return None,
                },
        )
    }

    /// The shortest a bucket can be, in any zone (a local day can be 23 h).
    pub fn shortest_millis(self) -> i64 {
        const HOUR: i64 = 3_600_000;
        match self {
            Width::Day => 23 * HOUR,
            Width::Week => 7 * 24 * HOUR - HOUR,
            Width::Month => 28 * 24 * HOUR - HOUR,
            other => other.fixed_millis().expect("a sub-day width"),
        }
    }
}

/// How timestamps fall into buckets.
#[derive(Debug, Clone, Copy)]
pub struct Bucketing {
    width: Width,
    /// Day, week and month buckets start at local midnight here; `None` is UTC.
    tz: Option<Zone>,
}

impl Bucketing {
    pub fn new(width: Width, tz: Option<Zone>) -> Self {
        Self { width, tz }
    }

    pub fn width(&self) -> Width {
        self.width
    }

    pub fn tz_name(&self) -> &'static str {
        self.tz.map_or("UTC", |t| t.name())
    }

    /// The zone whose calendar places the buckets; `None` when they are a
    /// fixed length from the epoch (sub-day widths, and UTC days).
    fn calendar(&self) -> Option<Zone> {
        match self.width {
            Width::Day => self.tz,
            Width::Week | Width::Month => Some(self.tz.unwrap_or(Zone::UTC)),
            _ => None,
        }
    }

    /// The first date of the bucket holding `date`.
    fn first_date(&self, date: NaiveDate) -> NaiveDate {
        match self.width {
            Width::Week => {
                date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()))
            }
            Width::Month => date.with_day(1).expect("every month has a first"),
            _ => date,
        }
    }

    /// The first date of the bucket after the one starting on `date`.
    fn next_date(&self, date: NaiveDate) -> Option<NaiveDate> {
        match self.width {
            Width::Week => date.checked_add_days(chrono::Days::new(7)),
            Width::Month => date.checked_add_months(chrono::Months::new(1)),
            _ => date.succ_opt(),
        }
    }

    /// Start of the bucket holding `t`.
    pub fn start_of(&self, t: Timestamp) -> Timestamp {
        match (self.calendar(), self.width.fixed_millis()) {
            (Some(tz), _) => {
                let date = DateTime::<Utc>::from_timestamp_millis(t.millis())
                    .expect("a valid timestamp")
                    .with_timezone(&tz)
                    .date_naive();
                local_midnight(tz, self.first_date(date))
            }
            (None, Some(w)) => Timestamp::from_millis(t.millis() - t.millis().rem_euclid(w))
                .unwrap_or(Timestamp::MIN),
            (None, None) => unreachable!("weeks and months have a calendar"),
        }
    }

    /// End (exclusive) of the bucket that starts at `start`.
    pub fn end_of(&self, start: Timestamp) -> Timestamp {
        match (self.calendar(), self.width.fixed_millis()) {
            (Some(tz), _) => {
                // Noon is safely inside the first day, whatever DST does around midnight.
                let date = DateTime::<Utc>::from_timestamp_millis(start.millis() + 12 * 3_600_000)
                    .expect("a valid timestamp")
                    .with_timezone(&tz)
                    .date_naive();
                self.next_date(date)
                    .map_or(Timestamp::MAX, |next| local_midnight(tz, next))
            }
            (None, Some(w)) => start.saturating_add_millis(w),
            (None, None) => unreachable!("weeks and months have a calendar"),
        }
    }

    /// An upper bound of how many buckets overlap `range`.
    pub fn max_buckets(&self, range: &TimeRange) -> usize {
        let shortest = match self.calendar() {
            Some(_) => self.width.shortest_millis(),
            None => self.width.fixed_millis().expect("a fixed width"),
        };
        ((range.to().millis() - range.from().millis()) / shortest + 2) as usize
    }
}

/// The first instant of a local date (DST gaps at midnight start the day later).
fn local_midnight(tz: Zone, date: NaiveDate) -> Timestamp {
    let ms = (0..=3)
        .find_map(|h| {
            tz.from_local_datetime(&date.and_hms_opt(h, 0, 0)?)
                .earliest()
        })
        .map(|dt| dt.timestamp_millis())
        .unwrap_or_else(|| {
            date.and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc()
                .timestamp_millis()
        });
    Timestamp::from_millis(ms).unwrap_or(Timestamp::MIN)
}

/// min / max / mean / count of one field in one bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldStats {
    pub min: f64,
    pub max: f64,
    pub sum: f64,
    pub count: u64,
}

impl FieldStats {
    pub fn new(v: f64) -> Self {
        Self {
            min: v,
            max: v,
            sum: v,
            count: 1,
        }
    }

    pub fn add(&mut self, v: f64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
        self.count += 1;
    }

    pub fn merge(&mut self, other: &FieldStats) {
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.count += other.count;
    }

    pub fn mean(&self) -> f64 {
        self.sum / self.count as f64
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BucketStats {
    pub start: Timestamp,
    pub end: Timestamp,
    /// Readings in the bucket.
    pub count: u64,
    /// In name order (answers list them so); looked up by name too.
    pub fields: StatsMap<FieldName>,
}

/// Folds readings (in any order) into per-bucket statistics.
pub struct StatsFold {
    bucketing: Bucketing,
    /// Oldest first, each bucket its own span: a list, not a map, as what
    /// is folded comes oldest first and mostly lands in the newest bucket
    /// or a new one after it (a map's node per bucket was a tenth of a year
    /// of daily stats' fold).
    buckets: Vec<BucketStats>,
}

impl StatsFold {
    pub fn new(bucketing: Bucketing) -> Self {
        Self {
            bucketing,
            buckets: Vec::new(),
        }
    }

    /// The bucket `t` falls in, made (in its place) when it has no reading yet.
    fn bucket(&mut self, t: Timestamp) -> &mut BucketStats {
        // Readings and rollups come oldest first: most fall in the newest
        // bucket, found without a time zone's calendar or a search.
        let newest = self.buckets.len().wrapping_sub(1);
        if self
            .buckets
            .last()
            .is_some_and(|b| b.start <= t && t < b.end)
        {
            return &mut self.buckets[newest];
        }
        let start = self.bucketing.start_of(t);
        let at = match self.buckets.last() {
            Some(b) if b.start < start => self.buckets.len(),
            None => 0,
            Some(_) => match self.buckets.binary_search_by_key(&start, |b| b.start) {
                Ok(found) => return &mut self.buckets[found],
                Err(at) => at,
            },
        };
        let end = self.bucketing.end_of(start);
        self.buckets.insert(
            at,
            BucketStats {
                start,
                end,
                count: 0,
                fields: StatsMap::new(),
            },
        );
        &mut self.buckets[at]
    }

    /// The readings of a rollup that starts at `start`, whose span lies in
    /// one bucket (the caller's promise: buckets aligned to it).
    pub fn add_tally(&mut self, start: Timestamp, tally: &Tally) {
        if tally.count == 0 {
            return;
        }
        let bucket = self.bucket(start);
        if bucket.count == 0 {
            // A new bucket (a day's rollup into a day's bucket): its fields
            // built at once.
            bucket.fields = tally
                .fields
                .iter()
                .map(|(q, f)| (FieldName(*q), *f))
                .collect();
            bucket.count = tally.count;
            return;
        }
        bucket.count += tally.count;
        for (q, f) in &tally.fields {
            bucket
                .fields
                .update(FieldName(*q), |mine| mine.merge(f), || *f);
        }
    }

    pub fn add(&mut self, r: &Reading) {
        let bucket = self.bucket(r.timestamp);
        bucket.count += 1;
        for (q, v) in r.measurement.values().iter() {
            bucket
                .fields
                .update(FieldName(*q), |f| f.add(*v), || FieldStats::new(*v));
        }
    }

    /// Buckets that hold readings, oldest first (empty buckets are omitted).
    pub fn finish(self) -> Vec<BucketStats> {
        self.buckets
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnergyBucket {
    pub start: Timestamp,
    pub end: Timestamp,
    /// kWh bought (growth of `cumulative_kwh_p`) in the bucket.
    pub kwh_bought: f64,
    /// kWh sold (growth of `cumulative_kwh_n`) in the bucket.
    pub kwh_sold: f64,
    /// m³ of gas (growth of `gas_m3`), where the device has a gas counter.
    pub m3_gas: Option<f64>,
    /// m³ of water (growth of `water_m3`), where it has a water counter.
    pub m3_water: Option<f64>,
    /// Each tariff's kWh of a two-tariff meter (growth of
    /// `cumulative_kwh_p_t1`, ...), where it has that counter: bought in
    /// tariff 1 and 2, then sold.
    pub kwh_tariffs: [Option<f64>; 4],
    /// Counter drops (meter resets or replacements) seen in the bucket.
    pub resets: u32,
}

impl EnergyBucket {
    fn new(start: Timestamp, end: Timestamp) -> Self {
        EnergyBucket {
            start,
            end,
            kwh_bought: 0.0,
            kwh_sold: 0.0,
            m3_gas: None,
            m3_water: None,
            kwh_tariffs: [None; 4],
            resets: 0,
        }
    }

    /// What counter `c` added in the bucket, in its unit (kWh or m³).
    pub fn amount(&self, c: Counter) -> Option<f64> {
        match c {
            Counter::Bought => Some(self.kwh_bought),
            Counter::Sold => Some(self.kwh_sold),
            Counter::Gas => self.m3_gas,
            Counter::Water => self.m3_water,
            c => self.kwh_tariffs[tariff_slot(c)],
        }
    }

    fn add(&mut self, c: Counter, amount: f64) {
        match c {
            Counter::Bought => self.kwh_bought += amount,
            Counter::Sold => self.kwh_sold += amount,
            Counter::Gas => *self.m3_gas.get_or_insert(0.0) += amount,
            Counter::Water => *self.m3_water.get_or_insert(0.0) += amount,
            c => *self.kwh_tariffs[tariff_slot(c)].get_or_insert(0.0) += amount,
        }
    }
}

/// A tariff counter's place in `EnergyBucket::kwh_tariffs`.
fn tariff_slot(c: Counter) -> usize {
    Counter::TARIFFS
        .iter()
        .position(|t| *t == c)
        .expect("only tariff counters have a slot")
}

/// Energy per bucket from cumulative counters. Feed a meter's readings in
/// time order, including each counter's last reading before the range and
/// its first after it:
///
/// * Each counter (bought, sold, gas, water) is followed on its own, from
///   the readings that carry it: a meter may report any of them, and gain
///   one part way. Between two consecutive readings of a counter it grows by
///   `later - earlier`; that growth is spread over the interval in
///   proportion to time, so a bucket boundary inside the interval splits it
///   (the counter is read across the boundary by linear interpolation). An
///   interval longer than an hour spreads its growth over its last hour
///   only (`counter::spread_from`: a counter reported on change stood still
///   until just before).
/// * A drop below 90 % of the counter's reference (its last accepted value) is
///   a meter reset or replacement: that interval contributes nothing, the drop
///   is counted in `resets`, and growth restarts from the new value. A smaller
///   dip, or a 0, is a glitch and is ignored (`counter`). Energy is never
///   negative.
/// * Only the parts of intervals inside the range count. A bucket no interval
///   overlaps is omitted.
pub struct EnergyFold {
    bucketing: Bucketing,
    range: TimeRange,
    chain: Chain,
    buckets: BTreeMap<Timestamp, EnergyBucket>,
    /// The bucket last placed, `[start, end)`: a year of hour rollups in
    /// local days asks for each day 24 times and more, and a zone's
    /// calendar was half of such an answer's time (docs/BENCHMARKS.md).
    last: Option<(Timestamp, Timestamp)>,
}

impl EnergyFold {
    pub fn new(bucketing: Bucketing, range: TimeRange) -> Self {
        Self {
            bucketing,
            range,
            chain: Chain::default(),
            buckets: BTreeMap::new(),
            last: None,
        }
    }

    /// The bucket holding `t`, `[start, end)`.
    fn span_of(&mut self, t: Timestamp) -> (Timestamp, Timestamp) {
        match self.last {
            Some((start, end)) if start <= t && t < end => (start, end),
            _ => self.span_from(self.bucketing.start_of(t)),
        }
    }

    /// The bucket that starts at `start`, `[start, end)`.
    fn span_from(&mut self, start: Timestamp) -> (Timestamp, Timestamp) {
        let span = match self.last {
            Some((s, end)) if s == start => (start, end),
            _ => (start, self.bucketing.end_of(start)),
        };
        self.last = Some(span);
        span
    }

    fn bucket(&mut self, (start, end): (Timestamp, Timestamp)) -> &mut EnergyBucket {
        // Spans come oldest first: most fall in the newest bucket, found
        // without a search.
        if self
            .buckets
            .last_key_value()
            .is_some_and(|(s, _)| *s == start)
        {
            return self.buckets.last_entry().expect("just seen").into_mut();
        }
        self.buckets
            .entry(start)
            .or_insert_with(|| EnergyBucket::new(start, end))
    }

    /// Adds the next reading's counters, those it carries (readings must
    /// come in time order).
    pub fn add(&mut self, t: Timestamp, values: Counters<Option<f64>>) {
        for c in Counter::ALL {
            if let Some(v) = *values.get(c) {
                if let Some(growth) = self.chain.read(c, t, v) {
                    self.add_growth(c, &growth);
                }
            }
        }
    }

    /// Where the counters stand after what was added.
    /// By reference: a year of a meter's hours asks once an hour, and the
    /// chain has room for eight counters' marks (192 bytes).
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    fn add_growth(&mut self, c: Counter, g: &Growth) {
        if g.resets > 0 && self.range.contains(g.to) {
            let span = self.span_of(g.to);
            self.bucket(span).resets += g.resets;
        }
        self.spread(c, g.from, g.to, g.amount);
    }

    /// A rollup's counters in place of its readings. The caller promises that
    /// the fold stands where the rollup's readings of each counter began
    /// (`chain()` equals its entering chain for every counter it read), and
    /// that the rollup's span lies inside the range and in one bucket; then
    /// this adds exactly what its readings would have.
    pub fn add_counters<'a>(
        &mut self,
        start: Timestamp,
        spans: impl IntoIterator<Item = (Counter, &'a CounterSpan)>,
    ) {
        for (c, span) in spans {
            debug_assert_eq!(*self.chain.get(c), span.entering);
            if let Some(growth) = &span.incoming {
                self.add_growth(c, growth);
            }
            // As the readings would: a bucket only where a link between them lies.
            if span.leaving.at > span.first_at {
                let holding = self.span_of(start);
                let bucket = self.bucket(holding);
                bucket.add(c, span.inside_amount);
                bucket.resets += span.inside_resets;
            }
            *self.chain.get_mut(c) = Some(span.leaving);
        }
    }

    fn spread(&mut self, c: Counter, t0: Timestamp, t1: Timestamp, kwh: f64) {
        let t0 = counter::spread_from(t0, t1);
        let span = (t1.millis() - t0.millis()) as f64;
        let a = t0.max(self.range.from());
        let b = t1.min(self.range.to());
        if span <= 0.0 || a >= b {
            return;
        }
        let (mut start, mut end) = self.span_of(a);
        while start < b {
            let share = (end.min(b).millis() - start.max(a).millis()) as f64 / span;
            self.bucket((start, end)).add(c, kwh * share);
            if end >= b {
                break;
            }
            (start, end) = self.span_from(end);
        }
    }

    /// Buckets overlapped by an interval between readings, oldest first; energies
    /// rounded to 6 decimals (mWh) so that float noise does not show.
    pub fn finish(self) -> Vec<EnergyBucket> {
        // A volume or tariff counter the fold followed has an amount in
        // every bucket (0 where it stood still); one the device has not is
        // left out.
        let followed = |c: Counter| self.chain.get(c).is_some();
        let (gas, water) = (followed(Counter::Gas), followed(Counter::Water));
        let tariffs = Counter::TARIFFS.map(followed);
        // A meter whose readings carry its tariffs but no total (Home
        // Assistant's `_t1` and `_t2` entities) has their sum as its total
        // (the tariffs' rule of `counter::counted_between`).
        let summed =
            Counter::ELECTRICITY.map(|c| !followed(c) && c.tariffs().iter().any(|t| followed(*t)));
        self.buckets
            .into_values()
            .map(|mut b| {
                for (slot, followed) in tariffs.iter().enumerate() {
                    b.kwh_tariffs[slot] =
                        followed.then(|| to_the_mwh(b.kwh_tariffs[slot].unwrap_or(0.0)));
                }
                if summed[0] {
                    b.kwh_bought =
                        b.kwh_tariffs[0].unwrap_or(0.0) + b.kwh_tariffs[1].unwrap_or(0.0);
                }
                if summed[1] {
                    b.kwh_sold = b.kwh_tariffs[2].unwrap_or(0.0) + b.kwh_tariffs[3].unwrap_or(0.0);
                }
                b.kwh_bought = to_the_mwh(b.kwh_bought);
                b.kwh_sold = to_the_mwh(b.kwh_sold);
                b.m3_gas = gas.then(|| to_the_mwh(b.m3_gas.unwrap_or(0.0)));
                b.m3_water = water.then(|| to_the_mwh(b.m3_water.unwrap_or(0.0)));
                b
            })
            .collect()
    }
}

/// kWh to the milliwatt-hour (6 decimals; m³ to the millilitre), so that
/// float noise does not show: 6532.1 Wh read as kWh is 6.5321, not
/// 6.532100000000001.
pub fn to_the_mwh(kwh: f64) -> f64 {
    (kwh * 1e6).round() / 1e6
}

impl counter::Counters<f64> {
    /// What each counter added over `buckets`.
    pub fn of_buckets(buckets: &[EnergyBucket]) -> Self {
        let mut t = Self::default();
        for b in buckets {
            t.add_bucket(b);
        }
        t
    }

    /// `b`'s amounts added, a counter it lacks as 0.
    pub fn add_bucket(&mut self, b: &EnergyBucket) {
        for c in counter::Counter::ALL {
            *self.get_mut(c) += b.amount(c).unwrap_or(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn hours(from: &str, to: &str) -> (Bucketing, TimeRange) {
        (
            Bucketing::new(Width::Hour, None),
            TimeRange::new(ts(from), ts(to)).unwrap(),
        )
    }

    fn energy(
        b: Bucketing,
        range: TimeRange,
        readings: &[(&str, f64, f64)],
    ) -> Vec<(String, f64, f64, u32)> {
        let mut fold = EnergyFold::new(b, range);
        for (t, p, n) in readings {
            fold.add(
                ts(t),
                Counters {
                    bought: Some(*p),
                    sold: Some(*n),
                    ..Default::default()
                },
            );
        }
        fold.finish()
            .into_iter()
            .map(|b| {
                (
                    b.start.to_string()[11..16].to_owned(),
                    b.kwh_bought,
                    b.kwh_sold,
                    b.resets,
                )
            })
            .collect()
    }

    /// A two-tariff meter (issue 79): a P1 telegram carries the total and
    /// its tariffs, whose growth splits it; Home Assistant's tariff
    /// entities carry the tariffs alone, and their sum is the total.
    #[test]
    fn tariffs_split_the_total_or_make_it() {
        let (b, range) = hours("2026-11-21T00:00:00Z", "2026-11-21T03:00:00Z");
        let fold = |readings: &[(&str, Counters<Option<f64>>)]| {
            let mut fold = EnergyFold::new(b, range);
            for (t, values) in readings {
                fold.add(ts(t), *values);
            }
            fold.finish()
        };
        let p1 = |total: f64, t1: f64, t2: f64| Counters {
            bought: Some(total),
            bought_t1: Some(t1),
            bought_t2: Some(t2),
            ..Default::default()
        };
        let telegrams = fold(&[
            ("2026-11-21T00:00:00Z", p1(1000.0, 600.0, 400.0)),
            ("2026-11-21T01:00:00Z", p1(1002.0, 600.0, 402.0)),
            ("2026-11-21T02:00:00Z", p1(1005.0, 603.0, 402.0)),
        ]);
        let split: Vec<_> = telegrams
            .iter()
            .map(|b| (b.kwh_bought, b.kwh_tariffs, b.amount(Counter::BoughtT1)))
            .collect();
        assert_eq!(
            split,
            [
                (2.0, [Some(0.0), Some(2.0), None, None], Some(0.0)),
                (3.0, [Some(3.0), Some(0.0), None, None], Some(3.0)),
            ]
        );
        let entity = |t1: Option<f64>, t2: Option<f64>| Counters {
            bought_t1: t1,
            bought_t2: t2,
            ..Default::default()
        };
        let entities = fold(&[
            ("2026-11-21T00:00:00Z", entity(Some(600.0), None)),
            ("2026-11-21T00:00:05Z", entity(None, Some(400.0))),
            ("2026-11-21T01:00:00Z", entity(None, Some(402.0))),
            ("2026-11-21T02:00:00Z", entity(Some(603.0), None)),
        ]);
        let made: Vec<_> = entities
            .iter()
            .map(|b| (b.kwh_bought, b.kwh_sold))
            .collect();
        assert_eq!(made, [(2.0, 0.0), (3.0, 0.0)]);
        assert_eq!(entities[1].kwh_tariffs, [Some(3.0), Some(0.0), None, None]);
    }

    #[test]
    fn buckets_align_to_utc_and_day_buckets_to_local_midnight() {
        let b = Bucketing::new(Width::FifteenMinutes, None);
        assert_eq!(
            b.start_of(ts("2026-11-21T10:44:59.999Z")).to_string(),
            "2026-11-21T10:30:00.000Z"
        );
        assert_eq!(
            b.end_of(ts("2026-11-21T10:30:00Z")).to_string(),
            "2026-11-21T10:45:00.000Z"
        );
        let utc_day = Bucketing::new(Width::Day, None);
        assert_eq!(
            utc_day.start_of(ts("2026-11-21T23:30:00Z")).to_string(),
            "2026-11-21T00:00:00.000Z"
        );
        let tokyo = Bucketing::new(Width::Day, Some("Asia/Tokyo".parse().unwrap()));
        // 23:30 UTC is 08:30 the next day in Tokyo; its day starts at 15:00 UTC.
        assert_eq!(
            tokyo.start_of(ts("2026-11-21T23:30:00Z")).to_string(),
            "2026-11-21T15:00:00.000Z"
        );
        assert_eq!(
            tokyo.end_of(ts("2026-11-21T15:00:00Z")).to_string(),
            "2026-11-22T15:00:00.000Z"
        );
        // A DST day in Berlin is 23 h long.
        let berlin = Bucketing::new(Width::Day, Some("Europe/Berlin".parse().unwrap()));
        let start = berlin.start_of(ts("2026-03-29T12:00:00Z"));
        assert_eq!(start.to_string(), "2026-03-28T23:00:00.000Z");
        assert_eq!(berlin.end_of(start).to_string(), "2026-03-29T22:00:00.000Z");
        // Sub-day buckets stay UTC-aligned whatever the zone.
        let tokyo_hours = Bucketing::new(Width::Hour, Some("Asia/Kolkata".parse().unwrap()));
        assert_eq!(
            tokyo_hours.start_of(ts("2026-11-21T10:44:00Z")).to_string(),
            "2026-11-21T10:00:00.000Z"
        );
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first_at_local_midnight() {
        let week = Bucketing::new(Width::Week, None);
        // 2026-11-22 is a Sunday: its week began on Monday the 16th.
        let start = week.start_of(ts("2026-11-22T23:59:00Z"));
        assert_eq!(start.to_string(), "2026-11-16T00:00:00.000Z");
        assert_eq!(week.end_of(start).to_string(), "2026-11-23T00:00:00.000Z");
        let berlin_month = Bucketing::new(
            Width::Month,
            Some(crate::model::Zone::named("Europe/Berlin").unwrap()),
        );
        // 23:30 UTC on 31 October is 00:30 on 1 November in Berlin (CET).
        let start = berlin_month.start_of(ts("2026-10-31T23:30:00Z"));
        assert_eq!(start.to_string(), "2026-10-31T23:00:00.000Z");
        assert_eq!(
            berlin_month.end_of(start).to_string(),
            "2026-11-30T23:00:00.000Z"
        );
        // March in Berlin: 31 days less the hour DST takes.
        let march = berlin_month.start_of(ts("2026-03-15T12:00:00Z"));
        assert_eq!(
            berlin_month.end_of(march).millis() - march.millis(),
            31 * 86_400_000 - 3_600_000
        );
        let february = Bucketing::new(Width::Month, None).start_of(ts("2028-02-29T12:00:00Z"));
        assert_eq!(
            Bucketing::new(Width::Month, None)
                .end_of(february)
                .to_string(),
            "2028-03-01T00:00:00.000Z"
        );
    }

    #[test]
    fn bucket_counts_are_bounded_from_above() {
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z");
        assert!(b.max_buckets(&r) >= 24 && b.max_buckets(&r) <= 26);
        let year = TimeRange::new(ts("2026-01-01T00:00:00Z"), ts("2027-01-01T00:00:00Z")).unwrap();
        assert!(Bucketing::new(Width::Minute, None).max_buckets(&year) > MAX_BUCKETS);
        assert!(
            Bucketing::new(
                Width::Day,
                Some(crate::model::Zone::named("Europe/Berlin").unwrap())
            )
            .max_buckets(&year)
                < 400
        );
    }

    #[test]
    fn stats_give_min_max_mean_count_per_field_and_omit_empty_buckets() {
        use crate::model::{DeviceId, Measurement, RoomId};
        let r = |t: &str, temp: f64| Reading {
            device_id: DeviceId::parse("s1").unwrap(),
            timestamp: ts(t),
            measurement: Measurement::climate(RoomId::parse("bed").unwrap(), temp, 50.0).unwrap(),
        };
        let mut fold = StatsFold::new(Bucketing::new(Width::Hour, None));
        for x in [
            r("2026-11-21T00:10:00Z", 20.0),
            r("2026-11-21T00:50:00Z", 22.0),
            r("2026-11-21T03:00:00Z", 18.0),
        ] {
            fold.add(&x);
        }
        let out = fold.finish();
        assert_eq!(out.len(), 2, "01:00 and 02:00 are empty and omitted");
        let t = out[0].fields["temperature"];
        assert_eq!((t.min, t.max, t.mean(), t.count), (20.0, 22.0, 21.0, 2));
        assert_eq!(out[0].count, 2);
        assert_eq!(out[1].start.to_string(), "2026-11-21T03:00:00.000Z");
    }

    /// The fold's list of buckets takes readings in any order: newest
    /// first, shuffled, or a second device's from the start again (a
    /// room's), and tallies into buckets that readings made, as in order.
    #[test]
    fn stats_fold_readings_and_tallies_in_any_order_as_in_order() {
        use crate::aggregate::rollup::Tally;
        use crate::model::{DeviceId, Measurement, Quantity, RoomId};
        const HOUR: i64 = 3_600_000;
        let base = 1_795_000_000_000 - 1_795_000_000_000 % HOUR;
        let r = |minute: i64, temp: f64| Reading {
            device_id: DeviceId::parse("s1").unwrap(),
            timestamp: Timestamp::from_millis(base + minute * 60_000).unwrap(),
            measurement: Measurement::climate(RoomId::parse("bed").unwrap(), temp, 50.0).unwrap(),
        };
        let readings: Vec<Reading> = (0..600)
            .map(|i| r(i * 7 % 600 * 3, 15.0 + (i % 13) as f64))
            .collect();
        let mut tally = Tally {
            count: 3,
            ..Tally::default()
        };
        tally
            .fields
            .insert(Quantity::Humidity, FieldStats::new(40.0));
        let tally_at = Timestamp::from_millis(base + 5 * HOUR).unwrap();
        let fold = |order: &[&Reading]| {
            let mut fold = StatsFold::new(Bucketing::new(Width::Hour, None));
            for x in order {
                fold.add(x);
            }
            fold.add_tally(tally_at, &tally);
            fold.finish()
        };
        let mut sorted: Vec<&Reading> = readings.iter().collect();
        sorted.sort_by_key(|x| x.timestamp);
        let expected = fold(&sorted);
        assert_eq!(expected.len(), 30);
        assert!(expected.windows(2).all(|w| w[0].end <= w[1].start));
        let newest_first: Vec<&Reading> = sorted.iter().rev().copied().collect();
        let shuffled: Vec<&Reading> = readings.iter().collect();
        let twice: Vec<&Reading> = sorted.iter().chain(sorted.iter()).copied().collect();
        for order in [newest_first, shuffled] {
            assert_eq!(fold(&order), expected);
        }
        let doubled = fold(&twice);
        assert_eq!(doubled.len(), expected.len());
        assert!(doubled
            .iter()
            .zip(&expected)
            .all(|(d, e)| d.count == 2 * e.count - 3 * u64::from(e.start == tally_at)));
    }

    #[test]
    fn energy_is_counter_growth_per_bucket() {
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T02:00:00Z");
        let got = energy(
            b,
            r,
            &[
                ("2026-11-21T00:00:00Z", 10.0, 1.0),
                ("2026-11-21T01:00:00Z", 12.0, 1.5),
                ("2026-11-21T02:00:00Z", 15.0, 1.5),
            ],
        );
        assert_eq!(
            got,
            vec![("00:00".into(), 2.0, 0.5, 0), ("01:00".into(), 3.0, 0.0, 0)]
        );
    }

    #[test]
    fn a_boundary_inside_an_interval_splits_it_and_the_reading_before_from_counts() {
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T02:00:00Z");
        // 23:30 (before the range) -> 00:30 -> 01:30 -> 02:30 (after it).
        let got = energy(
            b,
            r,
            &[
                ("2026-11-20T23:30:00Z", 8.0, 0.0),
                ("2026-11-21T00:30:00Z", 10.0, 0.0),
                ("2026-11-21T01:30:00Z", 12.0, 0.0),
                ("2026-11-21T02:30:00Z", 14.0, 0.0),
            ],
        );
        // 00:00 bucket: half of 8->10 plus half of 10->12; 01:00: the other half plus half of 12->14.
        assert_eq!(
            got,
            vec![("00:00".into(), 2.0, 0.0, 0), ("01:00".into(), 2.0, 0.0, 0)]
        );
    }

    #[test]
    fn a_counter_drop_is_a_reset_and_never_negative_energy() {
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T03:00:00Z");
        let got = energy(
            b,
            r,
            &[
                ("2026-11-21T00:00:00Z", 500.0, 20.0),
                ("2026-11-21T00:59:00Z", 502.0, 20.0),
                ("2026-11-21T01:10:00Z", 3.0, 0.1), // meter replaced: both counters drop
                ("2026-11-21T02:00:00Z", 5.0, 0.25),
                ("2026-11-21T02:30:00Z", 6.0, 0.25),
            ],
        );
        assert_eq!(
            got,
            vec![
                ("00:00".into(), 2.0, 0.0, 0),
                ("01:00".into(), 2.0, 0.15, 2),
                ("02:00".into(), 1.0, 0.0, 0)
            ]
        );
        assert!(got.iter().all(|(_, p, n, _)| *p >= 0.0 && *n >= 0.0));
    }

    #[test]
    fn a_long_gap_grows_in_its_last_hour_and_a_single_reading_has_no_energy() {
        // Five hours without a reading (a counter reported on change): the
        // growth is the last hour's.
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T05:00:00Z");
        let got = energy(
            b,
            r,
            &[
                ("2026-11-21T00:00:00Z", 0.0, 0.0),
                ("2026-11-21T05:00:00Z", 10.0, 0.0),
            ],
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "04:00");
        assert!((got[0].1 - 10.0).abs() < 1e-9, "{got:?}");
        // Its last hour across a boundary: 04:30 to 05:30 is half each.
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T06:00:00Z");
        let got = energy(
            b,
            r,
            &[
                ("2026-11-21T00:10:00Z", 0.0, 0.0),
                ("2026-11-21T05:30:00Z", 4.0, 0.0),
            ],
        );
        let hours_of: Vec<(&str, f64)> = got.iter().map(|g| (g.0.as_str(), g.1)).collect();
        assert_eq!(hours_of, vec![("04:00", 2.0), ("05:00", 2.0)]);
        // An hour exactly is still spread over all of it.
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T02:00:00Z");
        let got = energy(
            b,
            r,
            &[
                ("2026-11-21T00:30:00Z", 0.0, 0.0),
                ("2026-11-21T01:30:00Z", 1.0, 0.0),
            ],
        );
        let hours_of: Vec<f64> = got.iter().map(|g| g.1).collect();
        assert_eq!(hours_of, vec![0.5, 0.5]);
        let (b, r) = hours("2026-11-21T00:00:00Z", "2026-11-21T05:00:00Z");
        assert_eq!(energy(b, r, &[("2026-11-21T01:00:00Z", 7.0, 0.0)]), vec![]);
    }
}
