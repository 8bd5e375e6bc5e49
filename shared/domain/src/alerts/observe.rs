//! What a rule sees at one evaluation: for each device in its scope, whether
//! the condition holds and the value it saw, from what is known of the
//! devices at that moment (the registry when live, the readings up to the
//! moment in a replay) and, for an energy rule, the kWh bought over its
//! window, which the caller works out.

use super::rule::{Condition, Rule, Scope};
use crate::model::{DeviceId, Reading, ReadingKind, RoomId, Timestamp};
use crate::registry::RegistrySnapshot;
use std::collections::BTreeSet;

/// One series' observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub device: DeviceId,
    pub room: Option<RoomId>,
    pub holds: bool,
    /// The quantity's latest value; the kWh over the window; for a quiet
    /// device, the seconds since it was last heard from.
    pub value: Option<f64>,
}

/// A device as an evaluation knows it.
#[derive(Debug, Clone, Copy)]
pub struct DeviceView<'a> {
    pub id: &'a DeviceId,
    /// The room of its latest reading that had one.
    pub room: Option<&'a RoomId>,
    /// The types of reading it sends.
    pub types: &'a BTreeSet<ReadingKind>,
    pub latest: Option<&'a Reading>,
}

/// What is known of the devices at an evaluation.
pub trait Devices {
    fn all(&self) -> Vec<DeviceView<'_>>;
    fn get(&self, id: &DeviceId) -> Option<DeviceView<'_>>;
}

impl Devices for RegistrySnapshot {
    fn all(&self) -> Vec<DeviceView<'_>> {
        self.devices.keys().filter_map(|id| self.get(id)).collect()
    }

    fn get(&self, id: &DeviceId) -> Option<DeviceView<'_>> {
        self.devices.get(id).map(|d| DeviceView {
            id: &d.device_id,
            room: d.room.as_ref(),
            types: &d.types,
            latest: d.latest.as_ref(),
        })
    }
}

/// The devices a scope names now: a room's are those whose latest reading
/// with a room was taken there.
pub fn devices_in(scope: &Scope, known: &impl Devices) -> Vec<DeviceId> {
    match scope {
        Scope::Device(d) => vec![d.clone()],
        Scope::Room(r) => known
            .all()
            .into_iter()
            .filter(|d| d.room == Some(r))
            .map(|d| d.id.clone())
            .collect(),
        Scope::Type(k) => known
            .all()
            .into_iter()
            .filter(|d| d.types.contains(k))
            .map(|d| d.id.clone())
            .collect(),
    }
}

