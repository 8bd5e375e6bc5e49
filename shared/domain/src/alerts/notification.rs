//! What receivers are told of a series (docs/alerts.md): that it fires (at
//! its transition, then again every `repeat_interval` while it fires) or
//! that it resolved. Pending is shown, never sent. A notification carries
//! Alertmanager's labels (`alertname`, `device_id`, `room` and the rule's
//! own), which identify it: receivers de-duplicate by them.

use super::evaluation::{Event, SeriesKey, States};
use super::observe::Devices;
use super::rule::{Condition, Rule};
use super::series::{Phase, Transition};
use crate::model::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// One thing to tell receivers. Times are milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub rule: String,
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    pub resolved: bool,
    /// When the series fired.
    pub starts_at: i64,
    /// The evaluation that decided it: for a resolved series, its end.
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The value as the rule says it (`14.5 °C`, `silent for 45 min`).
    pub described: String,
    /// The rule's summary with its placeholders filled.
    pub summary: String,
    /// `alertname`, `device_id`, `room` (when known) and the rule's labels.
    pub labels: BTreeMap<String, String>,
}

/// The default `repeat_interval`, as Alertmanager's.
pub const REPEAT_INTERVAL: Duration = Duration::from_secs(4 * 3600);

pub fn iso(ms: i64) -> String {
    Timestamp::from_millis(ms)
        .map(|t| t.with_text(str::to_owned))
        .unwrap_or_default()
}

impl Notification {
    pub fn starts_at_text(&self) -> String {
        iso(self.starts_at)
    }

    pub fn at_text(&self) -> String {
        iso(self.at)
    }

    /// One line for people: `FIRING cold: bedroom is 14.5 °C`.
    pub fn title(&self) -> String {
        let status = if self.resolved { "RESOLVED" } else { "FIRING" };
        format!("{status} {}: {}", self.rule, self.device)
    }
}

impl Rule {
    /// The summary with `{rule}`, `{device}`, `{room}`, `{value}` and
    /// `{threshold}` filled.
    pub fn summarize(&self, device: &str, room: Option<&str>, value: Option<f64>) -> String {
        let threshold = match &self.condition {
            Condition::Threshold { threshold, .. } => threshold.to_string(),
            Condition::Energy { above, .. } => above.to_string(),
            Condition::NoData { quiet } => format!("{} s", quiet.as_secs()),
        };
        self.summary
            .replace("{rule}", &self.name)
            .replace("{device}", device)
            .replace("{room}", room.unwrap_or("-"))
            .replace("{value}", &self.describe(value))
            .replace("{threshold}", &threshold)
    }
}

fn notification(
    rule: Option<&Rule>,
    (name, device): &SeriesKey,
    room: Option<&str>,
    resolved: bool,
    starts_at: Timestamp,
    at: Timestamp,
    value: Option<f64>,
) -> Notification {
    let mut labels: BTreeMap<String, String> = rule.map(|r| r.labels.clone()).unwrap_or_default();
    labels.insert("alertname".into(), name.clone());
    labels.insert("device_id".into(), device.as_str().to_owned());
    if let Some(room) = room {
        labels.insert("room".into(), room.to_owned());
    }
    Notification {
        rule: name.clone(),
        device: device.as_str().to_owned(),
        room: room.map(str::to_owned),
        resolved,
        starts_at: starts_at.millis(),
        at: at.millis(),
        value,
        described: rule.map(|r| r.describe(value)).unwrap_or_default(),
        summary: match rule {
            Some(r) => r.summarize(device.as_str(), room, value),
            None => format!("{name}: {}", device.as_str()),
        },
        labels,
    }
}

