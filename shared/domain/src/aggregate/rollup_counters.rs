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
use smallvec::SmallVec;

/// Each counter a span has readings of, and what they add, in
/// `Counter::ALL`'s order: most spans have one or two, held inline (a
/// year of a meter's hours in local days copies 8,784 of these a request,
/// and four counters' room each cost that answer an eighth more
/// instructions).
pub type CounterSpans = SmallVec<[(Counter, CounterSpan); 2]>;

/// A rollup's span, its counters and the chain it leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupCounters {
    pub span: Span,
    pub start: Timestamp,
    /// What the span's readings of each counter add (`Rollup::counters`),
    /// for the counters it has readings of.
    pub counters: CounterSpans,
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

    /// Each counter the span has readings of, and what they add.
    pub fn spans(&self) -> impl Iterator<Item = (Counter, &CounterSpan)> + Clone {
        self.counters.iter().map(|(c, span)| (*c, span))
    }

    /// The chain the span was entered with.
    pub fn entering(&self) -> Chain {
        entering(self.spans(), &self.chain)
    }

    /// Whether a fold that stands at `chain` may take these counters in
    /// place of the span's readings.
    pub fn continues(&self, chain: &Chain) -> bool {
        continues(self.covers, self.spans(), chain)
    }

    /// The bytes held outside the value itself (more counters than fit
    /// inline: a P1 meter's telegram, electricity both ways and gas).
    pub fn heap_bytes(&self) -> usize {
        match self.counters.spilled() {
            true => self.counters.capacity() * std::mem::size_of::<(Counter, CounterSpan)>(),
            false => 0,
        }
    }
}

impl From<&Rollup> for RollupCounters {
    fn from(r: &Rollup) -> Self {
        Self {
            span: r.span,
            start: r.start,
            counters: r.spans().map(|(c, span)| (c, *span)).collect(),
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
        let stored = Counters {
            bought: self.b,
            sold: self.s,
            gas,
            water,
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
