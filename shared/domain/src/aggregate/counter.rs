//! The meter rule: how a cumulative counter's readings become energy, the one
//! rule that the raw computation and the rollups share (docs/rollups.md).
//!
//! Meters glitch. A counter that reads a little lower once (rounding, a bad
//! read) is not a new meter, and neither is a counter that reads 0 while its
//! sensor is unavailable; counting either as a reset makes an energy spike
//! when the old value comes back. Home Assistant counts a drop below 90 % of
//! the previous value as a new meter cycle; we do the same, and keep the
//! reference (the last value accepted) through smaller dips and zeros:
//!
//! * `v >= reference`: growth `v - reference`, and `v` is the new reference;
//! * `v == 0`, or `v >= 90 % of reference`: a dip, ignored (no energy, the
//!   reference stays, so the return to the old level adds nothing);
//! * otherwise: a reset (a new or replaced meter): no energy for that
//!   interval, counted in `resets`, and `v` is the new reference.

use crate::model::{Quantity, Reading, Timestamp};

/// Below this share of the reference, a lower value is a new meter.
pub const RESET_BELOW: f64 = 0.9;

/// The longest interval between two readings of a counter whose growth is
/// spread over all of it, in proportion to time. A longer one's growth is
/// spread over its last hour only ([`spread_from`]).
pub const SPREAD_AT_MOST_MS: i64 = 3_600_000;

/// Where the growth between readings at `t0` and `t1` starts: `t0`, or an
/// hour before `t1` when they are further apart.
///
/// A counter that is reported only when it changes (Home Assistant's
/// entities, a Zigbee plug's energy) stood still until just before the
/// reading that shows it moved: a solar meter's first change of the
/// morning, spread over the night, would sell energy in the dark. Within
/// an hour, linear interpolation places growth across a bucket boundary
/// (readings every few minutes); beyond it, the growth is placed where the
/// value that reveals it arrived, as Home Assistant's statistics and
/// VictoriaMetrics' `increase` do. A meter back from an outage has its
/// outage's energy in the hour it returns.
pub fn spread_from(t0: Timestamp, t1: Timestamp) -> Timestamp {
    if t1.millis() - t0.millis() > SPREAD_AT_MOST_MS {
        Timestamp::from_millis(t1.millis() - SPREAD_AT_MOST_MS).unwrap_or(t0)
    } else {
        t0
    }
}

/// What one reading does to a counter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    Growth(f64),
    Dip,
    Reset,
}

/// The step from `reference` (the last accepted value) to the value `v`.
pub fn step(reference: f64, v: f64) -> Step {
    if v >= reference {
        Step::Growth(v - reference)
    } else if v == 0.0 || v >= RESET_BELOW * reference {
        Step::Dip
    } else {
        Step::Reset
    }
}

/// A device's cumulative counters: a meter's kWh bought
/// (`cumulative_kwh_p`) and kWh sold (`cumulative_kwh_n`), a gas meter's m³
/// (`gas_m3`) and a water meter's (`water_m3`), and a two-tariff meter's
/// kWh of each tariff, bought and sold (`cumulative_kwh_p_t1`, ...). A
/// device reports any of them (a P1 meter's telegram electricity and gas),
/// and may gain one later: each counter is followed on its own, from its
/// own readings, by the same rule. Amounts are in the counter's unit: kWh
/// for the electricity ones, m³ for gas and water.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Counters<T> {
    pub bought: T,
    pub sold: T,
    pub gas: T,
    pub water: T,
    pub bought_t1: T,
    pub bought_t2: T,
    pub sold_t1: T,
    pub sold_t2: T,
}

/// One of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Bought,
    Sold,
    Gas,
    Water,
    BoughtT1,
    BoughtT2,
    SoldT1,
    SoldT2,
}

