//! What the alerts' unit tests evaluate against: a minute of a test day, and
//! a registry of one room sensor.

use crate::model::{DeviceId, Measurement, Reading, ReadingKind, RoomId, Timestamp};
use crate::registry::{DeviceRecord, RegistrySnapshot};

/// Minute `minute` of the test's day.
pub fn t(minute: i64) -> Timestamp {
    Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap()
}

/// A registry of one sensor, `th-1`, at `celsius` in `room` since minute 0.
pub fn one_sensor(room: &str, celsius: f64) -> RegistrySnapshot {
    let reading = Reading {
        device_id: DeviceId::parse("th-1").unwrap(),
        timestamp: t(0),
        measurement: Measurement::climate(RoomId::parse(room).unwrap(), celsius, 50.0).unwrap(),
    };
    let record = DeviceRecord {
        device_id: reading.device_id.clone(),
        name: None,
        types: [ReadingKind::Climate].into(),
        quantities: Default::default(),
        room: reading.room().cloned(),
        first_seen: Some(t(0)),
        last_seen: Some(t(0)),
        latest: Some(reading),
    };
    RegistrySnapshot {
        devices: [(record.device_id.clone(), record)].into(),
        rooms: Default::default(),
    }
}
