//! UTC instants with millisecond precision. Their text form is fixed width
//! (`2026-11-22T01:02:03.000Z`), so string order is time order (DESIGN §3).

use chrono::{DateTime, Datelike, Timelike, Utc};
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

    /// Calls `f` with the fixed-width text form, made on the stack.
    pub fn with_text<R>(self, f: impl FnOnce(&str) -> R) -> R {
        let dt =
            DateTime::<Utc>::from_timestamp_millis(self.0).expect("range checked at construction");
        let mut buf = [0u8; Self::TEXT_LEN];
        put(&mut buf[0..4], dt.year() as u32);
        buf[4] = b'-';
        put(&mut buf[5..7], dt.month());
        buf[7] = b'-';
        put(&mut buf[8..10], dt.day());
        buf[10] = b'T';
        put(&mut buf[11..13], dt.hour());
        buf[13] = b':';
        put(&mut buf[14..16], dt.minute());
        buf[16] = b':';
        put(&mut buf[17..19], dt.second());
        buf[19] = b'.';
        put(&mut buf[20..23], (self.0.rem_euclid(1000)) as u32);
        buf[23] = b'Z';
        f(std::str::from_utf8(&buf).expect("ASCII digits"))
    }

    /// RFC 3339 as chrono writes it; used only to cross-check the fast formatter.
    #[cfg(test)]
    fn chrono_text(self) -> String {
        DateTime::<Utc>::from_timestamp_millis(self.0)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

/// Writes `v` as zero-padded decimal filling `dst`.
fn put(dst: &mut [u8], mut v: u32) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
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
