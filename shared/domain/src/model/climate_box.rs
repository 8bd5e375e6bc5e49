//! A box of the climate space, what box search looks for.

use super::{Quantity, Reading, TimeRange};

/// A box of the climate space: a time range and inclusive bounds on
/// temperature and humidity.
#[derive(Debug, Clone, Copy)]
pub struct ClimateBox {
    pub range: TimeRange,
    pub temperature: (f64, f64),
    pub humidity: (f64, f64),
}

impl ClimateBox {
    /// Whether a reading lies inside: its time, temperature and humidity.
    pub fn contains(&self, r: &Reading) -> bool {
        let within = |v: f64, (lo, hi): (f64, f64)| lo <= v && v <= hi;
        match (r.get(Quantity::Temperature), r.get(Quantity::Humidity)) {
            (Some(t), Some(h)) => {
                self.range.contains(r.timestamp)
                    && within(t, self.temperature)
                    && within(h, self.humidity)
            }
            _ => false,
        }
    }
}