impl Counter {
    /// Every counter, in the order the stores keep them.
    pub const ALL: [Counter; 8] = [
        Counter::Bought,
        Counter::Sold,
        Counter::Gas,
        Counter::Water,
        Counter::BoughtT1,
        Counter::BoughtT2,
        Counter::SoldT1,
        Counter::SoldT2,
    ];
    /// The electricity counters (kWh): what the dashboard's electricity
    /// tables and a price are about.
    pub const ELECTRICITY: [Counter; 2] = [Counter::Bought, Counter::Sold];
    /// The counters of a volume (m³), gas and water: a stored rollup keeps
    /// them after the electricity ones (`Stored::x`).
    pub const VOLUMES: [Counter; 2] = [Counter::Gas, Counter::Water];
    /// A two-tariff meter's counters: a stored rollup keeps them after the
    /// volumes (`Stored::t`).
    pub const TARIFFS: [Counter; 4] = [
        Counter::BoughtT1,
        Counter::BoughtT2,
        Counter::SoldT1,
        Counter::SoldT2,
    ];

    /// The quantity a reading carries this counter in.
    pub fn quantity(self) -> Quantity {
        match self {
            Counter::Bought => Quantity::EnergyBought,
            Counter::Sold => Quantity::EnergySold,
            Counter::Gas => Quantity::Gas,
            Counter::Water => Quantity::Water,
            Counter::BoughtT1 => Quantity::EnergyBoughtT1,
            Counter::BoughtT2 => Quantity::EnergyBoughtT2,
            Counter::SoldT1 => Quantity::EnergySoldT1,
            Counter::SoldT2 => Quantity::EnergySoldT2,
        }
    }

    /// The counter a quantity is, if it is one (`quantity`'s inverse).
    pub fn of_quantity(q: Quantity) -> Option<Counter> {
        match q {
            Quantity::EnergyBought => Some(Counter::Bought),
            Quantity::EnergySold => Some(Counter::Sold),
            Quantity::Gas => Some(Counter::Gas),
            Quantity::Water => Some(Counter::Water),
            Quantity::EnergyBoughtT1 => Some(Counter::BoughtT1),
            Quantity::EnergyBoughtT2 => Some(Counter::BoughtT2),
            Quantity::EnergySoldT1 => Some(Counter::SoldT1),
            Quantity::EnergySoldT2 => Some(Counter::SoldT2),
            _ => None,
        }
    }

    /// The tariffs whose sum is this counter (bought's and sold's); none
    /// for the others.
    pub fn tariffs(self) -> &'static [Counter] {
        match self {
            Counter::Bought => &[Counter::BoughtT1, Counter::BoughtT2],
            Counter::Sold => &[Counter::SoldT1, Counter::SoldT2],
            _ => &[],
        }
    }

    /// The total a tariff counter is a part of (itself for the others).
    pub fn total(self) -> Counter {
        match self {
            Counter::BoughtT1 | Counter::BoughtT2 => Counter::Bought,
            Counter::SoldT1 | Counter::SoldT2 => Counter::Sold,
            c => c,
        }
    }
}

impl<T> Counters<T> {
    pub fn get(&self, c: Counter) -> &T {
        match c {
            Counter::Bought => &self.bought,
            Counter::Sold => &self.sold,
            Counter::Gas => &self.gas,
            Counter::Water => &self.water,
            Counter::BoughtT1 => &self.bought_t1,
            Counter::BoughtT2 => &self.bought_t2,
            Counter::SoldT1 => &self.sold_t1,
            Counter::SoldT2 => &self.sold_t2,
        }
    }

    pub fn get_mut(&mut self, c: Counter) -> &mut T {
        match c {
            Counter::Bought => &mut self.bought,
            Counter::Sold => &mut self.sold,
            Counter::Gas => &mut self.gas,
            Counter::Water => &mut self.water,
            Counter::BoughtT1 => &mut self.bought_t1,
            Counter::BoughtT2 => &mut self.bought_t2,
            Counter::SoldT1 => &mut self.sold_t1,
            Counter::SoldT2 => &mut self.sold_t2,
        }
    }

    /// Each counter's value made by `f`.
    pub fn from_fn(mut f: impl FnMut(Counter) -> T) -> Self {
        Counters {
            bought: f(Counter::Bought),
            sold: f(Counter::Sold),
            gas: f(Counter::Gas),
            water: f(Counter::Water),
            bought_t1: f(Counter::BoughtT1),
            bought_t2: f(Counter::BoughtT2),
            sold_t1: f(Counter::SoldT1),
            sold_t2: f(Counter::SoldT2),
        }
    }
}

