//! An alert rule, parsed from the JSON a user puts (`PUT
//! /alerts/rules/{name}`, docs/alerts.md): a threshold on a quantity, a
//! device gone quiet, or energy over a window, for one device, every device
//! of a room, or every device of a type. Parsing is validation: a `Rule`
//! always holds a rule that can be evaluated.

use crate::aggregate::counter::Counter;
use crate::model::{parse_interval, DeviceId, Quantity, QuantityKind, ReadingKind, RoomId};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Which devices a rule looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Device(DeviceId),
    /// Every device that reports from the room.
    Room(RoomId),
    /// Every device that reports readings of the type.
    Type(ReadingKind),
}

/// Which side of the threshold fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Above,
    Below,
}

/// What makes a rule fire.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// A quantity's latest value beyond `threshold`; once firing, it holds
    /// until the value is back past `clear` (the threshold when not given).
    Threshold {
        quantity: Quantity,
        side: Side,
        threshold: f64,
        clear: f64,
    },
    /// Nothing received for `quiet`.
    NoData { quiet: Duration },
    /// More than `above` counted over the last `window` by `counter`: kWh
    /// bought (the default) or sold, m³ of gas or water (issue 79).
    Energy {
        window: Duration,
        counter: Counter,
        above: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub scope: Scope,
    pub condition: Condition,
    /// How long the condition must hold before the rule fires.
    pub hold: Duration,
    /// How long a firing rule stays firing after the condition stops.
    pub keep_firing_for: Duration,
    pub labels: BTreeMap<String, String>,
    /// With `{device}`, `{room}`, `{value}`, `{threshold}`, `{rule}`.
    pub summary: String,
}

/// What is wrong with a rule, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RuleError {
    pub field: String,
    pub message: String,
}

fn problem(field: &str, message: impl Into<String>) -> RuleError {
    RuleError {
        field: field.into(),
        message: message.into(),
    }
}

/// The JSON as sent, before it is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    kind: String,
    scope: RawScope,
    quantity: Option<String>,
    above: Option<f64>,
    below: Option<f64>,
    clear: Option<f64>,
    #[serde(rename = "for")]
    hold: Option<String>,
    keep_firing_for: Option<String>,
    window: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    device: Option<String>,
    room: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// A rule's name, checked: what names it in a path and in notifications.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleName(String);

