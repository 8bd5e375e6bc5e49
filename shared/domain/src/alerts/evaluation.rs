//! One evaluation of every rule: each series observed and stepped, the
//! transitions it made returned as events. The same step serves the live
//! evaluation and a replay over history.

use super::observe::{observe, Devices};
use super::rule::Rule;
use super::series::{Phase, SeriesState, Transition};

use crate::model::{DeviceId, RoomId, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// A rule's series: one per device.
pub type SeriesKey = (String, DeviceId);

/// A transition of a series, at an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Timestamp,
    pub rule: String,
    pub device: DeviceId,
    pub room: Option<RoomId>,
    pub transition: Transition,
    pub value: Option<f64>,
}

/// Every series that is not inactive, from one evaluation to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct States(pub BTreeMap<SeriesKey, SeriesState>);

impl States {
    /// Evaluates every rule at `now`; `energy` gives a rule's kWh over its
    /// window for a device. A series whose device left the rule's scope (or
    /// whose rule is gone) stops holding, and resolves as any other.
    pub fn evaluate(
        &mut self,
        rules: &[Rule],
        known: &impl Devices,
        now: Timestamp,
        energy: impl Fn(&Rule, &DeviceId) -> Option<f64>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        let mut seen: BTreeSet<SeriesKey> = BTreeSet::new();
        for rule in rules {
            let observations = observe(
                rule,
                known,
                now,
                |d| {
                    self.0
                        .get(&(rule.name.clone(), d.clone()))
                        .is_some_and(|s| s.firing())
                },
                |d| energy(rule, d),
            );
            for o in observations {
                let key = (rule.name.clone(), o.device.clone());
                let before = self.0.get(&key).copied().unwrap_or_default();
                let (after, transition) =
                    before.step(o.holds, o.value, now, rule.hold, rule.keep_firing_for);
                self.put(key.clone(), after);
                seen.insert(key);
                if let Some(transition) = transition {
                    events.push(Event {
                        at: now,
                        rule: rule.name.clone(),
                        device: o.device,
                        room: o.room,
                        transition,
                        value: o.value,
                    });
                }
            }
        }
        // Series no rule observed this time: their condition no longer holds.
        let unseen: Vec<SeriesKey> = self
            .0
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for key in unseen {
            // A series whose rule is gone has no `keep_firing_for`: it
            // resolves at once.
            let (hold, keep) = rules
                .iter()
                .find(|r| r.name == key.0)
                .map_or((Default::default(), Default::default()), |r| {
                    (r.hold, r.keep_firing_for)
                });
            let before = self.0[&key];
            let (after, transition) = before.step(false, before.value, now, hold, keep);
            self.put(key.clone(), after);
            if let Some(transition) = transition {
                events.push(Event {
                    at: now,
                    rule: key.0,
                    room: known.get(&key.1).and_then(|d| d.room.cloned()),
                    device: key.1,
                    transition,
                    value: before.value,
                });
            }
        }
        events
    }

    /// Keeps a series' state; an inactive one is forgotten.
    fn put(&mut self, key: SeriesKey, state: SeriesState) {
        if matches!(state.phase, Phase::Inactive) {
            self.0.remove(&key);
        } else {
            self.0.insert(key, state);
        }
    }

    /// The series that fire now.
    pub fn firing(&self) -> impl Iterator<Item = (&SeriesKey, &SeriesState)> {
        self.0.iter().filter(|(_, s)| s.firing())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::fixtures::{one_sensor as known, t};
    use serde_json::json;

    fn cold(keep: &str) -> Rule {
        Rule::parse(
            "cold",
            &json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                    "below": 16, "keep_firing_for": keep}),
        )
        .unwrap()
    }

    fn transitions(events: &[Event]) -> Vec<(Transition, Option<&str>)> {
        events
            .iter()
            .map(|e| (e.transition, e.room.as_ref().map(|r| r.as_str())))
            .collect()
    }

    #[test]
    fn a_series_whose_rule_is_removed_resolves_at_once() {
        let mut states = States::default();
        let cold_bedroom = known("bedroom", 14.0);
        let e = states.evaluate(&[cold("10m")], &cold_bedroom, t(1), |_, _| None);
        assert_eq!(transitions(&e), [(Transition::Firing, Some("bedroom"))]);
        // The rule is gone: no keep_firing_for applies any more.
        let e = states.evaluate(&[], &cold_bedroom, t(2), |_, _| None);
        assert_eq!(transitions(&e), [(Transition::Resolved, Some("bedroom"))]);
        assert!(states.0.is_empty());
    }

    #[test]
    fn a_device_that_leaves_the_room_stops_holding_after_keep_firing_for() {
        let mut states = States::default();
        let e = states.evaluate(&[cold("2m")], &known("bedroom", 14.0), t(1), |_, _| None);
        assert_eq!(transitions(&e), [(Transition::Firing, Some("bedroom"))]);
        // Carried to the kitchen (still cold there): out of the rule's scope.
        let moved = known("kitchen", 14.0);
        assert!(states
            .evaluate(&[cold("2m")], &moved, t(2), |_, _| None)
            .is_empty());
        assert!(states
            .evaluate(&[cold("2m")], &moved, t(3), |_, _| None)
            .is_empty());
        let e = states.evaluate(&[cold("2m")], &moved, t(4), |_, _| None);
        assert_eq!(transitions(&e), [(Transition::Resolved, Some("kitchen"))]);
        assert!(states.0.is_empty());
    }
}
