//! Stats per field, kept as a short sorted list, its first two entries
//! inline: a tally's per quantity (`rollup::Tally::fields`) and a bucket's
//! per name (`BucketStats::fields`). A device reports a few quantities (a
//! room sensor two), and a zone's year of days decodes and folds 8,784
//! hour tallies a request: a `BTreeMap` was an allocation, a node's inserts
//! and a free for each (docs/BENCHMARKS.md).

use super::FieldStats;
use crate::model::Quantity;
use smallvec::SmallVec;
use std::borrow::Borrow;

/// A tally's stats per quantity, in catalogue order.
pub type QuantityStats = StatsMap<Quantity>;

/// Stats per key, in the keys' order, as a `BTreeMap` iterates them.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsMap<K>(SmallVec<[(K, FieldStats); 2]>);

impl<K> Default for StatsMap<K> {
    fn default() -> Self {
        Self(SmallVec::new())
    }
}

impl<K: Ord + Copy> StatsMap<K> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Where `q` is, or where it would go.
    fn position<Q: Ord + ?Sized>(&self, q: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        // The newest key last: a tally is mostly built in order.
        match self.0.last() {
            None => Err(0),
            Some((last, _)) if last.borrow() < q => Err(self.0.len()),
            _ => self.0.binary_search_by(|(k, _)| k.borrow().cmp(q)),
        }
    }

    pub fn get<Q: Ord + ?Sized>(&self, q: &Q) -> Option<&FieldStats>
    where
        K: Borrow<Q>,
    {
        self.position(q).ok().map(|i| &self.0[i].1)
    }

    /// Sets `q`'s stats; the ones it replaces.
    pub fn insert(&mut self, q: K, stats: FieldStats) -> Option<FieldStats> {
        match self.position(&q) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, stats)),
            Err(i) => {
                self.0.insert(i, (q, stats));
                None
            }
        }
    }

    /// `q`'s stats, made by `new` where it has none yet, and whether it
    /// had them.
    pub fn get_or_insert_with(
        &mut self,
        q: K,
        new: impl FnOnce() -> FieldStats,
    ) -> (&mut FieldStats, bool) {
        let (i, had) = match self.position(&q) {
            Ok(i) => (i, true),
            Err(i) => {
                self.0.insert(i, (q, new()));
                (i, false)
            }
        };
        (&mut self.0[i].1, had)
    }

    /// Changes `q`'s stats with `change`, or sets them to `new()` where it
    /// has none.
    pub fn update(
        &mut self,
        q: K,
        change: impl FnOnce(&mut FieldStats),
        new: impl FnOnce() -> FieldStats,
    ) {
        if let (stats, true) = self.get_or_insert_with(q, new) {
            change(stats);
        }
    }

    /// The bytes held outside the value itself (more quantities than fit
    /// inline).
    pub fn heap_bytes(&self) -> usize {
        match self.0.spilled() {
            true => self.0.capacity() * std::mem::size_of::<(K, FieldStats)>(),
            false => 0,
        }
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&K, &FieldStats)> + Clone {
        self.0.iter().map(|(q, f)| (q, f))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(q, _)| q)
    }
}

impl<'a, K> IntoIterator for &'a StatsMap<K> {
    type Item = (&'a K, &'a FieldStats);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (K, FieldStats)>,
        fn(&'a (K, FieldStats)) -> (&'a K, &'a FieldStats),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(q, f)| (q, f))
    }
}

impl<K: Ord + Copy + Borrow<Q>, Q: Ord + ?Sized> std::ops::Index<&Q> for StatsMap<K> {
    type Output = FieldStats;

    fn index(&self, q: &Q) -> &FieldStats {
        self.get(q).expect("a key the map has")
    }
}

impl<K: Ord + Copy> FromIterator<(K, FieldStats)> for StatsMap<K> {
    fn from_iter<I: IntoIterator<Item = (K, FieldStats)>>(items: I) -> Self {
        let mut out = Self::new();
        for (q, f) in items {
            out.insert(q, f);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn stats(v: f64) -> FieldStats {
        FieldStats::new(v)
    }

    proptest! {
        /// Any sequence of inserts and updates leaves what a `BTreeMap`
        /// would hold, in its order.
        #[test]
        fn acts_as_a_btree_map(ops in proptest::collection::vec(
            (0..Quantity::ALL.len(), -1e3..1e3f64, any::<bool>()), 0..40)
        ) {
            let (mut ours, mut map) = (QuantityStats::new(), BTreeMap::new());
            for (i, v, replace) in ops {
                let q = Quantity::ALL[i];
                if replace {
                    prop_assert_eq!(ours.insert(q, stats(v)), map.insert(q, stats(v)));
                } else {
                    ours.update(q, |f| f.add(v), || stats(v));
                    map.entry(q).and_modify(|f: &mut FieldStats| f.add(v)).or_insert_with(|| stats(v));
                }
                prop_assert_eq!(ours.len(), map.len());
            }
            let listed: Vec<_> = ours.iter().map(|(q, f)| (*q, *f)).collect();
            let expected: Vec<_> = map.iter().map(|(q, f)| (*q, *f)).collect();
            prop_assert_eq!(&listed, &expected);
            for q in Quantity::ALL {
                prop_assert_eq!(ours.get(&q), map.get(&q));
            }
            prop_assert_eq!(listed.into_iter().collect::<QuantityStats>(), ours);
        }
    }
}