impl Counters<Option<f64>> {
    /// The counters a reading carries, in one pass over its values (every
    /// reading a rollup folds asks: four lookups were 2 % of an ingest's
    /// instructions).
    pub fn of(r: &Reading) -> Self {
        let mut out = Self::default();
        for &(q, v) in r.measurement.values() {
            if let Some(c) = Counter::of_quantity(q) {
                *out.get_mut(c) = Some(v);
            }
        }
        out
    }

    pub fn any(&self) -> bool {
        Counter::ALL.into_iter().any(|c| self.get(c).is_some())
    }
}

impl Counters<bool> {
    /// Which counters a device's quantities hold. A meter with a
    /// direction's tariffs has that direction's total too, whether it
    /// reports one or not (the tariffs' rule of [`counted_between`]).
    pub fn among(quantities: impl IntoIterator<Item = Quantity>) -> Self {
        let mut found = Self::default();
        for q in quantities {
            if let Some(c) = Counter::of_quantity(q) {
                *found.get_mut(c) = true;
            }
        }
        for total in Counter::ELECTRICITY {
            let tariffs = total.tariffs().iter().any(|t| *found.get(*t));
            *found.get_mut(total) |= tariffs;
        }
        found
    }

    /// Whether it has an electricity counter: the device is an electricity meter.
    pub fn electricity(&self) -> bool {
        self.bought || self.sold
    }

    /// Whether it has any of `counters`.
    pub fn any_of(&self, counters: &[Counter]) -> bool {
        counters.iter().any(|c| *self.get(*c))
    }
}

/// Each counter's nearest reading among `readings` (given nearest first):
/// its time and that counter's value alone, oldest first, one entry per
/// time. What a fold is fed from outside a range: each counter from its
/// own neighbour, so that another counter's reading does not move it.
pub fn nearest<'a>(
    readings: impl IntoIterator<Item = &'a Reading>,
) -> Vec<(Timestamp, Counters<Option<f64>>)> {
    let mut found: Vec<(Timestamp, Counters<Option<f64>>)> = Vec::with_capacity(2);
    let mut missing = Counter::ALL.len();
    for r in readings {
        let values = Counters::of(r);
        for c in Counter::ALL {
            let Some(v) = *values.get(c) else { continue };
            if found.iter().any(|(_, f)| f.get(c).is_some()) {
                continue;
            }
            match found.iter_mut().find(|(t, _)| *t == r.timestamp) {
                Some((_, f)) => *f.get_mut(c) = Some(v),
                None => {
                    let mut f = Counters::default();
                    *f.get_mut(c) = Some(v);
                    found.push((r.timestamp, f));
                }
            }
            missing -= 1;
        }
        if missing == 0 {
            break;
        }
    }
    found.sort_by_key(|(t, _)| *t);
    found
}

/// Where one counter stands after one of its readings: that reading's time
/// and the counter's reference (the last value accepted).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub at: Timestamp,
    pub reference: f64,
}

/// What a counter's next reading adds: its growth over the interval since
/// its reading before, and whether it was a reset (0 or 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    pub from: Timestamp,
    pub to: Timestamp,
    /// In the counter's unit: kWh, or m³ of gas or water.
    pub amount: f64,
    pub resets: u32,
}

impl Mark {
    /// The mark after the counter's next reading, `v` at `at` (later than
    /// `self.at`), and what it adds.
    pub fn next(self, at: Timestamp, v: f64) -> (Mark, Growth) {
        let (reference, amount, resets) = match step(self.reference, v) {
            Step::Growth(g) => (v, g, 0),
            Step::Dip => (self.reference, 0.0, 0),
            Step::Reset => (v, 0.0, 1),
        };
        (
            Mark { at, reference },
            Growth {
                from: self.at,
                to: at,
                amount,
                resets,
            },
        )
    }
}

/// Where a device's counters stand: each one's mark, `None` for a counter
/// it has not reported (yet). Everything the energy of later readings
/// depends on, so a span's summary that ends with this state composes
/// exactly with the next one.
pub type Chain = Counters<Option<Mark>>;

