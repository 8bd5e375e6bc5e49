//! What a stored body holds of its counters, decoded without its tallies.

use super::stored::{kept_marks, StoredCounter, StoredMark, StoredTariffs, StoredVolumes};
use domain::aggregate::counter::{Counter, Counters};
use domain::aggregate::rollup::chain_after;
use domain::aggregate::rollup_counters::{CounterSpans, RollupCounters};
use domain::model::{Span, Timestamp};

/// What a stored body holds of its counters (`rollup_body::counters`): the
/// stored shape's counters and kept marks (`Stored::b`, `s`, `k` `x` and `t`),
/// and how many of its readings carried each counter's quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCounters {
    pub b: Option<StoredCounter>,
    pub s: Option<StoredCounter>,
    pub k: (Option<StoredMark>, Option<StoredMark>),
    pub x: Option<StoredVolumes>,
    pub t: Option<StoredTariffs>,
    pub read: Counters<u64>,
}

impl StoredCounters {
    /// The counters of the rollup of `span` starting at `start` they were
    /// read from.
    pub fn decode(self, span: Span, start: Timestamp) -> Result<RollupCounters, String> {
        let kept = kept_marks(
            self.k,
            self.x.as_ref().map_or((None, None), |x| x.k),
            self.t.as_ref().map_or([None; 4], |t| t.k),
        );
        let (gas, water) = self.x.map_or((None, None), |x| (x.g, x.w));
        let [bought_t1, bought_t2, sold_t1, sold_t2] =
            self.t.map_or([None, None, None, None], |t| t.c);
        let stored = Counters {
            bought: self.b,
            sold: self.s,
            gas,
            water,
            bought_t1,
            bought_t2,
            sold_t1,
            sold_t2,
        };
        let mut counters = CounterSpans::new();
        let mut covers = true;
        for c in Counter::ALL {
            let stored = stored.get(c).clone();
            covers &= (*self.read.get(c) > 0) == stored.is_some();
            if let Some(s) = stored {
                counters.push((c, s.decode()?));
            }
        }
        Ok(RollupCounters {
            span,
            start,
            chain: chain_after(counters.iter().map(|(c, span)| (*c, span)), kept)?,
            counters,
            covers,
        })
    }
}
