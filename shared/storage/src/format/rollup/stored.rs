//! A rollup as both engines store it: the shape, written from a `Rollup`
//! and read back into one.

use domain::aggregate::counter::Mark;
use domain::aggregate::counter::{Counter, Counters, Growth};
use domain::aggregate::rollup::{chain_after, mark, present, time, CounterSpan, Rollup, Tally};
use domain::aggregate::stats_map::QuantityStats;
use domain::aggregate::FieldStats;
use domain::model::{Quantity, RoomId, Span, Timestamp};
use std::collections::BTreeMap;

/// A rollup as both engines store it (postcard bytes on SQLite, an item's
/// attributes on DynamoDB): short names, quantities and rooms by name, times
/// in epoch milliseconds. `v` is the shape's version: 2 since each counter
/// is followed on its own (`StoredV1`, the shape before, is still read).
/// The names are `S`: owned to store, or borrowed from the bytes read
/// (`Stored<&str>`), so that reading a year of daily rollups allocates no
/// name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stored<S = String> {
    pub v: u8,
    /// Readings.
    pub n: u64,
    /// (quantity, count, min, max, sum) per quantity.
    pub f: Vec<StoredField<S>>,
    /// Per room: its name and its tally, or `None` when that is the whole
    /// span's (a room sensor's usual case).
    pub r: Vec<StoredRoom<S>>,
    /// What the span's readings of the bought counter add.
    pub b: Option<StoredCounter>,
    /// The same for the sold counter.
    pub s: Option<StoredCounter>,
    /// The mark (time, reference) kept through the span by a counter it has
    /// no reading of: bought, sold.
    pub k: (Option<StoredMark>, Option<StoredMark>),
    /// Gas and water, as `b`, `s` and `k` keep the electricity counters;
    /// `None` where the span has neither (an electricity meter's, a
    /// sensor's: the shape and its size as before), and in every rollup
    /// stored before gas and water were followed. Read as none there, so
    /// that such a span's gas and water come from its readings
    /// (`Rollup::counters_cover_readings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<StoredVolumes>,
    /// A two-tariff meter's tariff counters, as `x` keeps gas and water:
    /// `None` where the span has none, and in every rollup stored before
    /// tariffs were followed (no reading of one was stored before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<StoredTariffs>,
}

/// A rollup's tariff counters (`Stored::t`), in `Counter::TARIFFS`' order:
/// bought in tariff 1 and 2, sold in tariff 1 and 2.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredTariffs {
    /// What the span's readings of each tariff counter add.
    pub c: [Option<StoredCounter>; 4],
    /// The mark kept through the span by a tariff counter it has no
    /// reading of.
    pub k: [Option<StoredMark>; 4],
}

/// A rollup's gas and water counters (`Stored::x`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredVolumes {
    /// What the span's readings of the gas counter add.
    pub g: Option<StoredCounter>,
    /// The same for the water counter.
    pub w: Option<StoredCounter>,
    /// The mark kept through the span by a counter it has no reading of:
    /// gas, water.
    pub k: (Option<StoredMark>, Option<StoredMark>),
}

pub type StoredField<S = String> = (S, u64, f64, f64, f64);
/// A counter's mark: (time in epoch milliseconds, reference in the counter's unit).
pub type StoredMark = (i64, f64);
pub type StoredRoom<S = String> = (S, Option<(u64, Vec<StoredField<S>>)>);

/// A `CounterSpan`: marks as (time, reference).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredCounter {
    /// The mark entering the span.
    pub e: Option<(i64, f64)>,
    /// The growth into the first reading (amount, resets), from `e`'s time to
    /// `first`: there when `e` is.
    pub g: Option<(f64, u32)>,
    pub first: i64,
    /// Growth and resets between the span's readings.
    pub i: (f64, u32),
    /// The mark leaving the span.
    pub l: (i64, f64),
}

pub const STORED_VERSION: u8 = 2;

fn stored_fields(t: &Tally) -> Vec<StoredField> {
    t.fields
        .iter()
        .map(|(q, f)| (q.name().to_owned(), f.count, f.min, f.max, f.sum))
        .collect()
}

fn stored_mark(m: &Mark) -> (i64, f64) {
    (m.at.millis(), m.reference)
}

fn stored_counter(c: &CounterSpan) -> StoredCounter {
    StoredCounter {
        e: c.entering.as_ref().map(stored_mark),
        g: c.incoming.map(|g| (g.amount, g.resets)),
        first: c.first_at.millis(),
        i: (c.inside_amount, c.inside_resets),
        l: stored_mark(&c.leaving),
    }
}

impl From<&Rollup> for Stored {
    fn from(r: &Rollup) -> Self {
        let kept = |c: Counter| match r.counters.get(c) {
            Some(_) => None,
            None => r.chain.get(c).as_ref().map(stored_mark),
        };
        Stored {
            v: STORED_VERSION,
            n: r.all.count,
            f: stored_fields(&r.all),
            r: r.rooms
                .iter()
                .map(|(room, t)| {
                    let tally = (t != &r.all).then(|| (t.count, stored_fields(t)));
                    (room.as_str().to_owned(), tally)
                })
                .collect(),
            b: r.counters.bought.as_ref().map(stored_counter),
            s: r.counters.sold.as_ref().map(stored_counter),
            k: (kept(Counter::Bought), kept(Counter::Sold)),
            x: Some(StoredVolumes {
                g: r.counters.gas.as_ref().map(stored_counter),
                w: r.counters.water.as_ref().map(stored_counter),
                k: (kept(Counter::Gas), kept(Counter::Water)),
            })
            .filter(|x| x.g.is_some() || x.w.is_some() || x.k != (None, None)),
            t: Some(StoredTariffs {
                c: Counter::TARIFFS.map(|c| r.counters.get(c).as_ref().map(stored_counter)),
                k: Counter::TARIFFS.map(kept),
            })
            .filter(|t| t.c.iter().any(Option::is_some) || t.k.iter().any(Option::is_some)),
        }
    }
}