impl Chain {
    /// One counter's next reading: the chain moves on, and what the reading
    /// adds (`None` for the counter's first reading).
    pub fn read(&mut self, c: Counter, at: Timestamp, v: f64) -> Option<Growth> {
        let mark = self.get_mut(c);
        match *mark {
            None => {
                *mark = Some(Mark { at, reference: v });
                None
            }
            Some(m) => {
                let (next, growth) = m.next(at, v);
                *mark = Some(next);
                Some(growth)
            }
        }
    }
}

/// What `counter` counted between `from` and `to` (kWh, or m³), by the
/// meter rule, from the counter's last reading at or before `from` (the
/// reference) through the readings to `to`; `None` where no reading has
/// the counter (issue 79: an energy rule on any counter).
///
/// The tariffs' rule: a meter whose readings carry a direction's tariffs
/// but not its total (Home Assistant's `_t1` and `_t2` entities) counts
/// the sum of its tariffs as that total; one that carries the total (a
/// P1 meter's telegram) counts the total, its tariffs being its parts.
/// `EnergyFold::finish` keeps the same rule.
pub fn counted_between(
    readings: &[Reading],
    counter: Counter,
    from: Timestamp,
    to: Timestamp,
) -> Option<f64> {
    let counted = counted_alone(readings, counter, from, to);
    if counted.is_some() || counter.tariffs().is_empty() {
        return counted;
    }
    counter
        .tariffs()
        .iter()
        .filter_map(|t| counted_alone(readings, *t, from, to))
        .reduce(|a, b| a + b)
}

/// What `counter`'s own readings counted ([`counted_between`]).
fn counted_alone(
    readings: &[Reading],
    counter: Counter,
    from: Timestamp,
    to: Timestamp,
) -> Option<f64> {
    let q = counter.quantity();
    let start = readings.partition_point(|r| r.timestamp <= from);
    let end = readings.partition_point(|r| r.timestamp <= to);
    let before = readings[..start].iter().rev().find(|r| r.get(q).is_some());
    let mut chain = Chain::default();
    let (mut total, mut any) = (0.0, false);
    for r in before.into_iter().chain(&readings[start..end.max(start)]) {
        if let Some(v) = r.get(q) {
            any = true;
            if let Some(g) = chain.read(counter, r.timestamp, v) {
                total += g.amount;
            }
        }
    }
    any.then_some(total)
}

