//! What was computed from a value (its size, its text), remembered by the
//! value's bits for one page: a sensor's values repeat (a walk at its
//! resolution), and computing one from scratch takes a division
//! (`whole_thousandths`) and its digits (docs/BENCHMARKS.md, "Sixth session").

/// 256 slots, each the bits of a value and what was computed from it; a
/// value whose slot another holds is computed again.
pub struct ValueMemo<T> {
    slots: Box<[(u64, T); 256]>,
}

/// No slot is taken: a reading's values are finite, and these bits are a NaN's.
const EMPTY: u64 = u64::MAX;

impl<T: Copy + Default> ValueMemo<T> {
    pub fn new() -> Self {
        Self {
            slots: Box::new([(EMPTY, T::default()); 256]),
        }
    }

    /// What `put` last kept for `v` in its slot.
    pub fn get(&self, v: f64) -> Option<T> {
        let (bits, kept) = self.slots[slot(v)];
        (bits == v.to_bits()).then_some(kept)
    }

    pub fn put(&mut self, v: f64, computed: T) {
        self.slots[slot(v)] = (v.to_bits(), computed);
    }
}

impl<T: Copy + Default> Default for ValueMemo<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Fibonacci hashing: the top byte of the bits times 2^64 / phi.
fn slot(v: f64) -> usize {
    (v.to_bits().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value gets back what was put for it, and nothing for a value not
    /// put or pushed out of its slot by another; -0.0 is not 0.0.
    #[test]
    fn a_value_gets_what_was_put_for_it_and_no_other_s() {
        let mut memo = ValueMemo::<u16>::new();
        assert_eq!(memo.get(21.5), None);
        memo.put(21.5, 5);
        memo.put(0.0, 2);
        assert_eq!(
            (memo.get(21.5), memo.get(0.0), memo.get(-0.0)),
            (Some(5), Some(2), None)
        );
        // Every value shares a slot with some other: the later one holds it.
        let sharer = (1..100_000)
            .map(|i| 21.5 + i as f64 / 1000.0)
            .find(|v| slot(*v) == slot(21.5))
            .unwrap();
        memo.put(sharer, 7);
        assert_eq!((memo.get(sharer), memo.get(21.5)), (Some(7), None));
    }
}
