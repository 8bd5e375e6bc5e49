//! A rollup's counters alone: what an energy answer folds of a rollup
//! (`EnergyFold::add_counters`) and what the hours of a day are entered
//! with, without its tallies, rooms or names. An engine may read them from
//! a stored body without building the whole rollup (`rollup_body::counters`:
//! a year of a meter's hours in local days decoded every hour whole, a
//! third of that energy answer's time, docs/BENCHMARKS.md).

use super::counter::{Chain, Counter};
use super::rollup::{continues, entering, Rollup};
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
