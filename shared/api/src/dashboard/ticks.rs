//! Where a chart's axes are labelled: times at round hours, days, weeks or
//! months of the viewer's zone, and values at round steps (1, 2 or 5 times
//! a power of ten), as many as the chart's width has room for.

use chrono::{Datelike, NaiveDate, TimeZone, Timelike, Weekday};
use domain::model::Zone;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Pixels a label takes at the charts' 15 px font, a gap included: about
/// 7.5 a character ("00:00", "24 Nov", "Nov 2026") and 24 between.
fn label_px(chars: u32) -> u32 {
    chars * 15 / 2 + 24
}

/// What a time axis is labelled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeStep {
    /// Every n hours, at local hours divisible by n.
    Hours(u32),
    /// Every n days, at local midnight.
    Days(u32),
    /// Mondays at local midnight.
    Weeks,
    /// Every n months, on the 1st at local midnight (months divisible by n).
    Months(u32),
}

impl TimeStep {
    /// A label for a tick of this step.
    pub fn format(self, ms: i64, tz: Zone) -> String {
        let Some(t) = tz.timestamp_millis_opt(ms).single() else {
            return String::new();
        };
        match self {
            TimeStep::Hours(_) => t.format("%H:%M").to_string(),
            TimeStep::Days(_) | TimeStep::Weeks => t.format("%d %b").to_string(),
            TimeStep::Months(_) => t.format("%b %Y").to_string(),
        }
    }

    /// Pixels one label of this step takes.
    fn px(self) -> u32 {
        label_px(match self {
            TimeStep::Hours(_) => 5,
            TimeStep::Days(_) | TimeStep::Weeks => 6,
            TimeStep::Months(_) => 8,
        })
    }

    /// Most labels of this step that `width` pixels hold.
    fn most(self, width: u32) -> i64 {
        (width / self.px()).max(2) as i64
    }

    fn approx_ms(self) -> i64 {
        match self {
            TimeStep::Hours(n) => n as i64 * HOUR_MS,
            TimeStep::Days(n) => n as i64 * DAY_MS,
            TimeStep::Weeks => 7 * DAY_MS,
            TimeStep::Months(n) => n as i64 * 30 * DAY_MS,
        }
    }
}

/// The steps tried, finest first.
const STEPS: [TimeStep; 14] = [
    TimeStep::Hours(1),
    TimeStep::Hours(2),
    TimeStep::Hours(3),
    TimeStep::Hours(6),
    TimeStep::Hours(12),
    TimeStep::Days(1),
    TimeStep::Days(2),
    TimeStep::Weeks,
    TimeStep::Months(1),
    TimeStep::Months(2),
    TimeStep::Months(3),
    TimeStep::Months(6),
    TimeStep::Months(12),
    TimeStep::Months(24),
];

/// The finest step that gives at most as many labels as `width` pixels hold.
pub fn time_step(from: i64, to: i64, width: u32) -> TimeStep {
    let span = (to - from).max(1);
    STEPS
        .into_iter()
        // Hours say nothing of the day beyond two days: days from there.
        .filter(|s| !matches!(s, TimeStep::Hours(_)) || span <= 2 * DAY_MS)
        .find(|s| span / s.approx_ms() <= s.most(width))
        .unwrap_or(TimeStep::Months(24))
}

fn local_midnight(d: NaiveDate, tz: Zone) -> Option<i64> {
    let t = d.and_hms_opt(0, 0, 0)?;
    tz.from_local_datetime(&t)
        .earliest()
        .map(|t| t.timestamp_millis())
}

/// The ticks of `step` in `[from, to)`, in `tz`, but for one in the last
/// 3 % of the range, whose label would be cut at the chart's edge.
pub fn time_ticks(from: i64, to: i64, step: TimeStep, tz: Zone) -> Vec<i64> {
    let edge = to - (to - from) * 3 / 100;
    let mut out = every_tick(from, to, step, tz);
    out.retain(|t| *t < edge);
    out
}

