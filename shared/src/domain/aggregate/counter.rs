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

use crate::model::Timestamp;

/// Below this share of the reference, a lower value is a new meter.
pub const RESET_BELOW: f64 = 0.9;

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

/// Where the two counters (kWh bought, kWh sold) of a device stand after a
/// reading: its time and each counter's reference. Everything the energy of
/// later readings depends on, so a bucket's summary that ends with this
/// state composes exactly with the next one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chain {
    pub at: Timestamp,
    pub bought: f64,
    pub sold: f64,
}

/// What the next reading adds: growth of each counter over the interval
/// since the chain's reading, and resets seen at the reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub from: Timestamp,
    pub to: Timestamp,
    pub bought: f64,
    pub sold: f64,
    pub resets: u32,
}

impl Chain {
    /// The first reading of a device's counters.
    pub fn start(at: Timestamp, bought: f64, sold: f64) -> Self {
        Self { at, bought, sold }
    }

    /// The chain after the next reading (later than `self.at`), and what it adds.
    pub fn next(self, at: Timestamp, bought: f64, sold: f64) -> (Chain, Link) {
        let mut resets = 0;
        let mut apply = |reference: f64, v: f64| match step(reference, v) {
            Step::Growth(g) => (v, g),
            Step::Dip => (reference, 0.0),
            Step::Reset => {
                resets += 1;
                (v, 0.0)
            }
        };
        let (bought_ref, bought_growth) = apply(self.bought, bought);
        let (sold_ref, sold_growth) = apply(self.sold, sold);
        (
            Chain {
                at,
                bought: bought_ref,
                sold: sold_ref,
            },
            Link {
                from: self.at,
                to: at,
                bought: bought_growth,
                sold: sold_growth,
                resets,
            },
        )
    }
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
        let mut chain = Chain::start(t(0), 5000.0, 10.0);
        let mut bought = 0.0;
        let mut resets = 0;
        for (m, v) in [(1, 4999.0), (2, 0.0), (3, 5000.25), (4, 5000.5)] {
            let (next, link) = chain.next(t(m), v, 10.0);
            bought += link.bought;
            resets += link.resets;
            chain = next;
        }
        assert_eq!((bought, resets), (0.5, 0));
        // A real new meter: a reset, then growth from its first value.
        let (chain, link) = chain.next(t(5), 2.0, 10.0);
        assert_eq!((link.bought, link.resets, chain.bought), (0.0, 1, 2.0));
        let (_, link) = chain.next(t(6), 3.0, 10.0);
        assert_eq!(link.bought, 1.0);
    }
}
