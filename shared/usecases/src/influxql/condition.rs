//! `WHERE`: its time bounds taken out as a range, and the rest (tags compared
//! with strings and regexes, fields with numbers, `AND`/`OR`) evaluated per
//! reading, or as far as it can be for a device before reading it.

use super::ast::{Expr, Op, VarRef};
use super::schema::{self, Var};
use super::{unsupported, StatementError};
use domain::model::{Reading, Timestamp};

/// The time range a condition allows, in epoch milliseconds: `[from, to)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeBounds {
    pub from: Option<i64>,
    pub to: Option<i64>,
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Var(VarRef { name, .. }) if name.eq_ignore_ascii_case("time"))
}

fn mentions_time(e: &Expr) -> bool {
    match e {
        Expr::Binary(a, _, b) => mentions_time(a) || mentions_time(b),
        e => is_time(e),
    }
}

/// Takes the time comparisons out of `expr`'s top-level `AND`s into bounds.
pub fn split_time(
    expr: Expr,
    now: Timestamp,
    bounds: &mut TimeBounds,
) -> Result<Option<Expr>, StatementError> {
    match expr {
        Expr::Binary(a, Op::And, b) => {
            let a = split_time(*a, now, bounds)?;
            let b = split_time(*b, now, bounds)?;
            Ok(match (a, b) {
                (Some(a), Some(b)) => Some(Expr::Binary(Box::new(a), Op::And, Box::new(b))),
                (a, b) => a.or(b),
            })
        }
        Expr::Binary(a, op, b) if is_time(&a) || is_time(&b) => {
            let (value, op) = if is_time(&a) {
                (*b, op)
            } else {
                (*a, flip(op))
            };
            let ns = time_value(&value, now)?;
            // Nanoseconds to our milliseconds, without widening the range.
            let floor = ns.div_euclid(1_000_000);
            let ceil = floor + i64::from(ns.rem_euclid(1_000_000) != 0);
            let (from, to) = match op {
                Op::Gt => (Some(floor + 1), None),
                Op::Gte => (Some(ceil), None),
                Op::Lt => (None, Some(ceil)),
                Op::Lte => (None, Some(floor + 1)),
                Op::Eq => (Some(ceil), Some(floor + 1)),
                _ => return unsupported("invalid time comparison: use =, <, <=, > or >="),
            };
            if let Some(f) = from {
                bounds.from = Some(bounds.from.map_or(f, |b| b.max(f)));
            }
            if let Some(t) = to {
                bounds.to = Some(bounds.to.map_or(t, |b| b.min(t)));
            }
            Ok(None)
        }
        e if mentions_time(&e) => unsupported(
            "invalid time condition: time may only be compared in the WHERE's top-level ANDs",
        ),
        e => Ok(Some(e)),
    }
}

fn flip(op: Op) -> Op {
    match op {
        Op::Lt => Op::Gt,
        Op::Lte => Op::Gte,
        Op::Gt => Op::Lt,
        Op::Gte => Op::Lte,
        other => other,
    }
}

/// A time in a condition, nanoseconds since the epoch.
fn time_value(e: &Expr, now: Timestamp) -> Result<i64, StatementError> {
    Ok(match e {
        Expr::Now => now.millis().saturating_mul(1_000_000),
        Expr::Integer(i) => *i,
        Expr::Duration(d) => *d,
        Expr::Number(n) => *n as i64,
        Expr::Str(s) => parse_time(s).ok_or_else(|| {
            StatementError::Unsupported(format!(
                "invalid time {s:?}: use RFC 3339 ('2026-11-21T00:00:00Z'), epoch with a unit (1700000000000ms) or now() - 6h"
            ))
        })?,
        Expr::Binary(a, op @ (Op::Add | Op::Sub), b) => {
            let (a, b) = (time_value(a, now)?, time_value(b, now)?);
            if *op == Op::Add {
                a.saturating_add(b)
            } else {
                a.saturating_sub(b)
            }
        }
        _ => return unsupported("invalid time expression"),
    })
}

/// RFC 3339, or InfluxQL's `2026-11-21 00:00:00[.fff]` and `2026-11-21`, as nanoseconds.
fn parse_time(s: &str) -> Option<i64> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let t = DateTime::parse_from_rfc3339(s)
        .map(|t| t.naive_utc())
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"))
        .or_else(|_| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d").map(|d| d.and_time(Default::default()))
        })
        .ok()?;
    t.and_utc().timestamp_nanos_opt()
}

