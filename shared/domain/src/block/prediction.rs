//! A meter's counter predicted from its watts (block codec version 5): a
//! meter that reports its kWh counter and its watts says the same thing
//! twice, and the counter's column may store only what the watts do not
//! say. `super` chooses the coding by size and lays it out; this is the
//! model both its encoder and its decoder run.

use crate::model::{Quantity, Reading};

/// A counter's steps less those its watts predict (`Integrator`; version
/// 5; `energy_predicted`): each step the energy of its reading's watts over
/// the time since the last, rounded (a meter that rounds each reading's
/// energy), or the whole units of that energy added up (a meter that
/// counts the sum of its own watts).
pub(super) const FROM_POWER: u8 = 2;
pub(super) const FROM_POWER_SUMMED: u8 = 3;

/// Milliwatt-milliseconds in a Wh (a thousandth of a kWh).
const MW_MS_PER_WH: i128 = 3_600_000_000;

/// What predicts a counter's step: the milliseconds since its last value
/// and the watts (in thousandths) of the reading, in the counter's
/// direction (bought: drawn, sold: fed in).
#[derive(Debug, Clone, Copy)]
pub(super) struct Driver {
    pub(super) millis: i64,
    pub(super) milliwatts: i64,
}

/// The counter whose steps the watts predict, and the sign that turns the
/// watts into its direction.
pub(super) fn driven_by_power(q: Quantity) -> Option<i64> {
    match q {
        Quantity::EnergyBought => Some(1),
        Quantity::EnergySold => Some(-1),
        _ => None,
    }
}

/// `q`'s drivers over `readings`, when it is a counter the watts predict
/// and every reading with it has watts, whose column (`watts`: in
/// thousandths, in time order) is exact; `values` is how many `q` has.
pub(super) fn drivers<'a>(
    q: Quantity,
    readings: impl ExactSizeIterator<Item = &'a Reading> + Clone,
    values: usize,
    watts: &[i64],
) -> Option<Vec<Driver>> {
    let sign = driven_by_power(q)?;
    if values == readings.len() && watts.len() == values {
        // Every reading has both (a meter's usual block): no reading's
        // quantities need looking at.
        let times = readings.map(|r| r.timestamp.millis());
        return Some(
            std::iter::once(0)
                .chain(times.clone().zip(times.skip(1)).map(|(a, b)| b - a))
                .zip(watts)
                .map(|(millis, w)| Driver {
                    millis,
                    milliwatts: (sign * w).max(0),
                })
                .collect(),
        );
    }
    let mut out = Vec::with_capacity(watts.len());
    let (mut last, mut at_watts) = (None::<i64>, 0usize);
    for r in readings {
        let (mut has_q, mut has_watts) = (false, false);
        for (x, _) in r.measurement.values() {
            has_q |= *x == q;
            has_watts |= *x == Quantity::Power;
        }
        at_watts += usize::from(has_watts);
        if !has_q {
            continue;
        }
        if !has_watts {
            return None;
        }
        let t = r.timestamp.millis();
        out.push(Driver {
            millis: last.map_or(0, |l| t - l),
            milliwatts: (sign * watts[at_watts - 1]).max(0),
        });
        last = Some(t);
    }
    Some(out)
}

/// What a meter's watts predict of its counter's steps. Summed, it keeps
/// the energy that its counter has not counted yet, as a meter that
/// integrates its own watts does, and predicts the whole units of that sum;
/// the sum stays within a unit (a meter whose watts are samples, not its
/// integral, would drift it), so a prediction is never further off than its
/// own error. Otherwise each step is its own energy, rounded.
pub(super) struct Integrator {
    /// A counter unit, in milliwatt-milliseconds.
    unit: i128,
    summed: bool,
    carry: i128,
}

/// `a / b` for `a >= 0` and `b > 0`: in 64 bits when both fit, as they
/// do for any meter (a 128-bit division is a call, and a tenth of ingest's
/// block encoding when every step took one).
fn quotient(a: i128, b: i128) -> i128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => i128::from(a / b),
        _ => a / b,
    }
}

impl Integrator {
    pub(super) fn new(kind: u8, scale: i64) -> Self {
        Self {
            unit: MW_MS_PER_WH.saturating_mul(i128::from(scale)),
            summed: kind == FROM_POWER_SUMMED,
            carry: 0,
        }
    }

    /// The step `driver` predicts.
    pub(super) fn predict(&mut self, driver: Driver) -> i64 {
        let energy = i128::from(driver.milliwatts).saturating_mul(i128::from(driver.millis));
        // Both factors are at least 0: the nearest unit is half a unit up, then down.
        let energy = if self.summed {
            self.carry = self.carry.saturating_add(energy);
            self.carry
        } else {
            energy.saturating_add(self.unit / 2)
        };
        i64::try_from(quotient(energy, self.unit)).unwrap_or(i64::MAX)
    }

    /// The counter stepped by `step`.
    pub(super) fn counted(&mut self, step: i64) {
        if self.summed {
            let counted = i128::from(step).saturating_mul(self.unit);
            self.carry = self.carry.saturating_sub(counted).clamp(0, self.unit - 1);
        }
    }

    /// What is left of `steps` (a column's first value, then its steps)
    /// after the prediction of `drivers`, theirs; `None` past `i64`.
    pub(super) fn residuals(
        kind: u8,
        scale: i64,
        steps: &[i64],
        drivers: &[Driver],
    ) -> Option<Vec<i64>> {
        let mut meter = Self::new(kind, scale);
        let mut out = Vec::with_capacity(steps.len());
        out.push(steps[0]);
        for (step, driver) in steps[1..].iter().zip(&drivers[1..]) {
            let predicted = meter.predict(*driver);
            meter.counted(*step);
            out.push(step.checked_sub(predicted)?);
        }
        Some(out)
    }
}
