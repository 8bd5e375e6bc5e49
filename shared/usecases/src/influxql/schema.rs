//! The schema InfluxQL sees (docs/influxql.md): one measurement per reading
//! family of the catalogue (`power`, `climate`, `meter`, `device`), each
//! quantity a float field of its family's measurement, and two tags,
//! `device_id` and `room` (empty where a reading has none). A measurement
//! exists once a device has reported one of its quantities.

use super::ast::{Cast, VarRef};
use domain::model::{DeviceId, Quantity, Reading, ReadingKind};
use domain::registry::RegistrySnapshot;
use std::collections::BTreeSet;

pub const DEVICE_TAG: &str = "device_id";
pub const ROOM_TAG: &str = "room";
/// Sorted, as InfluxDB lists tag keys.
pub const TAGS: [&str; 2] = [DEVICE_TAG, ROOM_TAG];

/// The measurement a quantity is a field of.
pub fn measurement_of(q: Quantity) -> &'static str {
    q.family().as_str()
}

/// The fields of a measurement that some device has reported, sorted by name.
pub fn fields(snapshot: &RegistrySnapshot, measurement: &str) -> Vec<Quantity> {
    let Some(family) = ReadingKind::parse(measurement) else {
        return Vec::new();
    };
    let reported: BTreeSet<Quantity> = snapshot
        .devices
        .values()
        .flat_map(|d| d.quantities.iter().copied())
        .filter(|q| q.family() == family)
        .collect();
    let mut out: Vec<Quantity> = reported.into_iter().collect();
    out.sort_by_key(|q| q.name());
    out
}

/// The tag keys of a measurement, sorted: `device_id`, and `room` where a
/// device that reports its fields has reported from a room.
pub fn tags(snapshot: &RegistrySnapshot, measurement: &str) -> Vec<&'static str> {
    // Gathered once: asking every room about every device is quadratic in a fleet.
    let in_a_room: BTreeSet<&DeviceId> = snapshot
        .rooms
        .values()
        .flat_map(|r| r.devices.iter())
        .collect();
    let has_room = snapshot.devices.values().any(|d| {
        d.quantities
            .iter()
            .any(|q| measurement_of(*q) == measurement)
            && (d.room.is_some() || in_a_room.contains(&d.device_id))
    });
    if has_room {
        TAGS.to_vec()
    } else {
        vec![DEVICE_TAG]
    }
}

/// Every measurement some device has reported a field of, sorted.
pub fn measurements(snapshot: &RegistrySnapshot) -> Vec<&'static str> {
    let set: BTreeSet<&'static str> = snapshot
        .devices
        .values()
        .flat_map(|d| d.quantities.iter().map(|q| measurement_of(*q)))
        .collect();
    set.into_iter().collect()
}

/// What a name in a statement refers to, in one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    Tag(&'static str),
    /// A tag no reading has: always empty.
    NoTag,
    Field(Quantity),
    /// A field this measurement does not have: always null.
    NoField,
    Time,
}

pub fn resolve(v: &VarRef, measurement: &str) -> Var {
    let tag = TAGS.iter().find(|t| **t == v.name).copied();
    let field = Quantity::parse(&v.name).filter(|q| measurement_of(*q) == measurement);
    match v.cast {
        Some(Cast::Tag) => tag.map_or(Var::NoTag, Var::Tag),
        Some(Cast::Field) => field.map_or(Var::NoField, Var::Field),
        None if v.name.eq_ignore_ascii_case("time") => Var::Time,
        None => match (tag, field) {
            (Some(t), _) => Var::Tag(t),
            (None, Some(q)) => Var::Field(q),
            // A quantity of another family is a field this measurement lacks.
            (None, None) if Quantity::parse(&v.name).is_some() => Var::NoField,
            (None, None) => Var::NoTag,
        },
    }
}

/// A tag's value in a reading of `device` (the device id, or its room or "").
pub fn tag_value<'r>(tag: &str, reading: &'r Reading) -> &'r str {
    if tag == DEVICE_TAG {
        reading.device_id.as_str()
    } else {
        reading.room().map_or("", |r| r.as_str())
    }
}