fn every_tick(from: i64, to: i64, step: TimeStep, tz: Zone) -> Vec<i64> {
    let local = |ms: i64| tz.timestamp_millis_opt(ms).single();
    let mut out = Vec::new();
    match step {
        TimeStep::Hours(n) => {
            // Quarter hours: a local whole hour is one in every zone (India
            // is 5:30 ahead, Nepal 5:45).
            const QUARTER: i64 = 15 * 60_000;
            let mut t = from.div_euclid(QUARTER) * QUARTER;
            while t <= to {
                let round = local(t).is_some_and(|l| l.minute() == 0 && l.hour().is_multiple_of(n));
                if t >= from && round {
                    out.push(t);
                }
                t += QUARTER;
            }
        }
        TimeStep::Days(_) | TimeStep::Weeks | TimeStep::Months(_) => {
            let (Some(first), Some(last)) = (local(from), local(to)) else {
                return out;
            };
            let mut d = first.date_naive();
            let mut index = 0u32;
            while d <= last.date_naive() {
                let wanted = match step {
                    TimeStep::Days(n) => {
                        let hit = index.is_multiple_of(n);
                        index += 1;
                        hit
                    }
                    TimeStep::Weeks => d.weekday() == Weekday::Mon,
                    TimeStep::Months(n) => d.day() == 1 && d.month0().is_multiple_of(n),
                    TimeStep::Hours(_) => unreachable!(),
                };
                if wanted {
                    if let Some(t) = local_midnight(d, tz).filter(|t| *t >= from && *t <= to) {
                        out.push(t);
                    }
                }
                d = match d.succ_opt() {
                    Some(next) => next,
                    None => break,
                };
            }
        }
    }
    out
}

/// Round steps covering `[lo, hi]`: the axis bounds (the first step at or
/// below `lo`, the first at or above `hi`) and the ticks between, at most
/// `most` + 1 of them.
pub fn value_ticks(lo: f64, hi: f64, most: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo - 1.0, lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let raw = (hi - lo) / most.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| (hi - lo) / s <= most as f64)
        .unwrap_or(10.0 * power);
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let ticks: Vec<f64> = (0..=(last - first) as i64)
        .map(|i| {
            let v = (first + i as f64) * step;
            // 0.30000000000000004 is written 0.3.
            let digits = (-step.log10().floor()).max(0.0) as i32;
            let scale = 10f64.powi(digits);
            let v = (v * scale).round() / scale;
            if v == 0.0 {
                0.0
            } else {
                v
            }
        })
        .collect();
    (first * step, last * step, ticks)
}

