//! Which devices a room's read merges, and over which time (issue 25).
//! Without the `room-time` index, a room's readings are its devices'
//! readings that name the room, read from each device's own partition.
//! Every reading carries the room it was taken in, so reading a device over
//! more time than it spent in the room is never wrong, only dearer; the
//! registry's presence (device, UTC day) narrows it to the days the device
//! reported in the room. Presence is complete from `since` on; before that
//! (a room from before presence, until `ingester-local reindex` back-fills
//! it) every device that was ever in the room is read over the whole time.

use crate::model::{DeviceId, Reading, RoomId, Span, TimeRange, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// What the registry knows of a room's devices over a range.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoomPresence {
    /// From when presence is complete (`None`: not at all yet).
    pub since: Option<Timestamp>,
    /// Every device that ever reported in the room.
    pub devices: BTreeSet<DeviceId>,
    /// (device, UTC day start) of each day a device reported in the room.
    pub days: BTreeSet<(DeviceId, Timestamp)>,
}

/// Per device, the stretches of `range` to read, in time order, adjacent
/// ones joined.
pub fn stretches(range: &TimeRange, p: &RoomPresence) -> BTreeMap<DeviceId, Vec<TimeRange>> {
    let mut out: BTreeMap<DeviceId, Vec<TimeRange>> = BTreeMap::new();
    let mut add = |device: &DeviceId, from: Timestamp, to: Timestamp| {
        let (from, to) = (from.max(range.from()), to.min(range.to()));
        let Ok(r) = TimeRange::new(from, to) else {
            return;
        };
        let list = out.entry(device.clone()).or_default();
        match list.last_mut() {
            Some(last) if last.to() >= r.from() => {
                *last = TimeRange::new(last.from(), last.to().max(r.to())).expect("from < to");
            }
            _ => list.push(r),
        }
    };
    let since = p.since.unwrap_or(Timestamp::MAX);
    // Before `since`: every device, the whole time (in device order, each
    // device's stretches stay in time order as `days` is sorted by device).
    let everyone: BTreeSet<&DeviceId> = p
        .devices
        .iter()
        .chain(p.days.iter().map(|(d, _)| d))
        .collect();
    let mut days = p.days.iter().peekable();
    for device in everyone {
        add(device, Timestamp::MIN, since);
        while let Some((d, day)) = days.next_if(|(d, _)| d <= device) {
            if d == device {
                add(device, (*day).max(since), Span::Day.end_of(*day));
            }
        }
    }
    out
}

/// What a room's reading must be to be the room route's: taken in the room,
/// with a temperature or a humidity (as the `room-time` index projects).
pub fn in_room(room: &RoomId) -> impl Fn(&Reading) -> bool + '_ {
    move |r: &Reading| {
        r.room() == Some(room)
            && r.measurement
                .values()
                .iter()
                .any(|(q, _)| crate::aggregate::rollup::in_room_answers(*q))
    }
}

/// A reading as the room route shows it, as the `room-time` index projects
/// it: its temperature and humidity alone; `None` where [`in_room`] is not.
pub fn room_view(room: &RoomId, r: Reading) -> Option<Reading> {
    if !in_room(room)(&r) {
        return None;
    }
    let values: Vec<_> = crate::aggregate::rollup::room_values(&r).collect();
    let measurement = crate::model::Measurement::new(Some(room.clone()), values).ok()?;
    Some(Reading {
        device_id: r.device_id,
        timestamp: r.timestamp,
        measurement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    const T0: i64 = 1_795_219_200_000; // a UTC midnight

    fn t(day: i64, hour: i64) -> Timestamp {
        Timestamp::from_millis(T0 + day * DAY + hour * 3_600_000).unwrap()
    }
    fn r(a: Timestamp, b: Timestamp) -> TimeRange {
        TimeRange::new(a, b).unwrap()
    }
    fn dev(s: &str) -> DeviceId {
        DeviceId::parse(s).unwrap()
    }

    #[test]
    fn complete_presence_reads_each_device_on_its_days_only() {
        // a: days 0, 1 and 4 (it moved away and came back); b: day 2.
        let p = RoomPresence {
            since: Some(Timestamp::MIN),
            devices: [dev("a"), dev("b")].into(),
            days: [
                (dev("a"), t(0, 0)),
                (dev("a"), t(1, 0)),
                (dev("a"), t(4, 0)),
                (dev("b"), t(2, 0)),
            ]
            .into(),
        };
        let s = stretches(&r(t(0, 12), t(4, 6)), &p);
        assert_eq!(
            s[&dev("a")],
            vec![r(t(0, 12), t(2, 0)), r(t(4, 0), t(4, 6))],
            "adjacent days joined, the days away skipped, cut to the range"
        );
        assert_eq!(s[&dev("b")], vec![r(t(2, 0), t(3, 0))]);
    }

    #[test]
    fn before_presence_is_complete_every_device_is_read_throughout() {
        let p = RoomPresence {
            since: Some(t(2, 0)),
            devices: [dev("a"), dev("b")].into(),
            days: [(dev("a"), t(3, 0)), (dev("c"), t(2, 0))].into(),
        };
        let s = stretches(&r(t(0, 0), t(5, 0)), &p);
        assert_eq!(s[&dev("a")], vec![r(t(0, 0), t(2, 0)), r(t(3, 0), t(4, 0))]);
        assert_eq!(s[&dev("b")], vec![r(t(0, 0), t(2, 0))]);
        assert_eq!(
            s[&dev("c")],
            vec![r(t(0, 0), t(3, 0))],
            "a device the ROOM item does not list yet, from its presence"
        );
        // No presence at all (an upgraded table before reindex): everything.
        let none = RoomPresence { since: None, ..p };
        let s = stretches(&r(t(0, 0), t(5, 0)), &none);
        assert_eq!(s[&dev("b")], vec![r(t(0, 0), t(5, 0))]);
        assert_eq!(s[&dev("a")], vec![r(t(0, 0), t(5, 0))]);
    }
}