/// kWh bought between `from` and `to` ([`counted_between`]).
pub fn bought_between(readings: &[Reading], from: Timestamp, to: Timestamp) -> Option<f64> {
    counted_between(readings, Counter::Bought, from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_dips_zeros_and_resets() {
        assert_eq!(step(100.0, 100.5), Step::Growth(0.5));
        assert_eq!(step(100.0, 100.0), Step::Growth(0.0));
        assert_eq!(step(100.0, 99.0), Step::Dip);
        assert_eq!(step(100.0, 90.0), Step::Dip, "90 % is still a dip");
        assert_eq!(step(100.0, 89.9), Step::Reset);
        assert_eq!(step(100.0, 0.0), Step::Dip, "a zero is a glitch");
        assert_eq!(step(100.0, 0.5), Step::Reset, "a new meter's first value");
        assert_eq!(step(0.0, 0.0), Step::Growth(0.0));
    }

    #[test]
    fn a_dip_or_a_zero_and_the_return_add_only_the_real_growth() {
        let t = |m: i64| Timestamp::from_millis(1_800_000_000_000 + m * 60_000).unwrap();
        let mut chain = Chain::default();
        assert_eq!(chain.read(Counter::Bought, t(0), 5000.0), None);
        let mut bought = 0.0;
        let mut resets = 0;
        for (m, v) in [(1, 4999.0), (2, 0.0), (3, 5000.25), (4, 5000.5)] {
            let growth = chain.read(Counter::Bought, t(m), v).unwrap();
            assert_eq!(growth.from, t(m - 1));
            bought += growth.amount;
            resets += growth.resets;
        }
        assert_eq!((bought, resets), (0.5, 0));
        // A real new meter: a reset, then growth from its first value.
        let growth = chain.read(Counter::Bought, t(5), 2.0).unwrap();
        assert_eq!((growth.amount, growth.resets), (0.0, 1));
        assert_eq!(chain.bought.unwrap().reference, 2.0);
        assert_eq!(chain.read(Counter::Bought, t(6), 3.0).unwrap().amount, 1.0);
        // The other counter was never read: it has no mark.
        assert_eq!(chain.sold, None);
    }

    #[test]
    fn a_counter_s_quantity_names_it_back() {
        for c in Counter::ALL {
            assert_eq!(Counter::of_quantity(c.quantity()), Some(c));
        }
        let counters = Quantity::ALL
            .iter()
            .filter(|q| Counter::of_quantity(**q).is_some())
            .count();
        assert_eq!(counters, Counter::ALL.len());
    }

    #[test]
    fn a_device_s_quantities_hold_the_counters_it_reported() {
        use Quantity::*;
        let among = |qs: &[Quantity]| {
            let c = Counters::<bool>::among(qs.iter().copied());
            (c.bought, c.sold, c.electricity(), c.gas, c.water)
        };
        assert_eq!(
            among(&[Power, EnergyBought]),
            (true, false, true, false, false)
        );
        assert_eq!(
            among(&[EnergySold, Power]),
            (false, true, true, false, false)
        );
        assert_eq!(
            among(&[EnergyBought, EnergySold]),
            (true, true, true, false, false)
        );
        assert_eq!(
            among(&[Gas, Water, Temperature]),
            (false, false, false, true, true),
            "a gas or water meter is no electricity meter"
        );
    }

    /// Each counter grows over the interval between its own readings: a
    /// sold counter read every other time spreads over two intervals.
    #[test]
    fn each_counter_follows_its_own_readings() {
        let t = |m: i64| Timestamp::from_millis(1_800_000_000_000 + m * 60_000).unwrap();
        let mut chain = Chain::default();
        chain.read(Counter::Bought, t(0), 10.0);
        chain.read(Counter::Sold, t(0), 1.0);
        chain.read(Counter::Bought, t(1), 11.0);
        let sold = chain.read(Counter::Sold, t(2), 3.0).unwrap();
        assert_eq!((sold.from, sold.to, sold.amount), (t(0), t(2), 2.0));
    }

    /// The tariffs' rule (issue 79): a meter whose readings carry its
    /// tariffs and no total counts their sum as bought; one that carries
    /// the total counts the total; a tariff counts on its own.
    #[test]
    fn bought_is_the_total_or_the_tariffs_sum() {
        use crate::model::{DeviceId, Measurement};
        let t = |m: i64| Timestamp::from_millis(1_800_000_000_000 + m * 60_000).unwrap();
        let reading = |m: i64, values: Vec<(Quantity, f64)>| Reading {
            device_id: DeviceId::parse("energy").unwrap(),
            timestamp: t(m),
            measurement: Measurement::new(None, values).unwrap(),
        };
        let entities = [
            reading(0, vec![(Quantity::EnergyBoughtT1, 600.0)]),
            reading(1, vec![(Quantity::EnergyBoughtT2, 400.0)]),
            reading(10, vec![(Quantity::EnergyBoughtT1, 601.5)]),
            reading(20, vec![(Quantity::EnergyBoughtT2, 400.25)]),
        ];
        assert_eq!(bought_between(&entities, t(0), t(30)), Some(1.75));
        assert_eq!(
            counted_between(&entities, Counter::BoughtT2, t(0), t(30)),
            Some(0.25)
        );
        assert_eq!(counted_between(&entities, Counter::Sold, t(0), t(30)), None);
        let telegram = |m: i64, t1: f64, t2: f64| {
            reading(
                m,
                vec![
                    (Quantity::EnergyBought, t1 + t2 + 10.0),
                    (Quantity::EnergyBoughtT1, t1),
                    (Quantity::EnergyBoughtT2, t2),
                ],
            )
        };
        let p1 = [telegram(0, 600.0, 400.0), telegram(10, 601.0, 400.5)];
        assert_eq!(
            bought_between(&p1, t(0), t(30)),
            Some(1.5),
            "the total, once"
        );
        assert!(
            Counters::among([Quantity::EnergyBoughtT2]).bought,
            "a meter with a tariff buys"
        );
    }
}