impl<S> Stored<S> {
    /// The mark kept through the span by each counter it has no reading of.
    pub fn kept(&self) -> Counters<Option<StoredMark>> {
        kept_marks(
            self.k,
            self.x.as_ref().map_or((None, None), |x| x.k),
            self.t.as_ref().map_or([None; 4], |t| t.k),
        )
    }
}

/// Each counter's kept mark, from the electricity counters' pair, the
/// volumes' and the tariffs'.
pub fn kept_marks(
    (bought, sold): (Option<StoredMark>, Option<StoredMark>),
    (gas, water): (Option<StoredMark>, Option<StoredMark>),
    [bought_t1, bought_t2, sold_t1, sold_t2]: [Option<StoredMark>; 4],
) -> Counters<Option<StoredMark>> {
    Counters {
        bought,
        sold,
        gas,
        water,
        bought_t1,
        bought_t2,
        sold_t1,
        sold_t2,
    }
}

/// The tally of all readings and those of each room, as both shapes keep them.
pub(super) fn tallies<S: AsRef<str>>(
    n: u64,
    f: Vec<StoredField<S>>,
    r: Vec<StoredRoom<S>>,
) -> Result<(Tally, BTreeMap<RoomId, Tally>), String> {
    let tally = |count: u64, fields: Vec<StoredField<S>>| -> Result<Tally, String> {
        let mut t = Tally {
            count,
            fields: QuantityStats::new(),
        };
        for (name, count, min, max, sum) in fields {
            let name = name.as_ref();
            let q = Quantity::parse(name).ok_or_else(|| format!("unknown quantity {name:?}"))?;
            t.fields.insert(
                q,
                FieldStats {
                    min,
                    max,
                    sum,
                    count,
                },
            );
        }
        Ok(t)
    };
    let all = tally(n, f)?;
    let mut rooms = BTreeMap::new();
    for (name, t) in r {
        let name = name.as_ref();
        let room = RoomId::parse(name).map_err(|e| format!("room {name:?}: {e}"))?;
        let t = match t {
            Some((count, fields)) => tally(count, fields)?,
            None => all.clone(),
        };
        rooms.insert(room, t);
    }
    Ok((all, rooms))
}

impl StoredCounter {
    pub fn decode(self) -> Result<CounterSpan, String> {
        let entering = self.e.map(mark).transpose()?;
        let first_at = time(self.first)?;
        let incoming = match (entering, self.g) {
            (Some(from), Some((amount, resets))) => Some(Growth {
                from: from.at,
                to: first_at,
                amount,
                resets,
            }),
            (None, None) => None,
            _ => return Err("a counter's growth into the span without its mark".into()),
        };
        Ok(CounterSpan {
            entering,
            incoming,
            first_at,
            inside_amount: self.i.0,
            inside_resets: self.i.1,
            leaving: mark(self.l)?,
        })
    }
}

impl<S: AsRef<str>> Stored<S> {
    /// The rollup of `span` at `start`; an error names what does not decode.
    pub fn decode(self, span: Span, start: Timestamp) -> Result<Rollup, String> {
        if self.v != STORED_VERSION {
            return Err(format!(
                "rollup version {} read as version {STORED_VERSION}",
                self.v
            ));
        }
        let kept = self.kept();
        let (all, rooms) = tallies(self.n, self.f, self.r)?;
        let (gas, water) = self.x.map_or((None, None), |x| (x.g, x.w));
        let [bought_t1, bought_t2, sold_t1, sold_t2] =
            self.t.map_or([None, None, None, None], |t| t.c);
        let decode = |c: Option<StoredCounter>| c.map(StoredCounter::decode).transpose();
        let counters = Counters {
            bought: decode(self.b)?,
            sold: decode(self.s)?,
            gas: decode(gas)?,
            water: decode(water)?,
            bought_t1: decode(bought_t1)?,
            bought_t2: decode(bought_t2)?,
            sold_t1: decode(sold_t1)?,
            sold_t2: decode(sold_t2)?,
        };
        let chain = chain_after(present(&counters), kept)?;
        Ok(Rollup {
            span,
            start,
            all,
            rooms,
            counters,
            chain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{from_postcard, to_postcard};
    use super::*;
    use domain::aggregate::counter::Chain;
    use domain::aggregate::rollup::{hours, spans};
    use domain::fixtures::{history, readings};
    use proptest::prelude::*;

    proptest! {
        /// The stored shape gives back the rollup, bit for bit, as JSON
        /// (DynamoDB's attributes) and as postcard (the embedded store's
        /// bodies of version 2).
        #[test]
        fn a_stored_rollup_comes_back_whole(h in history()) {
            let all = readings(&h);
            for r in hours(Chain::default(), &all).into_iter().chain(spans(Span::Day, Chain::default(), all.iter())) {
                let text = serde_json::to_string(&Stored::from(&r)).unwrap();
                let back: Stored = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back.decode(r.span, r.start).unwrap(), r.clone());
                let bytes = to_postcard(&Stored::from(&r)).unwrap();
                let back = from_postcard(&bytes).unwrap();
                prop_assert_eq!(back.decode(r.span, r.start).unwrap(), r);
            }
        }
    }
}