/// The rule's observations at `now`. `firing` says which series fire now
/// (a threshold's clear value applies to them); `energy` gives a device's
/// kWh bought over the rule's window, `None` where it cannot be known.
pub fn observe(
    rule: &Rule,
    known: &impl Devices,
    now: Timestamp,
    firing: impl Fn(&DeviceId) -> bool,
    energy: impl Fn(&DeviceId) -> Option<f64>,
) -> Vec<Observation> {
    let mut out = Vec::new();
    for device in devices_in(&rule.scope, known) {
        let view = known.get(&device);
        let room = view.and_then(|d| d.room.cloned());
        let latest = view.and_then(|d| d.latest);
        let seen = |value: Option<f64>, holds: bool| Observation {
            device: device.clone(),
            room: room.clone(),
            holds,
            value,
        };
        let observation = match &rule.condition {
            Condition::Threshold { quantity, .. } => {
                let Some(value) = latest.and_then(|r| r.get(*quantity)) else {
                    continue;
                };
                let holds = rule.breaks(value, firing(&device)).unwrap_or(false);
                seen(Some(value), holds)
            }
            Condition::NoData { quiet } => match latest {
                // A device named by the rule that was never heard from is quiet.
                None => seen(None, true),
                Some(r) => {
                    let silent_ms = now.millis() - r.timestamp.millis();
                    seen(
                        Some(silent_ms as f64 / 1000.0),
                        silent_ms >= quiet.as_millis() as i64,
                    )
                }
            },
            Condition::Energy { .. } => {
                let Some(kwh) = energy(&device) else {
                    continue;
                };
                seen(
                    Some(kwh),
                    rule.breaks(kwh, firing(&device)).unwrap_or(false),
                )
            }
        };
        out.push(observation);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;
    use crate::registry::DeviceRecord;
    use serde_json::json;

    fn t(minute: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap()
    }

    fn sensor(id: &str, room: &str, minute: i64, temperature: f64) -> DeviceRecord {
        let reading = Reading {
            device_id: DeviceId::parse(id).unwrap(),
            timestamp: t(minute),
            measurement: Measurement::climate(RoomId::parse(room).unwrap(), temperature, 50.0)
                .unwrap(),
        };
        DeviceRecord {
            device_id: reading.device_id.clone(),
            name: None,
            types: [ReadingKind::Climate].into(),
            quantities: reading
                .measurement
                .values()
                .iter()
                .map(|(q, _)| *q)
                .collect(),
            room: reading.room().cloned(),
            first_seen: Some(t(0)),
            last_seen: Some(reading.timestamp),
            latest: Some(reading),
        }
    }

    fn registry(devices: Vec<DeviceRecord>) -> RegistrySnapshot {
        RegistrySnapshot {
            devices: devices
                .into_iter()
                .map(|d| (d.device_id.clone(), d))
                .collect(),
            rooms: Default::default(),
        }
    }

    #[test]
    fn a_room_s_devices_each_a_series_with_the_clear_value_while_firing() {
        let cold = Rule::parse(
            "cold",
            &json!({"kind": "threshold", "scope": {"room": "bedroom"}, "quantity": "temperature",
                    "below": 16, "clear": 16.5}),
        )
        .unwrap();
        let reg = registry(vec![
            sensor("th-1", "bedroom", 10, 15.5),
            sensor("th-2", "bedroom", 10, 16.2),
            sensor("th-3", "kitchen", 10, 12.0),
        ]);
        let seen = observe(&cold, &reg, t(11), |_| false, |_| None);
        let holds: Vec<(&str, bool)> = seen.iter().map(|o| (o.device.as_str(), o.holds)).collect();
        assert_eq!(holds, vec![("th-1", true), ("th-2", false)]);
        // th-2 fires already: 16.2 °C is not back above 16.5 °C.
        let seen = observe(&cold, &reg, t(11), |d| d.as_str() == "th-2", |_| None);
        assert!(seen.iter().all(|o| o.holds));
    }

    #[test]
    fn a_quiet_device_and_one_never_heard_from() {
        let quiet = Rule::parse(
            "quiet",
            &json!({"kind": "no_data", "scope": {"type": "climate"}, "for": "30m"}),
        )
        .unwrap();
        let reg = registry(vec![
            sensor("th-1", "bedroom", 0, 20.0),
            sensor("th-2", "hall", 20, 20.0),
        ]);
        let seen = observe(&quiet, &reg, t(45), |_| false, |_| None);
        assert!(seen[0].holds);
        assert_eq!(seen[0].value, Some(45.0 * 60.0));
        assert!(!seen[1].holds);
        let named = Rule::parse(
            "gone",
            &json!({"kind": "no_data", "scope": {"device": "th-9"}, "for": "5m"}),
        )
        .unwrap();
        let seen = observe(&named, &reg, t(45), |_| false, |_| None);
        assert_eq!((seen[0].holds, seen[0].value), (true, None));
    }

    #[test]
    fn energy_comes_from_the_caller_and_unknown_energy_is_no_series() {
        let hour = Rule::parse(
            "hour",
            &json!({"kind": "energy", "scope": {"type": "climate"}, "window": "1h", "above": 3}),
        )
        .unwrap();
        let reg = registry(vec![
            sensor("th-1", "bedroom", 0, 20.0),
            sensor("th-2", "hall", 0, 20.0),
        ]);
        let seen = observe(
            &hour,
            &reg,
            t(60),
            |_| false,
            |d| (d.as_str() == "th-1").then_some(3.5),
        );
        assert_eq!(seen.len(), 1);
        assert!(seen[0].holds);
    }
}