/// Decimals a value label of these ticks needs (0 for whole steps).
pub fn decimals(ticks: &[f64]) -> usize {
    match ticks {
        [a, b, ..] => {
            let step = (b - a).abs();
            if step >= 1.0 {
                0
            } else {
                (-step.log10().floor()) as usize
            }
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    fn labels(from: &str, to: &str, width: u32, tz: Zone) -> Vec<String> {
        let (from, to) = (at(from), at(to));
        let step = time_step(from, to, width);
        time_ticks(from, to, step, tz)
            .into_iter()
            .map(|t| step.format(t, tz))
            .collect()
    }

    #[test]
    fn a_day_is_labelled_at_round_hours_of_the_zone() {
        // The odd times: 00:26, 06:00, 11:33, 17:06 for a day from 00:26.
        let day = labels(
            "2026-11-24T00:26:00Z",
            "2026-11-25T00:26:00Z",
            720,
            Zone::UTC,
        );
        // Not 00:00, 26 minutes before the end: its label would be cut.
        assert_eq!(
            day,
            ["03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00"]
        );
        let phone = labels(
            "2026-11-24T00:26:00Z",
            "2026-11-25T00:26:00Z",
            360,
            Zone::UTC,
        );
        assert_eq!(phone, ["06:00", "12:00", "18:00"]);
        // Berlin is an hour ahead: its 06:00 is 05:00 UTC.
        let berlin = labels(
            "2026-11-24T00:26:00Z",
            "2026-11-25T00:26:00Z",
            360,
            domain::model::Zone::named("Europe/Berlin").unwrap(),
        );
        assert_eq!(
            berlin,
            ["06:00", "12:00", "18:00", "00:00"],
            "00:00 Berlin is 23:00 UTC"
        );
        // India is 5:30 ahead: still whole local hours.
        let india = labels(
            "2026-11-24T00:26:00Z",
            "2026-11-25T00:26:00Z",
            720,
            domain::model::Zone::named("Asia/Kolkata").unwrap(),
        );
        assert!(india.iter().all(|l| l.ends_with(":00")), "{india:?}");
        assert!(!india.is_empty());
    }

    #[test]
    fn longer_ranges_are_labelled_at_days_weeks_and_months() {
        let week = labels(
            "2026-11-18T10:00:00Z",
            "2026-11-25T10:00:00Z",
            720,
            Zone::UTC,
        );
        assert_eq!(
            week,
            ["19 Nov", "20 Nov", "21 Nov", "22 Nov", "23 Nov", "24 Nov", "25 Nov"]
        );
        let month = labels(
            "2026-10-26T10:00:00Z",
            "2026-11-25T10:00:00Z",
            720,
            Zone::UTC,
        );
        assert_eq!(month, ["02 Nov", "09 Nov", "16 Nov", "23 Nov"], "Mondays");
        let year = labels(
            "2025-11-25T10:00:00Z",
            "2026-11-25T10:00:00Z",
            720,
            Zone::UTC,
        );
        assert_eq!(
            year,
            ["Jan 2026", "Mar 2026", "May 2026", "Jul 2026", "Sep 2026", "Nov 2026"]
        );
        let year_phone = labels(
            "2025-11-25T10:00:00Z",
            "2026-11-25T10:00:00Z",
            360,
            Zone::UTC,
        );
        assert_eq!(year_phone, ["Jan 2026", "Apr 2026", "Jul 2026", "Oct 2026"]);
    }

    #[test]
    fn value_ticks_are_round_steps_around_the_values() {
        assert_eq!(
            value_ticks(17.3, 23.9, 5),
            (16.0, 24.0, vec![16.0, 18.0, 20.0, 22.0, 24.0])
        );
        assert_eq!(
            value_ticks(0.0, 1.37, 5),
            (0.0, 1.5, vec![0.0, 0.5, 1.0, 1.5])
        );
        let (lo, hi, t) = value_ticks(-0.42, 1.9, 5);
        assert_eq!((lo, hi), (-0.5, 2.0));
        assert_eq!(t, vec![-0.5, 0.0, 0.5, 1.0, 1.5, 2.0]);
        assert_eq!(decimals(&t), 1);
        assert_eq!(value_ticks(3.0, 3.0, 5).2.first(), Some(&2.0));
    }

    proptest! {
        /// Any range in any of these zones, any width: every tick lies in the
        /// range at a local round time of its step, in order, and there are
        /// no more than the width holds (a month's days may add one).
        #[test]
        fn ticks_fall_on_round_local_times(
            from in 1_700_000_000_000i64..1_900_000_000_000,
            span in 3_600_000i64..3 * 365 * DAY_MS,
            width in 200u32..2000,
            zone in 0usize..4,
        ) {
            let tz = [Zone::UTC, domain::model::Zone::named("Europe/Berlin").unwrap(), domain::model::Zone::named("America/New_York").unwrap(), domain::model::Zone::named("Asia/Kolkata").unwrap()][zone];
            let to = from + span;
            let step = time_step(from, to, width);
            let ticks = time_ticks(from, to, step, tz);
            prop_assert!(ticks.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(ticks.len() as i64 <= step.most(width) + 2, "{} ticks of {:?}", ticks.len(), step);
            // The labels fit: as many as the width holds at each label's size.
            prop_assert!(ticks.len() as u32 <= width / step.px() + 2);
            for t in &ticks {
                prop_assert!(*t >= from && *t < to);
                let l = tz.timestamp_millis_opt(*t).single().unwrap();
                prop_assert_eq!((l.minute(), l.second()), (0, 0));
                match step {
                    TimeStep::Hours(n) => prop_assert_eq!(l.hour() % n, 0),
                    TimeStep::Days(_) => prop_assert_eq!(l.hour(), 0),
                    TimeStep::Weeks => prop_assert_eq!(l.weekday(), Weekday::Mon),
                    TimeStep::Months(n) => prop_assert!(l.day() == 1 && l.month0() % n == 0),
                }
            }
        }

        /// Value ticks: round steps (1, 2 or 5 times a power of ten) that
        /// cover the values, no more of them than asked for and two.
        #[test]
        fn value_ticks_cover_the_values(lo in -1e4f64..1e4, span in 1e-3f64..1e4, most in 3usize..8) {
            let hi = lo + span;
            let (a, b, ticks) = value_ticks(lo, hi, most);
            prop_assert!(a <= lo + 1e-9 && b >= hi - 1e-9);
            prop_assert!(ticks.len() <= most + 2, "{ticks:?}");
            let step = ticks[1] - ticks[0];
            let mantissa = step / 10f64.powf(step.log10().floor());
            prop_assert!([1.0, 2.0, 5.0, 10.0].iter().any(|m| (m - mantissa).abs() < 1e-6), "{step}");
        }
    }
}
