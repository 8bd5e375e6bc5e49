//! A time zone of the IANA database, by name: days and months of stats, the
//! dashboard's axes and InfluxQL's `tz()` are local to one.
//!
//! The database is jiff's, embedded as the compact binary files the system's
//! `zoneinfo` holds (about 200 KB). `chrono-tz`, before it, compiled every
//! transition into static tables of pointers: about 1.2 MB of each binary
//! that reads (issue 43, docs/BENCHMARKS.md "Function footprint"). The rest
//! of the crate keeps chrono's API: [`Zone`] is a [`chrono::TimeZone`].

use chrono::{FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone};
use std::fmt;
use std::sync::Mutex;

/// A named time zone. `Copy`, as a zone is passed around by value: each
/// zone is loaded once per process and kept (at most the database's few
/// hundred names).
#[derive(Clone, Copy)]
pub struct Zone(&'static Loaded);

struct Loaded {
    name: &'static str,
    rules: jiff::tz::TimeZone,
}

static UTC: Loaded = Loaded {
    name: "UTC",
    rules: jiff::tz::TimeZone::UTC,
};

/// The zones named so far.
static LOADED: Mutex<Vec<&'static Loaded>> = Mutex::new(Vec::new());

impl Zone {
    pub const UTC: Zone = Zone(&UTC);

    /// The zone of an IANA name (`Europe/Berlin`), in any case; `None` for
    /// a name the database does not have.
    pub fn named(name: &str) -> Option<Zone> {
        if name.eq_ignore_ascii_case("UTC") {
            return Some(Zone::UTC);
        }
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(zone) = loaded.iter().find(|z| z.name.eq_ignore_ascii_case(name)) {
            return Some(Zone(zone));
        }
        let rules = jiff::tz::TimeZone::get(name).ok()?;
        // The database's own spelling, as `name()` gives it back.
        let canonical = rules.iana_name().unwrap_or(name).to_owned();
        let zone: &'static Loaded = Box::leak(Box::new(Loaded {
            name: Box::leak(canonical.into_boxed_str()),
            rules,
        }));
        loaded.push(zone);
        Some(Zone(zone))
    }

    /// The IANA name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The offset from UTC in force at `seconds` since the epoch.
    fn offset_at(self, seconds: i64) -> FixedOffset {
        let offset = jiff::Timestamp::from_second(seconds)
            .map(|t| self.0.rules.to_offset(t).seconds())
            .unwrap_or(0);
        FixedOffset::east_opt(offset).unwrap_or(FixedOffset::east_opt(0).expect("zero"))
    }

    /// The offsets a wall-clock time has: one, two in the hour a clock
    /// goes back (earlier first), none in the hour it skips.
    fn offsets_of_local(self, local: &NaiveDateTime) -> MappedLocalTime<FixedOffset> {
        use chrono::{Datelike, Timelike};
        use jiff::tz::AmbiguousOffset;
        let fixed = |o: jiff::tz::Offset| FixedOffset::east_opt(o.seconds());
        let Ok(civil) = jiff::civil::DateTime::new(
            local.year().try_into().unwrap_or(i16::MAX),
            local.month() as i8,
            local.day() as i8,
            local.hour() as i8,
            local.minute() as i8,
            local.second() as i8,
            0,
        ) else {
            return MappedLocalTime::None;
        };
        match self.0.rules.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => {
                fixed(offset).map_or(MappedLocalTime::None, MappedLocalTime::Single)
            }
            AmbiguousOffset::Fold { before, after } => match (fixed(before), fixed(after)) {
                (Some(a), Some(b)) => MappedLocalTime::Ambiguous(a, b),
                _ => MappedLocalTime::None,
            },
            AmbiguousOffset::Gap { .. } => MappedLocalTime::None,
        }
    }
}

impl std::str::FromStr for Zone {
    type Err = UnknownZone;

    fn from_str(name: &str) -> Result<Zone, UnknownZone> {
        Zone::named(name).ok_or(UnknownZone)
    }
}

/// A name that is not in the time zone database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownZone;

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.0.name == other.0.name
    }
}
impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// The offset a [`Zone`] has at one moment, as chrono's `DateTime<Zone>` keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneOffset {
    zone: Zone,
    fixed: FixedOffset,
}

impl Offset for ZoneOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for ZoneOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.fixed, f)
    }
}

impl TimeZone for Zone {
    type Offset = ZoneOffset;

    fn from_offset(offset: &ZoneOffset) -> Zone {
        offset.zone
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<ZoneOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> MappedLocalTime<ZoneOffset> {
        let zone = *self;
        self.offsets_of_local(local)
            .map(|fixed| ZoneOffset { zone, fixed })
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ZoneOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ZoneOffset {
        ZoneOffset {
            zone: *self,
            fixed: self.offset_at(utc.and_utc().timestamp()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(zone: Zone, rfc3339: &str) -> i32 {
        let utc = chrono::DateTime::parse_from_rfc3339(rfc3339).unwrap();
        zone.offset_from_utc_datetime(&utc.naive_utc())
            .fix()
            .local_minus_utc()
    }

    #[test]
    fn names_are_found_in_any_case_and_given_back_as_the_database_spells_them() {
        let berlin = Zone::named("europe/BERLIN").unwrap();
        assert_eq!(berlin.name(), "Europe/Berlin");
        assert_eq!(berlin, "Europe/Berlin".parse().unwrap());
        assert_eq!(Zone::named("utc"), Some(Zone::UTC));
        assert_eq!(Zone::named("Mars/Olympus_Mons"), None);
        assert_eq!(Zone::named(""), None);
    }

    #[test]
    fn offsets_follow_summer_time_and_odd_zones() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        assert_eq!(at(berlin, "2026-01-15T12:00:00Z"), 3600);
        assert_eq!(at(berlin, "2026-07-15T12:00:00Z"), 7200);
        // Clocks go forward at 01:00 UTC on the last Sunday of March.
        assert_eq!(at(berlin, "2026-03-29T00:59:59Z"), 3600);
        assert_eq!(at(berlin, "2026-03-29T01:00:00Z"), 7200);
        assert_eq!(
            at(Zone::named("Asia/Kolkata").unwrap(), "2026-07-15T12:00:00Z"),
            19800
        );
        // Lord Howe Island moves by half an hour.
        let howe = Zone::named("Australia/Lord_Howe").unwrap();
        assert_eq!(at(howe, "2026-01-15T12:00:00Z"), 11 * 3600);
        assert_eq!(at(howe, "2026-07-15T12:00:00Z"), 10 * 3600 + 1800);
        assert_eq!(at(Zone::UTC, "2026-07-15T12:00:00Z"), 0);
    }

    #[test]
    fn wall_clock_times_are_single_doubled_or_skipped() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        let local = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M").unwrap();
        let offsets = |s: &str| {
            berlin
                .offset_from_local_datetime(&local(s))
                .map(|o| o.fix().local_minus_utc())
        };
        assert_eq!(offsets("2026-06-01T00:00"), MappedLocalTime::Single(7200));
        assert_eq!(offsets("2026-03-29T02:30"), MappedLocalTime::None);
        assert_eq!(
            offsets("2026-10-25T02:30"),
            MappedLocalTime::Ambiguous(7200, 3600)
        );
        let midnight = berlin
            .from_local_datetime(&local("2026-06-01T00:00"))
            .single()
            .unwrap();
        assert_eq!(midnight.to_rfc3339(), "2026-06-01T00:00:00+02:00");
        assert_eq!(midnight.timezone(), berlin);
    }
}