impl RuleName {
    pub fn parse(name: &str) -> Result<Self, RuleError> {
        check_name(name).map(|()| Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A rule name: it names the rule in a path and in every notification.
pub fn check_name(name: &str) -> Result<(), RuleError> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(problem(
            "name",
            "1 to 64 of ASCII letters, digits, '-', '_' and '.'",
        ))
    }
}

impl Rule {
    pub fn parse(name: &str, json: &serde_json::Value) -> Result<Rule, RuleError> {
        check_name(name)?;
        let raw: RawRule =
            serde_json::from_value(json.clone()).map_err(|e| problem("rule", e.to_string()))?;
        let scope = match (&raw.scope.device, &raw.scope.room, &raw.scope.kind) {
            (Some(d), None, None) => Scope::Device(
                DeviceId::parse(d).map_err(|e| problem("scope.device", e.to_string()))?,
            ),
            (None, Some(r), None) => {
                Scope::Room(RoomId::parse(r).map_err(|e| problem("scope.room", e.to_string()))?)
            }
            (None, None, Some(t)) => Scope::Type(
                ReadingKind::parse(t)
                    .ok_or_else(|| problem("scope.type", "power, climate, meter or device"))?,
            ),
            _ => return Err(problem("scope", "exactly one of device, room or type")),
        };
        let duration = |field: &str, text: &Option<String>| match text {
            None => Ok(Duration::ZERO),
            Some(t) => parse_interval(t, true).map_err(|e| problem(field, e)),
        };
        let finite = |field: &str, v: f64| {
            if v.is_finite() {
                Ok(v)
            } else {
                Err(problem(field, "a finite number"))
            }
        };
        let hold = duration("for", &raw.hold)?;
        let keep_firing_for = duration("keep_firing_for", &raw.keep_firing_for)?;
        let condition = match raw.kind.as_str() {
            "threshold" => {
                let name = raw
                    .quantity
                    .as_deref()
                    .ok_or_else(|| problem("quantity", "a threshold needs a quantity"))?;
                let quantity = Quantity::parse(name).ok_or_else(|| {
                    problem("quantity", format!("{name:?} is not in the catalogue"))
                })?;
                let (side, threshold) = match (raw.above, raw.below) {
                    (Some(v), None) => (Side::Above, finite("above", v)?),
                    (None, Some(v)) => (Side::Below, finite("below", v)?),
                    _ => return Err(problem("above", "exactly one of above or below")),
                };
                let clear = finite("clear", raw.clear.unwrap_or(threshold))?;
                let wrong_side = match side {
                    Side::Above => clear > threshold,
                    Side::Below => clear < threshold,
                };
                if wrong_side {
                    return Err(problem(
                        "clear",
                        "must be on the quiet side of the threshold (below an above, above a below)",
                    ));
                }
                if raw.window.is_some() {
                    return Err(problem("window", "only an energy rule has a window"));
                }
                Condition::Threshold {
                    quantity,
                    side,
                    threshold,
                    clear,
                }
            }
            "no_data" => {
                if raw.quantity.is_some() || raw.above.is_some() || raw.below.is_some() {
                    return Err(problem("kind", "a no_data rule has only a scope and for"));
                }
                if hold.is_zero() {
                    return Err(problem("for", "how long without a reading, such as 30m"));
                }
                Condition::NoData { quiet: hold }
            }
            "energy" => {
                let window = raw
                    .window
                    .as_deref()
                    .ok_or_else(|| {
                        problem("window", "an energy rule needs a window, such as 1h or 1d")
                    })
                    .and_then(|w| parse_interval(w, false).map_err(|e| problem("window", e)))?;
                // Any counter (issue 79); kWh bought where none is named.
                let counter = match raw.quantity.as_deref() {
                    None => Counter::Bought,
                    Some(name) => Quantity::parse(name)
                        .and_then(Counter::of_quantity)
                        .ok_or_else(|| {
                            problem(
                                "quantity",
                                format!("{name:?} is no counter: cumulative_kwh_p, cumulative_kwh_n, gas_m3 or water_m3"),
                            )
                        })?,
                };
                let unit = counter.quantity().spec().unit;
                let above = raw
                    .above
                    .ok_or_else(|| {
                        problem(
                            "above",
                            format!("the {unit} counted over the window that fires"),
                        )
                    })
                    .and_then(|v| finite("above", v))?;
                if above < 0.0 {
                    return Err(problem("above", format!("at least 0 {unit}")));
                }
                Condition::Energy {
                    window,
                    counter,
                    above,
                }
            }
            other => {
                return Err(problem(
                    "kind",
                    format!("{other:?}: threshold, no_data or energy"),
                ))
            }
        };
        if let Condition::Threshold { quantity, .. } = &condition {
            if quantity.kind() == QuantityKind::Counter {
                // A counter only grows: its level says nothing; its
                // growth is an energy rule.
                return Err(problem(
                    "quantity",
                    format!("{} is a counter: use an energy rule", quantity.name()),
                ));
            }
        }
        for key in raw.labels.keys() {
            check_name(key)
                .map_err(|_| problem("labels", format!("{key:?} is not a label name")))?;
        }
        Ok(Rule {
            name: name.to_owned(),
            scope,
            // A no_data rule's duration is its condition.
            hold: if matches!(condition, Condition::NoData { .. }) {
                Duration::ZERO
            } else {
                hold
            },
            condition,
            keep_firing_for,
            labels: raw.labels,
            summary: raw
                .summary
                .unwrap_or_else(|| "{rule}: {device} {value}".into()),
        })
    }

    /// What a series' observed value says, for people: `14.5 °C`,
    /// `silent for 45 min`, `3.20 kWh in 1h`.
    pub fn describe(&self, value: Option<f64>) -> String {
        match (&self.condition, value) {
            (Condition::Threshold { quantity, .. }, Some(v)) => {
                format!("{v} {}", quantity.spec().unit)
                    .trim_end()
                    .to_owned()
            }
            (Condition::NoData { .. }, Some(seconds)) => {
                format!("silent for {} min", (seconds / 60.0).floor())
            }
            (Condition::NoData { .. }, None) => "never heard from".to_owned(),
            (
                Condition::Energy {
                    window, counter, ..
                },
                Some(v),
            ) => {
                let unit = counter.quantity().spec().unit;
                match counter {
                    // m³ to the litre, as meters count.
                    Counter::Gas | Counter::Water => {
                        format!("{v:.3} {unit} in {}", humanize(*window))
                    }
                    _ => format!("{v:.2} {unit} in {}", humanize(*window)),
                }
            }
            (_, None) => String::new(),
        }
    }

