//! The two UTC-aligned spans rollups (and, later, blocks) are kept for: an
//! hour and a day. A domain type, so that keys and stores name a span
//! without reaching into the rollup algebra.

use super::Timestamp;

pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 24 * HOUR_MS;

/// The two spans rollups are kept for, both UTC-aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Span {
    Hour,
    Day,
}

impl Span {
    pub fn millis(self) -> i64 {
        match self {
            Span::Hour => HOUR_MS,
            Span::Day => DAY_MS,
        }
    }

    pub fn start_of(self, t: Timestamp) -> Timestamp {
        let ms = t.millis();
        Timestamp::from_millis(ms - ms.rem_euclid(self.millis())).unwrap_or(Timestamp::MIN)
    }

    pub fn end_of(self, start: Timestamp) -> Timestamp {
        start.saturating_add_millis(self.millis())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Span::Hour => "hour",
            Span::Day => "day",
        }
    }
}
