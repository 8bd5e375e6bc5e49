//! Which of a batch's readings are written as hour blocks (issue 78,
//! docs/batches.md): every reading of a device the batch holds at least
//! [`MIN_READINGS`] of in one closed hour (an hour that ended by `now`).
//! Its other readings go with them (a lone reading of another hour, the
//! open hour): one refresh writes them all, at an hour put each, no more
//! than an item each, and the device's hours are whole when the request
//! returns. A device with no such hour (a reading a request, a late lone
//! reading) stays items: the rollups function folds them.
//!
//! A stream's window ([`Hours::Any`]: the IoT Core path that batches
//! devices' single messages, docs/batches.md) holds a few minutes of each
//! device, all in the open hour: there any hour of two readings counts,
//! and each window rewrites the open hour's block (one put, where the
//! readings as items would be one each).

use crate::model::{DeviceId, Reading, Span, Timestamp};
use std::collections::BTreeMap;

/// Readings of one device-hour a batch must hold for the hour to be
/// written as its block: one reading costs the same either way.
pub const MIN_READINGS: usize = 2;

/// A batch, split: per device, the readings (by index into the batch) of
/// its hours written as blocks; and the readings written as items.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatchHours {
    pub blocks: Vec<(DeviceId, Vec<usize>)>,
    pub items: Vec<usize>,
}

/// Which hours of two readings send a device's batch as blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Hours {
    /// Closed hours only: a request of a device's recent readings is
    /// items until it holds a whole hour (a hub's hour, an import).
    #[default]
    Closed,
    /// Any hour, the open one too: a stream's window of a device's
    /// readings, which rewrites the open hour's block each window.
    Any,
}

/// Splits a batch by the rule above.
pub fn split(readings: &[Reading], now: Timestamp, hours_counted: Hours) -> BatchHours {
    let mut devices: BTreeMap<&DeviceId, BTreeMap<Timestamp, Vec<usize>>> = BTreeMap::new();
    for (i, r) in readings.iter().enumerate() {
        devices
            .entry(&r.device_id)
            .or_default()
            .entry(Span::Hour.start_of(r.timestamp))
            .or_default()
            .push(i);
    }
    let mut out = BatchHours::default();
    for (device, hours) in devices {
        let whole_hour = hours.iter().any(|(hour, idx)| {
            idx.len() >= MIN_READINGS
                && (hours_counted == Hours::Any || Span::Hour.end_of(*hour) <= now)
        });
        let mut idx: Vec<usize> = hours.into_values().flatten().collect();
        match whole_hour {
            true => {
                idx.sort_unstable();
                out.blocks.push((device.clone(), idx));
            }
            false => out.items.extend(idx),
        }
    }
    out.items.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Measurement;

    fn r(device: &str, minute: i64) -> Reading {
        Reading {
            device_id: DeviceId::parse(device).unwrap(),
            timestamp: Timestamp::from_millis(1_795_219_200_000 + minute * 60_000).unwrap(),
            measurement: Measurement::power(1.0, 0.0, 5.0).unwrap(),
        }
    }

    #[test]
    fn a_device_with_a_closed_hour_of_two_readings_goes_as_blocks_whole() {
        let now = Timestamp::from_millis(1_795_219_200_000 + 150 * 60_000).unwrap();
        let batch = vec![
            r("a", 0),   // hour 0, closed, two readings: a's batch goes as blocks
            r("b", 5),   // b holds one reading an hour: items
            r("a", 59),  // hour 0
            r("b", 65),  // b's hour 1: one reading
            r("a", 121), // a's open hour 2: with a's blocks
            r("c", 130), // c's open hour holds two: items
            r("c", 140),
        ];
        let closed = split(&batch, now, Hours::Closed);
        assert_eq!(
            closed.blocks,
            vec![(DeviceId::parse("a").unwrap(), vec![0, 2, 4])]
        );
        assert_eq!(closed.items, vec![1, 3, 5, 6]);
        // An hour that ends exactly now is closed: c's two go as blocks.
        let at_end = Timestamp::from_millis(1_795_219_200_000 + 180 * 60_000).unwrap();
        assert_eq!(split_blocks(&batch, at_end, Hours::Closed), 5);
        // A stream's window counts the open hour: c's two go as blocks, b
        // (one reading an hour) stays items.
        assert_eq!(split_blocks(&batch, now, Hours::Any), 5);
        assert_eq!(split(&batch, now, Hours::Any).items, vec![1, 3]);
    }

    fn split_blocks(batch: &[Reading], now: Timestamp, hours: Hours) -> usize {
        split(batch, now, hours)
            .blocks
            .iter()
            .map(|(_, i)| i.len())
            .sum()
    }
}