    /// Whether a value breaks the rule: past the threshold, or, once
    /// firing, not yet back past the clear value. `None` for rules that
    /// are not thresholds.
    pub fn breaks(&self, value: f64, firing: bool) -> Option<bool> {
        match &self.condition {
            Condition::Threshold {
                side,
                threshold,
                clear,
                ..
            } => {
                let limit = if firing { *clear } else { *threshold };
                Some(match side {
                    Side::Above => value > limit,
                    Side::Below => value < limit,
                })
            }
            Condition::Energy { above, .. } => Some(value > *above),
            Condition::NoData { .. } => None,
        }
    }
}

/// A duration as rules write it: the largest whole unit.
fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if s >= 86_400 && s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        _ if s >= 3600 && s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s >= 60 && s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_four_household_questions_parse() {
        let cold = Rule::parse(
            "bedroom-cold",
            &json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                    "below": 16, "clear": 16.5, "for": "10m", "labels": {"severity": "warning"},
                    "summary": "{room} is {value} °C"}),
        )
        .unwrap();
        assert_eq!(cold.scope, Scope::Room(RoomId::parse("bedroom").unwrap()));
        assert_eq!(cold.hold, Duration::from_secs(600));
        assert_eq!(cold.breaks(15.9, false), Some(true));
        assert_eq!(cold.breaks(16.2, false), Some(false));
        // Hysteresis: once firing, 16.2 °C is still cold; 16.6 °C is not.
        assert_eq!(cold.breaks(16.2, true), Some(true));
        assert_eq!(cold.breaks(16.6, true), Some(false));
        let damp = Rule::parse(
            "mould",
            &json!({"kind": "threshold", "scope": {"type": "climate"}, "quantity": "humidity",
                    "above": 70, "for": "2h", "keep_firing_for": "30m"}),
        )
        .unwrap();
        assert_eq!(damp.scope, Scope::Type(ReadingKind::Climate));
        assert_eq!(damp.keep_firing_for, Duration::from_secs(1800));
        let fuse = Rule::parse(
            "fuse",
            &json!({"kind": "threshold", "scope": {"device": "meter-1"}, "quantity": "current_w",
                    "above": 9000}),
        )
        .unwrap();
        assert_eq!(fuse.hold, Duration::ZERO);
        let quiet = Rule::parse(
            "quiet",
            &json!({"kind": "no_data", "scope": {"type": "climate"}, "for": "30m"}),
        )
        .unwrap();
        assert_eq!(
            quiet.condition,
            Condition::NoData {
                quiet: Duration::from_secs(1800)
            }
        );
        let energy = Rule::parse(
            "hungry-hour",
            &json!({"kind": "energy", "scope": {"device": "meter-1"}, "window": "1h", "above": 3}),
        )
        .unwrap();
        assert_eq!(energy.breaks(3.5, false), Some(true));
        assert_eq!(energy.describe(Some(3.5)), "3.50 kWh in 1h");
        // Any counter (issue 79): gas over a day, in m³.
        let gas = Rule::parse(
            "gas-day",
            &json!({"kind": "energy", "scope": {"device": "gas-1"}, "quantity": "gas_m3", "window": "1d", "above": 5}),
        )
        .unwrap();
        assert!(matches!(
            gas.condition,
            Condition::Energy {
                counter: Counter::Gas,
                ..
            }
        ));
        assert_eq!(gas.describe(Some(5.125)), "5.125 m³ in 1d");
        let not_a_counter = Rule::parse(
            "r",
            &json!({"kind": "energy", "scope": {"device": "x"}, "quantity": "temperature", "window": "1h", "above": 1}),
        )
        .unwrap_err();
        assert_eq!(not_a_counter.field, "quantity", "{not_a_counter:?}");
        assert_eq!(cold.describe(Some(15.9)), "15.9 °C");
        assert_eq!(quiet.describe(Some(2730.0)), "silent for 45 min");
        assert_eq!(quiet.describe(None), "never heard from");
    }

    #[test]
    fn each_mistake_is_named_by_its_field() {
        let cases = [
            ("bad name!", json!({}), "name"),
            ("r", json!({"kind": "threshold", "scope": {}}), "scope"),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x", "room": "y"}}),
                "scope",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "DEVICE"}}),
                "scope.device",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"type": "gas"}}),
                "scope.type",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x"}, "quantity": "watts", "above": 1}),
                "quantity",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x"}, "quantity": "cumulative_kwh_p", "above": 1}),
                "quantity",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x"}, "quantity": "current_w", "above": 1, "below": 0}),
                "above",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x"}, "quantity": "current_w", "above": 10, "clear": 11}),
                "clear",
            ),
            (
                "r",
                json!({"kind": "threshold", "scope": {"device": "x"}, "quantity": "current_w", "above": 1, "for": "5 minutes"}),
                "for",
            ),
            (
                "r",
                json!({"kind": "no_data", "scope": {"device": "x"}}),
                "for",
            ),
            (
                "r",
                json!({"kind": "energy", "scope": {"device": "x"}, "above": 1}),
                "window",
            ),
            (
                "r",
                json!({"kind": "energy", "scope": {"device": "x"}, "window": "1h", "above": -1}),
                "above",
            ),
            (
                "r",
                json!({"kind": "alarm", "scope": {"device": "x"}}),
                "kind",
            ),
            (
                "r",
                json!({"kind": "no_data", "scope": {"device": "x"}, "for": "1m", "colour": "red"}),
                "rule",
            ),
        ];
        for (name, json, field) in cases {
            let e = Rule::parse(name, &json).unwrap_err();
            assert_eq!(e.field, field, "{json}: {e}");
            assert!(!e.message.is_empty());
        }
    }
}
