//! Query-string parameters of the range routes, parsed into a `ReadingsQuery`.
//! Every bad parameter is reported, by name.

use crate::keys::MAX_CURSOR_LEN;
use crate::model::{TimeRange, Timestamp};
use crate::query::ReadingsQuery;
use crate::store::Order;
use aws_lambda_events::query_map::QueryMap;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;
/// Default span when `from` is not given.
pub const DEFAULT_SPAN_MS: i64 = 24 * 3600 * 1000;
/// Longest value accepted for any parameter but `cursor`.
pub const MAX_PARAM_LEN: usize = 64;

const RANGE_PARAMS: [&str; 5] = ["from", "to", "limit", "order", "cursor"];

type Problems = Vec<(String, String)>;

/// Rejects parameters a route does not know (a typo such as `form=` would otherwise be ignored).
pub fn reject_unknown(params: &QueryMap, known: &[&str]) -> Result<(), Problems> {
    let mut problems: Problems = Vec::new();
    for (name, _) in params.iter() {
        if !known.contains(&name) && !problems.iter().any(|(p, _)| p == name) {
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            problems.push((
                name.to_owned(),
                format!("unknown parameter (known: {known})"),
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn single<'a>(params: &'a QueryMap, name: &str, problems: &mut Problems) -> Option<&'a str> {
    let values = params.all(name)?;
    if values.len() > 1 {
        problems.push((name.into(), "given more than once".into()));
        return None;
    }
    let v = values[0];
    let max = if name == "cursor" {
        MAX_CURSOR_LEN
    } else {
        MAX_PARAM_LEN
    };
    if v.len() > max {
        problems.push((name.into(), format!("is longer than {max} characters")));
        return None;
    }
    Some(v)
}

/// A time parameter. A `+` in an offset often arrives as a space (form
/// encoding), so a space there is read as `+`.
fn time(name: &str, v: &str, problems: &mut Problems) -> Option<Timestamp> {
    Timestamp::parse(v)
        .or_else(|e| {
            if v.contains(' ') {
                Timestamp::parse(&v.replace(' ', "+"))
            } else {
                Err(e)
            }
        })
        .map_err(|e| problems.push((name.into(), e.to_string())))
        .ok()
}

/// `from` (inclusive), `to` (exclusive), `limit`, `order`, `cursor`. Defaults:
/// `to` = now, `from` = `to` - 24 h, `limit` = 100, `order` = asc.
pub fn readings_query(params: &QueryMap, now: Timestamp) -> Result<ReadingsQuery, Problems> {
    reject_unknown(params, &RANGE_PARAMS)?;
    let mut problems = Problems::new();
    let from = single(params, "from", &mut problems).map(|v| time("from", v, &mut problems));
    let to = single(params, "to", &mut problems).map(|v| time("to", v, &mut problems));
    let limit = match single(params, "limit", &mut problems) {
        None => Some(DEFAULT_LIMIT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Some(n),
            _ => {
                problems.push((
                    "limit".into(),
                    format!("must be an integer from 1 to {MAX_LIMIT}, got {v:?}"),
                ));
                None
            }
        },
    };
    let order = match single(params, "order", &mut problems) {
        None | Some("asc") => Some(Order::Asc),
        Some("desc") => Some(Order::Desc),
        Some(v) => {
            problems.push((
                "order".into(),
                format!("must be \"asc\" or \"desc\", got {v:?}"),
            ));
            None
        }
    };
    let cursor = single(params, "cursor", &mut problems).map(str::to_owned);

    let range = match (from, to) {
        (Some(None), _) | (_, Some(None)) => None, // already reported
        (from, to) => {
            // Default end: just after now, so a reading stamped "now" is included.
            let to = to.flatten().unwrap_or_else(|| now.saturating_add_millis(1));
            let from = from
                .flatten()
                .unwrap_or_else(|| to.saturating_add_millis(-DEFAULT_SPAN_MS));
            TimeRange::new(from, to)
                .map_err(|m| problems.push(("from".into(), m)))
                .ok()
        }
    };
    match (range, limit, order) {
        (Some(range), Some(limit), Some(order)) if problems.is_empty() => Ok(ReadingsQuery {
            range,
            order,
            limit,
            cursor,
        }),
        _ => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn q(pairs: &[(&str, &str)]) -> QueryMap {
        let mut m: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in pairs {
            m.entry(k.to_string()).or_default().push(v.to_string());
        }
        QueryMap::from(m)
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap()
    }

    fn names(p: Problems) -> Vec<String> {
        p.into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn defaults_cover_the_last_24_hours() {
        let r = readings_query(&q(&[]), now()).unwrap();
        assert_eq!(r.range.from().to_string(), "2026-11-21T00:00:00.001Z");
        assert_eq!(r.range.last().to_string(), "2026-11-22T00:00:00.000Z");
        assert_eq!((r.limit, r.order, r.cursor), (100, Order::Asc, None));
    }

    #[test]
    fn offsets_whose_plus_became_a_space_still_parse() {
        let r = readings_query(
            &q(&[
                ("from", "2026-11-21T09:00:00 09:00"),
                ("to", "2026-11-21T01:00:00Z"),
            ]),
            now(),
        )
        .unwrap();
        assert_eq!(r.range.from().to_string(), "2026-11-21T00:00:00.000Z");
    }

    #[test]
    fn every_bad_parameter_is_named() {
        let p = readings_query(
            &q(&[
                ("from", "nope"),
                ("limit", "0"),
                ("order", "up"),
                ("to", "2026-11-21T00:00:00Z"),
            ]),
            now(),
        )
        .unwrap_err();
        assert_eq!(names(p), vec!["from", "limit", "order"]);
        assert_eq!(
            names(readings_query(&q(&[("limit", "1001")]), now()).unwrap_err()),
            vec!["limit"]
        );
        assert_eq!(
            names(readings_query(&q(&[("limit", "-1")]), now()).unwrap_err()),
            vec!["limit"]
        );
        assert_eq!(
            names(readings_query(&q(&[("form", "x")]), now()).unwrap_err()),
            vec!["form"]
        );
        assert_eq!(
            names(readings_query(&q(&[("order", "asc"), ("order", "desc")]), now()).unwrap_err()),
            vec!["order"]
        );
        assert_eq!(
            names(readings_query(&q(&[("limit", &"9".repeat(65))]), now()).unwrap_err()),
            vec!["limit"]
        );
    }

    #[test]
    fn from_must_be_before_to() {
        let p = readings_query(
            &q(&[
                ("from", "2026-11-21T00:00:00Z"),
                ("to", "2026-11-21T00:00:00Z"),
            ]),
            now(),
        )
        .unwrap_err();
        assert_eq!(names(p), vec!["from"]);
    }
}
