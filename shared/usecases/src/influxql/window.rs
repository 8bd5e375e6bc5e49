//! `GROUP BY time(every, offset)` windows as InfluxDB 1.x places them: a fixed
//! length from the epoch, moved by the offset and, with `tz()`, by the zone's
//! offset from UTC at that time (so `time(1d)` windows start at local
//! midnight). Windows of a whole number of days in a zone follow the
//! calendar, as the stats route's local days do (`aggregate::Bucketing`),
//! so a 23- or 25-hour day is one window.

use chrono::{Offset, TimeZone};
use domain::aggregate::{Bucketing, Width};
use domain::model::Zone;
use domain::model::{Timestamp, DAY_MS};

#[derive(Debug, Clone, Copy)]
pub struct Windows {
    /// Milliseconds.
    pub every: i64,
    pub offset: i64,
    pub tz: Option<Zone>,
}

impl Windows {
    /// The zone's offset from UTC at `t`, milliseconds.
    fn zone(&self, t: i64) -> i64 {
        let Some(tz) = self.tz else { return 0 };
        tz.offset_from_utc_datetime(
            &chrono::DateTime::from_timestamp_millis(t)
                .unwrap_or_default()
                .naive_utc(),
        )
        .fix()
        .local_minus_utc() as i64
            * 1000
    }

    /// Whether windows are calendar days in a zone.
    fn local_days(&self) -> Option<Bucketing> {
        match self.tz {
            Some(tz) if self.every == DAY_MS && self.offset == 0 => {
                Some(Bucketing::new(Width::Day, Some(tz)))
            }
            _ => None,
        }
    }

    /// The start of the window holding `t` (InfluxDB's `Window`).
    pub fn start_of(&self, t: i64) -> i64 {
        if let Some(days) = self.local_days() {
            return days
                .start_of(Timestamp::from_millis(t).unwrap_or(Timestamp::MIN))
                .millis();
        }
        let t = t - self.offset;
        let zone = self.zone(t);
        let mut start = t - (t + zone).rem_euclid(self.every);
        // At midnight (or the window's start) the zone may differ: use its offset there.
        if self.tz.is_some() {
            let o = zone - self.zone(start);
            if o != 0 && o.abs() < self.every {
                start += o;
            }
        }
        start + self.offset
    }

    /// The start of the window after the one starting at `start`.
    pub fn next(&self, start: i64) -> i64 {
        if let Some(days) = self.local_days() {
            let s = Timestamp::from_millis(start).unwrap_or(Timestamp::MIN);
            return days.end_of(s).millis();
        }
        // Past a change of the zone's offset a window is longer by the change.
        for longer in [0, 1_800_000, 3_600_000, 7_200_000] {
            let next = self.start_of(start + self.every + longer);
            if next > start {
                return next;
            }
        }
        start + self.every
    }

    /// The same windows as the stats route's buckets, when they are (so the
    /// stats use case, with its rollups, can answer): 1m, 5m, 15m and 1h
    /// windows that the zone does not move, and UTC or local days.
    pub fn as_bucketing(&self, from: i64, to: i64) -> Option<Bucketing> {
        if self.offset != 0 {
            return None;
        }
        if let Some(b) = self.local_days() {
            return Some(b);
        }
        let width = match self.every {
            60_000 => Width::Minute,
            300_000 => Width::FiveMinutes,
            900_000 => Width::FifteenMinutes,
            3_600_000 => Width::Hour,
            DAY_MS if self.tz.is_none() => Width::Day,
            _ => return None,
        };
        // A zone moves sub-day windows by its offset unless that is a whole number of them.
        let unmoved = [from, to.saturating_sub(1)]
            .iter()
            .all(|t| self.zone(*t).rem_euclid(self.every) == 0);
        unmoved.then(|| Bucketing::new(width, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;
    fn ms(s: &str) -> i64 {
        Timestamp::parse(s).unwrap().millis()
    }

    #[test]
    fn utc_windows_are_aligned_to_the_epoch_and_moved_by_the_offset() {
        let w = Windows {
            every: 5 * 60_000,
            offset: 0,
            tz: None,
        };
        assert_eq!(
            w.start_of(ms("2026-11-21T01:07:30Z")),
            ms("2026-11-21T01:05:00Z")
        );
        let w = Windows {
            every: H,
            offset: 15 * 60_000,
            tz: None,
        };
        assert_eq!(
            w.start_of(ms("2026-11-21T01:07:30Z")),
            ms("2026-11-21T00:15:00Z")
        );
        assert_eq!(
            w.next(ms("2026-11-21T00:15:00Z")),
            ms("2026-11-21T01:15:00Z")
        );
    }

    #[test]
    fn zoned_windows_start_at_local_midnight_across_daylight_saving() {
        let w = Windows {
            every: DAY_MS,
            offset: 0,
            tz: Some(domain::model::Zone::named("Europe/Berlin").unwrap()),
        };
        // 2026-03-29 is 23 hours long in Berlin.
        let start = w.start_of(ms("2026-03-29T12:00:00Z"));
        assert_eq!(start, ms("2026-03-28T23:00:00Z"));
        assert_eq!(w.next(start), ms("2026-03-29T22:00:00Z"));
        // Sub-day windows in a half-hour zone move with it, and are not the stats route's.
        let india = Windows {
            every: H,
            offset: 0,
            tz: Some(domain::model::Zone::named("Asia/Kolkata").unwrap()),
        };
        assert_eq!(
            india.start_of(ms("2026-11-21T01:10:00Z")),
            ms("2026-11-21T00:30:00Z")
        );
        assert!(india.as_bucketing(0, DAY_MS).is_none());
        let berlin_hours = Windows {
            every: H,
            offset: 0,
            tz: Some(domain::model::Zone::named("Europe/Berlin").unwrap()),
        };
        assert!(berlin_hours.as_bucketing(0, DAY_MS).is_some());
        assert_eq!(
            berlin_hours.start_of(ms("2026-11-21T01:10:00Z")),
            ms("2026-11-21T01:00:00Z")
        );
    }

    #[test]
    fn next_always_moves_forward() {
        for tz in [
            None,
            Some(domain::model::Zone::named("Europe/Berlin").unwrap()),
            Some(domain::model::Zone::named("Australia/Lord_Howe").unwrap()),
        ] {
            for every in [60_000, 1_800_000, H, 2 * H, DAY_MS, 7 * DAY_MS] {
                let w = Windows {
                    every,
                    offset: 0,
                    tz,
                };
                let mut s = w.start_of(ms("2026-03-01T00:00:00Z"));
                let end = ms("2026-11-01T00:00:00Z");
                let mut n = 0;
                while s < end && n < 400_000 {
                    let next = w.next(s);
                    assert!(next > s, "{tz:?} {every}");
                    // Every instant of a window maps back to it.
                    assert_eq!(w.start_of(s), s, "{tz:?} {every} at {s}");
                    s = next;
                    n += 1;
                }
            }
        }
    }
}
