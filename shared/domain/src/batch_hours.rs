//! Which of a batch's readings are written as hour blocks (issue 78,
//! docs/batches.md): a device's hour that has closed (it ended by `now`)
//! and that the batch holds at least [`MIN_READINGS`] of. The open hour,
//! and a closed hour's lone reading (a late one), stay items: the rollups
//! function folds them into the hour's block, at no more cost.

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

/// Splits a batch by the rule above.
pub fn split(readings: &[Reading], now: Timestamp) -> BatchHours {
    let mut hours: BTreeMap<(&DeviceId, Timestamp), Vec<usize>> = BTreeMap::new();
    for (i, r) in readings.iter().enumerate() {
        hours
            .entry((&r.device_id, Span::Hour.start_of(r.timestamp)))
            .or_default()
            .push(i);
    }
    let mut out = BatchHours::default();
    for ((device, hour), idx) in hours {
        let closed = Span::Hour.end_of(hour) <= now;
        if closed && idx.len() >= MIN_READINGS {
            match out.blocks.last_mut() {
                Some((d, all)) if d == device => all.extend(idx),
                _ => out.blocks.push((device.clone(), idx)),
            }
        } else {
            out.items.extend(idx);
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
    fn closed_hours_with_two_readings_go_as_blocks_the_rest_as_items() {
        let now = Timestamp::from_millis(1_795_219_200_000 + 150 * 60_000).unwrap();
        let batch = vec![
            r("a", 0),   // hour 0, closed, two readings: block
            r("b", 5),   // b's hour 0 holds one: item
            r("a", 59),  // hour 0
            r("a", 61),  // hour 1, closed, two readings: block
            r("a", 119), // hour 1
            r("a", 121), // hour 2 is open at 150 minutes: items
            r("a", 149),
        ];
        let split = split(&batch, now);
        assert_eq!(
            split.blocks,
            vec![(DeviceId::parse("a").unwrap(), vec![0, 2, 3, 4])]
        );
        assert_eq!(split.items, vec![1, 5, 6]);
        // An hour that ends exactly now is closed.
        let at_end = Timestamp::from_millis(1_795_219_200_000 + 180 * 60_000).unwrap();
        assert_eq!(split_blocks(&batch, at_end), 6);
    }

    fn split_blocks(batch: &[Reading], now: Timestamp) -> usize {
        split(batch, now).blocks.iter().map(|(_, i)| i.len()).sum()
    }
}
