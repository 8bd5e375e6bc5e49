//! What a batch write did, and how duplicate keys in one request collapse.

use domain::model::{DeviceId, FastMap, Reading, Timestamp};

/// What a batch write did. Indices refer to the slice given to `write_readings`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Readings that are not stored (after retries). Empty on full success.
    pub unwritten: Vec<usize>,
    /// Items written (duplicate keys in one request are one item).
    pub items_written: usize,
    /// Readings superseded by a later reading with the same key in the same request.
    pub duplicates: usize,
}

/// Duplicate keys within one request collapse to the last reading with that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deduped {
    /// Index (into the input) of the reading that wins each distinct key, in first-seen key order.
    pub winners: Vec<usize>,
    /// For each input index, the position in `winners` of its key.
    slot_of: Vec<usize>,
}

impl Deduped {
    pub fn new(readings: &[Reading]) -> Self {
        let mut by_key: FastMap<(&DeviceId, Timestamp), usize> =
            FastMap::with_capacity_and_hasher(readings.len(), Default::default());
        let mut winners = Vec::with_capacity(readings.len());
        let mut slot_of = Vec::with_capacity(readings.len());
        for (i, r) in readings.iter().enumerate() {
            let slot = *by_key
                .entry((&r.device_id, r.timestamp))
                .or_insert_with(|| {
                    winners.push(i);
                    winners.len() - 1
                });
            winners[slot] = i;
            slot_of.push(slot);
        }
        Self { winners, slot_of }
    }

    pub fn duplicates(&self) -> usize {
        self.slot_of.len() - self.winners.len()
    }

    /// Turns failed slots into the input indices they stand for (every reading with that key).
    pub fn report(&self, failed_slots: &[usize]) -> WriteReport {
        let mut failed = vec![false; self.winners.len()];
        for &s in failed_slots {
            failed[s] = true;
        }
        let unwritten = (0..self.slot_of.len())
            .filter(|&i| failed[self.slot_of[i]])
            .collect();
        WriteReport {
            unwritten,
            items_written: self.winners.len() - failed.iter().filter(|f| **f).count(),
            duplicates: self.duplicates(),
        }
    }
}
