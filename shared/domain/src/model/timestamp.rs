//! UTC instants with millisecond precision. Their text form is fixed width
//! (`2026-11-22T01:02:03.000Z`), so string order is time order (DESIGN §3).

use super::DAY_MS;
use chrono::{DateTime, Utc};
use std::fmt;

/// Why a timestamp was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    #[error("not an RFC 3339 timestamp with a UTC offset (e.g. 2026-11-22T01:02:03Z or 2026-11-22T10:02:03+09:00): {0}")]
    Syntax(String),
    #[error("outside the supported range 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z")]
    OutOfRange,
}

/// Milliseconds since the Unix epoch, within 1970..=9999 so the text form keeps its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const MIN: Timestamp = Timestamp(0);
    /// 9999-12-31T23:59:59.999Z
    pub const MAX: Timestamp = Timestamp(253_402_300_799_999);
    /// Length of the text form.
    pub const TEXT_LEN: usize = 24;

    #[inline]
    pub fn from_millis(ms: i64) -> Result<Self, TimestampError> {
        if (Self::MIN.0..=Self::MAX.0).contains(&ms) {
            Ok(Self(ms))
        } else {
            Err(TimestampError::OutOfRange)
        }
    }

    /// Parses RFC 3339 with any offset and normalises it to UTC. Digits below a
    /// millisecond are truncated (the stored precision is milliseconds).
    pub fn parse(s: &str) -> Result<Self, TimestampError> {
        let dt =
            DateTime::parse_from_rfc3339(s).map_err(|e| TimestampError::Syntax(e.to_string()))?;
        Self::from_millis(dt.timestamp_millis())
    }

    pub fn now() -> Self {
        Self(
            Utc::now()
                .timestamp_millis()
                .clamp(Self::MIN.0, Self::MAX.0),
        )
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// Saturates at the ends of the supported range.
    pub fn saturating_add_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms).clamp(Self::MIN.0, Self::MAX.0))
    }

    /// Appends the fixed-width text form to `out` without allocating.
    pub fn write_to(self, out: &mut String) {
        self.with_text(|text| out.push_str(text))
    }

    /// Calls `f` with the fixed-width text form, made on the stack. The date
    /// comes from the day number by integer arithmetic (`civil_from_days`):
    /// through chrono's calendar it took a third of the time a year of
    /// daily stats spends writing its answer (docs/BENCHMARKS.md).
    pub fn with_text<R>(self, f: impl FnOnce(&str) -> R) -> R {
        // In range (1970..=9999), so neither is negative.
        let (days, ms_of_day) = (self.0 / DAY_MS, (self.0 % DAY_MS) as u32);
        let (year, month, day) = civil_from_days(days as u32);
        let seconds = ms_of_day / 1000;
        let mut buf = *b"0000-00-00T00:00:00.000Z";
        pair(&mut buf[0..2], year / 100);
        pair(&mut buf[2..4], year % 100);
        pair(&mut buf[5..7], month);
        pair(&mut buf[8..10], day);
        pair(&mut buf[11..13], seconds / 3600);
        pair(&mut buf[14..16], seconds / 60 % 60);
        pair(&mut buf[17..19], seconds % 60);
        let ms = ms_of_day % 1000;
        buf[20] = b'0' + (ms / 100) as u8;
        pair(&mut buf[21..23], ms % 100);
        debug_assert!(buf.is_ascii());
        // SAFETY: ASCII digits and separators only (above); checking it
        // was a third of this function's instructions.
        f(unsafe { std::str::from_utf8_unchecked(&buf) })
    }

    /// RFC 3339 as chrono writes it; used only to cross-check the fast formatter.
    #[cfg(test)]
    fn chrono_text(self) -> String {
        DateTime::<Utc>::from_timestamp_millis(self.0)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

/// The proleptic Gregorian (year, month, day) of a day counted from
/// 1970-01-01 (Howard Hinnant's `civil_from_days`, for days from the epoch
/// on): the year runs from March, so that the leap day ends it. (jiff,
/// which the time zones use, does this too, but its `Timestamp` ends on
/// 9999-12-30, short of our range's last day.)
fn civil_from_days(days: u32) -> (u32, u32, u32) {
    // Days since 0000-03-01, in 400-year eras of 146,097 days.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March, of 153 days in every five.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u32::from(month <= 2);
    (year, month, day)
}

/// "00" to "99", each number's two digits at twice its index.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes `v` (below 100) as two digits into `dst`.
fn pair(dst: &mut [u8], v: u32) {
    let i = v as usize * 2;
    dst.copy_from_slice(&PAIRS[i..i + 2]);
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_normalised_to_fixed_width_utc_millis() {
        let t = Timestamp::parse("2026-11-22T10:02:03+09:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-22T01:02:03.000Z");
        let t = Timestamp::parse("2026-11-22T01:02:03.123456789Z").unwrap();
        assert_eq!(
            t.to_string(),
            "2026-11-22T01:02:03.123Z",
            "sub-millisecond digits are truncated"
        );
        assert_eq!(Timestamp::MIN.to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::MAX.to_string(), "9999-12-31T23:59:59.999Z");
    }

    proptest::proptest! {
        /// Every instant of the range, as chrono writes it.
        #[test]
        fn the_text_form_is_chrono_s_everywhere(ms in Timestamp::MIN.0..=Timestamp::MAX.0) {
            let t = Timestamp::from_millis(ms).unwrap();
            proptest::prop_assert_eq!(t.to_string(), t.chrono_text());
        }
    }

    #[test]
    fn every_day_s_date_is_chrono_s() {
        // Each day of 1970..=9999 (leap years, centuries, the 400-year rule).
        let last = Timestamp::MAX.0 / DAY_MS;
        for day in 0..=last {
            let t = Timestamp::from_millis(day * DAY_MS + 43_200_123).unwrap();
            assert_eq!(t.to_string(), t.chrono_text(), "day {day}");
        }
    }

    #[test]
    fn fast_formatter_agrees_with_chrono() {
        for ms in [
            0,
            1,
            999,
            1_000,
            86_399_999,
            951_782_400_000,
            1_795_000_000_123,
            Timestamp::MAX.0,
        ] {
            let t = Timestamp::from_millis(ms).unwrap();
            assert_eq!(t.to_string(), t.chrono_text(), "ms={ms}");
        }
    }

    #[test]
    fn bad_text_and_out_of_range_are_rejected() {
        assert!(matches!(
            Timestamp::parse("2026-11-22T01:02:03"),
            Err(TimestampError::Syntax(_))
        ));
        assert!(matches!(
            Timestamp::parse("yesterday"),
            Err(TimestampError::Syntax(_))
        ));
        assert!(matches!(
            Timestamp::parse("2026-02-30T00:00:00Z"),
            Err(TimestampError::Syntax(_))
        ));
        assert_eq!(
            Timestamp::parse("1969-12-31T23:59:59Z"),
            Err(TimestampError::OutOfRange)
        );
        assert_eq!(Timestamp::from_millis(-1), Err(TimestampError::OutOfRange));
        assert_eq!(
            Timestamp::from_millis(Timestamp::MAX.0 + 1),
            Err(TimestampError::OutOfRange)
        );
    }

    #[test]
    fn text_order_is_time_order() {
        let a = Timestamp::parse("2026-01-01T00:00:00.999Z").unwrap();
        let b = Timestamp::parse("2026-01-01T09:00:01+09:00").unwrap();
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
    }
}

/// A half-open time range `[from, to)`, never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    from: Timestamp,
    to: Timestamp,
}

impl TimeRange {
    pub fn new(from: Timestamp, to: Timestamp) -> Result<Self, String> {
        if from < to {
            Ok(Self { from, to })
        } else {
            Err(format!("`from` ({from}) must be before `to` ({to})"))
        }
    }

    pub fn from(&self) -> Timestamp {
        self.from
    }

    /// Exclusive end.
    pub fn to(&self) -> Timestamp {
        self.to
    }

    /// The last millisecond inside the range.
    pub fn last(&self) -> Timestamp {
        Timestamp(self.to.0 - 1)
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && t < self.to
    }
}
