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
            let rule = rules.iter().find(|r| r.name == key.0);
            let before = self.0[&key];
            let (hold, keep) = rule.map_or((Default::default(), Default::default()), |r| {
                (r.hold, r.keep_firing_for)
            });
            let (after, transition) = before.step(false, before.value, now, hold, keep);
            // A series whose rule is gone resolves at once.
            let (after, transition) = match (rule, before.firing(), transition) {
                (None, true, None) => (SeriesState::default(), Some(Transition::Resolved)),
                _ => (after, transition),
            };
            self.put(key.clone(), after);
            if let Some(transition) = transition {
                events.push(Event {
                    at: now,
                    rule: key.0,
                    room: None,
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
