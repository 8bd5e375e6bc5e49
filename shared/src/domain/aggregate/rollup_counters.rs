//! A rollup's counters alone: what an energy answer folds of a rollup
//! (`EnergyFold::add_counters`) and what the hours of a day are entered
//! with, without its tallies, rooms or names. An engine may read them from
//! a stored body without building the whole rollup (`rollup_body::counters`:
//! a year of a meter's hours in local days decoded every hour whole, a
//! third of that energy answer's time, docs/BENCHMARKS.md).

use super::counter::{Chain, Counter, Counters};
use super::rollup::{
    chain_after, continues, entering, kept_marks, Rollup, StoredCounter, StoredMark, StoredVolumes,
};
use super::CounterSpan;
use crate::model::{Span, Timestamp};

/// A rollup's span, its counters and the chain it leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupCounters {
    pub span: Span,
    pub start: Timestamp,
    /// Per counter, what the span's readings of it add (`Rollup::counters`).
    pub counters: Counters<Option<CounterSpan>>,
    /// The device's counter chain after the span (`Rollup::chain`).
    pub chain: Chain,
    /// Whether the counters stand for every reading of a counter the span
    /// counted (`Rollup::counters_cover_readings`).
    pub covers: bool,
}

impl RollupCounters {
    pub fn end(&self) -> Timestamp {
        self.span.end_of(self.start)
    }

    /// The chain the span was entered with.
    pub fn entering(&self) -> Chain {
        entering(&self.counters, &self.chain)
    }

    /// Whether a fold that stands at `chain` may take these counters in
    /// place of the span's readings.
    pub fn continues(&self, chain: &Chain) -> bool {
        continues(self.covers, &self.counters, chain)
    }
}

impl From<&Rollup> for RollupCounters {
    fn from(r: &Rollup) -> Self {
        Self {
            span: r.span,
            start: r.start,
            counters: r.counters,
            chain: r.chain,
            covers: r.counters_cover_readings(),
        }
    }
}

/// What a stored body holds of its counters (`rollup_body::counters`): the
/// stored shape's counters and kept marks (`Stored::b`, `s`, `k` and `x`),
/// and how many of its readings carried each counter's quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCounters {
    pub b: Option<StoredCounter>,
    pub s: Option<StoredCounter>,
    pub k: (Option<StoredMark>, Option<StoredMark>),
    pub x: Option<StoredVolumes>,
    pub read: Counters<u64>,
}

impl StoredCounters {
    /// The counters of the rollup of `span` starting at `start` they were
    /// read from.
    pub fn decode(self, span: Span, start: Timestamp) -> Result<RollupCounters, String> {
        let kept = kept_marks(self.k, self.x.as_ref().map_or((None, None), |x| x.k));
        let (gas, water) = self.x.map_or((None, None), |x| (x.g, x.w));
        let counters = Counters {
            bought: self.b.map(StoredCounter::decode).transpose()?,
            sold: self.s.map(StoredCounter::decode).transpose()?,
            gas: gas.map(StoredCounter::decode).transpose()?,
            water: water.map(StoredCounter::decode).transpose()?,
        };
        let covers = Counter::ALL
            .into_iter()
            .all(|c| (*self.read.get(c) > 0) == counters.get(c).is_some());
        Ok(RollupCounters {
            span,
            start,
            chain: chain_after(&counters, kept)?,
            counters,
            covers,
        })
    }
}
