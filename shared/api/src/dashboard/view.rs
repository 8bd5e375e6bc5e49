//! What a dashboard page shows: the range and resolution its parameters
//! ask for (`View`), checked before anything is read.

use super::super::error::ApiError;
use super::super::params::DashboardParams;
use super::DAY_MS;
use chrono::TimeZone;
use domain::aggregate::{Bucketing, Width};
use domain::model::Zone;
use domain::model::{TimeRange, Timestamp};
use usecases::query::StatsQuery;

/// What a page or chart shows: its range, zone and how it is drawn.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// The picked range (`24h`, ...), or `None` for a custom one.
    pub pick: Option<&'static str>,
    pub range: TimeRange,
    pub tz: Zone,
}

impl View {
    /// Raw lines up to two days; hourly bands up to two months; daily beyond.
    pub(super) fn band_width(&self) -> Option<Width> {
        let ms = self.range.to().millis() - self.range.from().millis();
        if ms <= 2 * DAY_MS {
            None
        } else if ms <= 62 * DAY_MS {
            Some(Width::Hour)
        } else {
            Some(Width::Day)
        }
    }

    pub(super) fn energy_width(&self) -> Width {
        let ms = self.range.to().millis() - self.range.from().millis();
        if ms <= 2 * DAY_MS {
            Width::Hour
        } else if ms <= 62 * DAY_MS {
            Width::Day
        } else {
            Width::Month
        }
    }

    pub(super) fn query(&self, width: Width) -> StatsQuery {
        StatsQuery {
            range: self.range,
            bucketing: Bucketing::new(width, Some(self.tz)),
        }
    }

    /// The query string that gives this view again (for links and image URLs).
    pub fn query_string(&self) -> String {
        let tz = self.tz.name();
        match self.pick {
            None => format!("from={}&to={}&tz={tz}", self.range.from(), self.range.to()),
            Some(pick) => format!("range={pick}&tz={tz}"),
        }
    }
}

/// `range` (24h, 7d, 30d, 1y; default 24h) or `from` and `to`, and `tz`.
pub fn view(p: &DashboardParams, now: Timestamp) -> Result<View, ApiError> {
    let mut problems = Vec::new();
    let tz = match p.tz.as_deref() {
        None | Some("") => Zone::UTC,
        Some(v) => v.parse::<Zone>().unwrap_or_else(|_| {
            problems.push(("tz".into(), format!("{v:?} is not an IANA time zone name")));
            Zone::UTC
        }),
    };
    let (pick, range) = match (&p.range, &p.from) {
        (Some(_), Some(_)) => {
            problems.push((
                "range".into(),
                "give `range` or `from`/`to`, not both".into(),
            ));
            (None, None)
        }
        (_, Some(_)) => {
            // The custom range form's `datetime-local` values have no zone:
            // they are wall time in `tz`.
            let local = |v: &Option<String>| {
                v.as_ref().map(|v| {
                    chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M")
                        .ok()
                        .and_then(|t| tz.from_local_datetime(&t).earliest())
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_else(|| v.clone())
                })
            };
            match super::params::time_range(&local(&p.from), &local(&p.to), now) {
                Ok(range) => (None, Some(range)),
                Err(e) => {
                    problems.extend(e);
                    (None, None)
                }
            }
        }
        (pick, None) => {
            let wanted = pick.as_deref().unwrap_or("24h");
            let Some(&(pick, days)) = PICKS.iter().find(|(name, _)| *name == wanted) else {
                problems.push((
                    "range".into(),
                    format!("must be one of 24h, 7d, 30d, 1y, got {wanted:?}"),
                ));
                return Err(ApiError::InvalidParameters(problems));
            };
            if p.to.is_some() {
                problems.push(("to".into(), "`to` goes with `from`".into()));
            }
            let to = now;
            let from = to.saturating_add_millis(-days * DAY_MS);
            (Some(pick), TimeRange::new(from, to).ok())
        }
    };
    match range {
        Some(range) if problems.is_empty() => Ok(View { pick, range, tz }),
        _ => Err(ApiError::InvalidParameters(problems)),
    }
}

/// The ranges the picker offers, ending now, and their days.
pub const PICKS: [(&str, i64); 4] = [("24h", 1), ("7d", 7), ("30d", 30), ("1y", 365)];