/// What receivers are due after an evaluation at `now` moved `before` to
/// `after` with `events`: a resolved notification for each series that
/// resolved, and a firing one for each firing series not told within
/// `repeat_interval` (a new one at once). Marks those told in `after`.
pub fn due(
    rules: &[Rule],
    known: &impl Devices,
    before: &States,
    after: &mut States,
    events: &[Event],
    now: Timestamp,
    repeat_interval: Duration,
) -> Vec<Notification> {
    let rule = |name: &str| rules.iter().find(|r| r.name == name);
    let mut out = Vec::new();
    for e in events
        .iter()
        .filter(|e| e.transition == Transition::Resolved)
    {
        let key = (e.rule.clone(), e.device.clone());
        let Some(Phase::Firing { since, .. }) = before.0.get(&key).map(|s| s.phase) else {
            continue;
        };
        let room = e.room.as_ref().map(|r| r.as_str());
        out.push(notification(
            rule(&e.rule),
            &key,
            room,
            true,
            since,
            now,
            e.value,
        ));
    }
    for (key, state) in after.0.iter_mut() {
        let Phase::Firing { since, .. } = state.phase else {
            continue;
        };
        if !state.due(now, repeat_interval) {
            continue;
        }
        let room = known.get(&key.1).and_then(|d| d.room).map(|r| r.as_str());
        out.push(notification(
            rule(&key.0),
            key,
            room,
            false,
            since,
            now,
            state.value,
        ));
        state.notified = Some(now);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::fixtures::{one_sensor, t};
    use crate::registry::RegistrySnapshot;
    use serde_json::json;

    fn bedroom_at(celsius: f64) -> RegistrySnapshot {
        one_sensor("bedroom", celsius)
    }

    /// One evaluation at `minute`, with what was due.
    fn step(
        states: &mut States,
        rules: &[Rule],
        known: &RegistrySnapshot,
        minute: i64,
    ) -> Vec<Notification> {
        let before = states.clone();
        let events = states.evaluate(rules, known, t(minute), |_, _| None);
        due(
            rules,
            known,
            &before,
            states,
            &events,
            t(minute),
            Duration::from_secs(3600),
        )
    }

    #[test]
    fn firing_is_told_at_once_then_every_repeat_interval_and_resolved_once() {
        let cold = Rule::parse(
            "cold",
            &json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                    "below": 16, "labels": {"severity": "warning"},
                    "summary": "{room} is {value} (below {threshold}) on {device}"}),
        )
        .unwrap();
        let rules = [cold];
        let mut states = States::default();
        let cold_room = bedroom_at(14.5);
        let told = step(&mut states, &rules, &cold_room, 0);
        assert_eq!(told.len(), 1);
        assert!(!told[0].resolved);
        assert_eq!(told[0].summary, "bedroom is 14.5 °C (below 16) on th-1");
        assert_eq!(
            told[0].labels,
            [
                ("alertname", "cold"),
                ("device_id", "th-1"),
                ("room", "bedroom"),
                ("severity", "warning")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into()
        );
        assert!(step(&mut states, &rules, &cold_room, 59).is_empty());
        let again = step(&mut states, &rules, &cold_room, 60);
        assert_eq!(again.len(), 1);
        assert_eq!(
            again[0].starts_at,
            t(0).millis(),
            "the same alert, repeated"
        );
        let resolved = step(&mut states, &rules, &bedroom_at(17.0), 61);
        assert_eq!(resolved.len(), 1);
        assert!(resolved[0].resolved);
        assert_eq!(
            (resolved[0].starts_at, resolved[0].at),
            (t(0).millis(), t(61).millis())
        );
        assert!(step(&mut states, &rules, &bedroom_at(17.0), 62).is_empty());
    }

    #[test]
    fn pending_is_never_told() {
        let rules = [Rule::parse(
            "cold",
            &json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                    "below": 16, "for": "10m"}),
        )
        .unwrap()];
        let mut states = States::default();
        assert!(step(&mut states, &rules, &bedroom_at(14.0), 0).is_empty());
        assert!(step(&mut states, &rules, &bedroom_at(17.0), 5).is_empty());
    }
}
