//! Dense numbers for the distinct ids of a batch, for the write path's
//! per-reading look-ups (the writer's ids, the registry plan).

use std::collections::HashMap;

/// A hash map for per-reading look-ups on the write path: foldhash, where
/// the standard SipHash was a twentieth of line-protocol ingest. Its keys
/// are our own ids and times, and its seed is still random per map.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// An id whose text is shared by its clones: equal addresses mean equal
/// ids (the converse need not hold). `DeviceId` and `RoomId` (`model::ids`).
pub trait SharedText {
    fn text(&self) -> &str;
    fn address(&self) -> usize;
}

/// Numbers 0, 1, 2, ... for distinct ids, in the order first seen. The
/// readings of one parsed body share each id's text, so a look-up is
/// usually one hash of an address; an id with its own copy of a known text
/// (JSON bodies, rebuilt readings) still gets that text's number.
pub struct IdIndex<'a, T> {
    by_address: FastMap<usize, usize>,
    by_text: FastMap<&'a str, usize>,
    ids: Vec<&'a T>,
}

impl<T> Default for IdIndex<'_, T> {
    fn default() -> Self {
        Self {
            by_address: FastMap::default(),
            by_text: FastMap::default(),
            ids: Vec::new(),
        }
    }
}

impl<'a, T: SharedText> IdIndex<'a, T> {
    /// The number of `id`, and whether it is new (then it is `len() - 1`).
    pub fn number(&mut self, id: &'a T) -> (usize, bool) {
        if let Some(&n) = self.by_address.get(&id.address()) {
            return (n, false);
        }
        let next = self.ids.len();
        let n = *self.by_text.entry(id.text()).or_insert(next);
        // The address is alive as long as `id` is borrowed: no other id can
        // take it while this index exists.
        self.by_address.insert(id.address(), n);
        let new = n == next;
        if new {
            self.ids.push(id);
        }
        (n, new)
    }

    /// The id of a number (the first one seen with its text).
    pub fn id(&self, n: usize) -> &'a T {
        self.ids[n]
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceId;

    #[test]
    fn equal_texts_share_a_number_whether_or_not_they_share_an_address() {
        let a = DeviceId::parse("meter-1").unwrap();
        let a_clone = a.clone();
        let a_copy = DeviceId::parse("meter-1").unwrap();
        let b = DeviceId::parse("sensor-2").unwrap();
        assert_eq!(a.address(), a_clone.address());
        assert_ne!(a.address(), a_copy.address());
        let mut index = IdIndex::default();
        assert_eq!(index.number(&a), (0, true));
        assert_eq!(index.number(&b), (1, true));
        assert_eq!(index.number(&a_clone), (0, false));
        assert_eq!(index.number(&a_copy), (0, false));
        assert_eq!(index.number(&b), (1, false));
        assert_eq!(index.len(), 2);
        assert_eq!(index.id(1).as_str(), "sensor-2");
    }
}