/// Refuses what the evaluator cannot decide: every comparison is a name
/// against a literal (a string, a number or, for `=~`, a regex).
pub fn check(expr: &Expr) -> Result<(), StatementError> {
    match expr {
        Expr::Binary(a, Op::And | Op::Or, b) => {
            check(a)?;
            check(b)
        }
        Expr::Binary(a, op, b) => {
            let lit = match (&**a, &**b) {
                (Expr::Var(_), lit) | (lit, Expr::Var(_)) => lit,
                _ => return unsupported("a condition compares a tag or field with a literal"),
            };
            let ok = match op {
                Op::Match | Op::NotMatch => matches!(lit, Expr::Regex(_)),
                Op::Eq | Op::NotEq | Op::Lt | Op::Lte | Op::Gt | Op::Gte => matches!(
                    lit,
                    Expr::Str(_) | Expr::Number(_) | Expr::Integer(_) | Expr::Bool(_)
                ),
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                unsupported("a condition compares a tag or field with a literal")
            }
        }
        Expr::Bool(_) => Ok(()),
        _ => unsupported("a condition compares a tag or field with a literal"),
    }
}

/// Whether every name the condition compares is the tag `tag`.
pub fn only_tag(expr: &Expr, measurement: &str, tag: &str) -> bool {
    match expr {
        Expr::Binary(a, _, b) => only_tag(a, measurement, tag) && only_tag(b, measurement, tag),
        Expr::Var(v) => matches!(schema::resolve(v, measurement), Var::Tag(t) if t == tag),
        _ => true,
    }
}

/// Whether the condition names a field (any quantity of the catalogue).
pub fn needs_fields(expr: &Expr) -> bool {
    match expr {
        Expr::Binary(a, _, b) => needs_fields(a) || needs_fields(b),
        Expr::Var(v) => {
            v.cast == Some(super::ast::Cast::Field)
                || (v.cast.is_none() && domain::model::Quantity::parse(&v.name).is_some())
        }
        _ => false,
    }
}

/// What is known when evaluating: a device before its readings are read, or a reading.
#[derive(Clone, Copy)]
pub enum Known<'a> {
    Device(&'a str),
    /// A device and a room (`SHOW TAG VALUES`), no fields.
    Tags(&'a str, &'a str),
    Reading(&'a Reading),
}

#[derive(Debug)]
enum Value<'a> {
    Str(&'a str),
    Num(f64),
    Missing,
    Unknown,
}

fn value<'a>(v: &VarRef, measurement: &str, known: Known<'a>) -> Value<'a> {
    match (schema::resolve(v, measurement), known) {
        (Var::Tag(t), Known::Reading(r)) => Value::Str(schema::tag_value(t, r)),
        (Var::Tag(schema::DEVICE_TAG), Known::Device(d) | Known::Tags(d, _)) => Value::Str(d),
        (Var::Tag(_), Known::Tags(_, room)) => Value::Str(room),
        (Var::Tag(_), Known::Device(_)) => Value::Unknown,
        (Var::NoTag, _) => Value::Str(""),
        (Var::Field(q), Known::Reading(r)) => r.get(q).map_or(Value::Missing, Value::Num),
        (Var::Field(_), _) => Value::Unknown,
        (Var::NoField | Var::Time, _) => Value::Missing,
    }
}

/// `Some(true)`/`Some(false)` when decided, `None` when it depends on what is not known yet.
pub fn eval(expr: &Expr, measurement: &str, known: Known<'_>) -> Option<bool> {
    match expr {
        Expr::Binary(a, Op::And, b) => {
            match (eval(a, measurement, known), eval(b, measurement, known)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }
        }
        Expr::Binary(a, Op::Or, b) => {
            match (eval(a, measurement, known), eval(b, measurement, known)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }
        }
        Expr::Binary(a, op, b) => {
            let (var, lit, op) = match (&**a, &**b) {
                (Expr::Var(v), lit) => (v, lit, *op),
                (lit, Expr::Var(v)) => (v, lit, flip(*op)),
                _ => return Some(false),
            };
            compare(value(var, measurement, known), op, lit)
        }
        Expr::Bool(b) => Some(*b),
        _ => Some(false),
    }
}

fn compare(v: Value<'_>, op: Op, lit: &Expr) -> Option<bool> {
    use std::cmp::Ordering;
    let ordering_ok = |o: Ordering| match op {
        Op::Eq => o == Ordering::Equal,
        Op::NotEq => o != Ordering::Equal,
        Op::Lt => o == Ordering::Less,
        Op::Lte => o != Ordering::Greater,
        Op::Gt => o == Ordering::Greater,
        Op::Gte => o != Ordering::Less,
        _ => false,
    };
    Some(match (v, lit) {
        (Value::Unknown, _) => return None,
        (Value::Str(s), Expr::Regex(r)) => r.is_match(s) == (op == Op::Match),
        (Value::Str(s), Expr::Str(l)) => ordering_ok(s.cmp(l.as_str())),
        (Value::Num(n), Expr::Number(l)) => n.partial_cmp(l).is_some_and(ordering_ok),
        (Value::Num(n), Expr::Integer(l)) => n.partial_cmp(&(*l as f64)).is_some_and(ordering_ok),
        // A missing field matches nothing, not even `!=`; mismatched types neither.
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::ast::Statement;
    use crate::influxql::parse_query;

    fn condition(text: &str) -> Expr {
        match parse_query(&format!("SELECT * FROM climate WHERE {text}"))
            .unwrap()
            .remove(0)
        {
            Statement::Select(s) => s.condition.unwrap(),
            _ => unreachable!(),
        }
    }

    fn split(text: &str) -> Result<(TimeBounds, Option<Expr>), String> {
        let now = Timestamp::parse("2026-11-21T12:00:00Z").unwrap();
        let mut b = TimeBounds::default();
        let rest = split_time(condition(text), now, &mut b).map_err(|e| e.to_string())?;
        Ok((b, rest))
    }

    #[test]
    fn time_bounds_in_every_notation_become_one_millisecond_range() {
        let noon = 1_795_262_400_000i64; // 2026-11-21T12:00:00Z
        let (b, rest) = split("time >= now() - 6h AND time <= now()").unwrap();
        assert_eq!(
            b,
            TimeBounds {
                from: Some(noon - 6 * 3_600_000),
                to: Some(noon + 1)
            }
        );
        assert!(rest.is_none());
        let (b, _) = split("time > '2026-11-21T12:00:00Z' and time < 1795262460000ms").unwrap();
        assert_eq!(
            b,
            TimeBounds {
                from: Some(noon + 1),
                to: Some(noon + 60_000)
            }
        );
        let (b, _) = split("'2026-11-21 12:00:00' <= time AND time < 1795262400500000001").unwrap();
        assert_eq!(
            b,
            TimeBounds {
                from: Some(noon),
                to: Some(noon + 501)
            }
        );
        let (b, rest) = split("room = 'a' AND time > 0 AND time > 5s").unwrap();
        assert_eq!(b.from, Some(5001));
        assert!(matches!(rest, Some(Expr::Binary(_, Op::Eq, _))));
    }

    #[test]
    fn time_inside_or_and_bad_times_are_refused() {
        assert!(split("room = 'a' OR time > now()")
            .unwrap_err()
            .contains("invalid time condition"));
        assert!(split("time > 'yesterday'")
            .unwrap_err()
            .contains("invalid time"));
        assert!(split("time != now()")
            .unwrap_err()
            .contains("invalid time comparison"));
    }

    #[test]
    fn conditions_decide_what_they_can_before_the_readings() {
        let c = condition("device_id = 'a' AND (room =~ /^kit/ OR temperature > 20)");
        assert!(check(&c).is_ok());
        assert_eq!(eval(&c, "climate", Known::Device("b")), Some(false));
        assert_eq!(eval(&c, "climate", Known::Device("a")), None);
        assert_eq!(eval(&c, "climate", Known::Tags("a", "kitchen")), Some(true));
        assert!(!only_tag(&c, "climate", schema::DEVICE_TAG));
        let r = Reading::from_json(
            &serde_json::json!({"device_id":"a","timestamp":"2026-11-21T00:00:00Z","room":"bed","temperature":21.0}),
            Timestamp::parse("2026-11-22T00:00:00Z").unwrap(),
            |_| None,
        )
        .unwrap();
        assert_eq!(eval(&c, "climate", Known::Reading(&r)), Some(true));
        let cold = condition("temperature < 20 OR humidity > 1");
        assert_eq!(
            eval(&cold, "climate", Known::Reading(&r)),
            Some(false),
            "a missing field matches nothing"
        );
        assert!(only_tag(
            &condition("device_id::tag != 'x'"),
            "climate",
            schema::DEVICE_TAG
        ));
        assert!(only_tag(
            &condition("room = 'a' OR room =~ /b/"),
            "climate",
            schema::ROOM_TAG
        ));
        assert!(check(&condition("room = device_id")).is_err());
        assert!(check(&condition("room =~ /a/ AND 1 = 1")).is_err());
    }
}
