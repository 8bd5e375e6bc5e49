//! Rollup version 1, which followed the two electricity counters together.
//! Read, never written.

use super::stored::{tallies, StoredField, StoredRoom};
use domain::aggregate::counter::{Chain, Counter, Counters, Growth, Mark};
use domain::aggregate::rollup::{time, CounterSpan, Rollup};
use domain::model::{Quantity, Span, Timestamp};

/// The stored shape of rollup version 1, which followed the two counters
/// together, from the readings that carried both (a meter that reported
/// one counter had no energy). Read, never written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredV1<S = String> {
    pub v: u8,
    pub n: u64,
    pub f: Vec<StoredField<S>>,
    pub r: Vec<StoredRoom<S>>,
    pub c: Option<StoredCountersV1>,
    /// The chain after a span without counter readings (time, kWh bought,
    /// kWh sold).
    pub ch: Option<(i64, f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredCountersV1 {
    pub entering: Option<(i64, f64, f64)>,
    /// from, to, bought, sold, resets.
    pub incoming: Option<(i64, i64, f64, f64, u32)>,
    pub first: i64,
    pub inside: (f64, f64, u32),
    pub leaving: (i64, f64, f64),
}

impl<S: AsRef<str>> StoredV1<S> {
    /// The rollup this version-1 shape stands for. Its counters are kept
    /// only when every counter reading it counted carried both (as many of
    /// one as of the other: the only readings version 1 followed), and are
    /// then exactly what this build computes; otherwise they are left out,
    /// so that `counters_cover_readings` is false and energy is read from
    /// the span's readings. Its resets were counted together: they are
    /// given to the bought counter (answers add the two).
    pub fn decode(self, span: Span, start: Timestamp) -> Result<Rollup, String> {
        if self.v != 1 {
            return Err(format!("rollup version {} read as version 1", self.v));
        }
        let (all, rooms) = tallies(self.n, self.f, self.r)?;
        let count = |q: Quantity| all.fields.get(&q).map_or(0, |f| f.count);
        let both = |(at, bought, sold): (i64, f64, f64)| -> Result<Chain, String> {
            let at = time(at)?;
            Ok(Counters {
                bought: Some(Mark {
                    at,
                    reference: bought,
                }),
                sold: Some(Mark {
                    at,
                    reference: sold,
                }),
                ..Default::default()
            })
        };
        // Version 1 kept no count of the readings it followed. Equal counts
        // of the two counters is what a meter that always sent both leaves;
        // a span that mixed readings of one counter alone with as many of the
        // other alone beside readings of both would pass too, and its energy
        // be version 1's (it was, before this version, too).
        let followed = count(Quantity::EnergyBought) == count(Quantity::EnergySold);
        let (counters, chain) = match self.c {
            Some(c) if followed => {
                let entering = c.entering.map(both).transpose()?;
                let leaving = both(c.leaving)?;
                let first_at = time(c.first)?;
                let incoming = c
                    .incoming
                    .map(|(from, to, b, s, resets)| -> Result<_, String> {
                        Ok((time(from)?, time(to)?, b, s, resets))
                    })
                    .transpose()?;
                let side =
                    |which: Counter, kwh: f64, resets: u32, incoming_resets: u32| CounterSpan {
                        entering: entering.and_then(|e| *e.get(which)),
                        incoming: incoming.map(|(from, to, b, s, _)| Growth {
                            from,
                            to,
                            amount: if which == Counter::Bought { b } else { s },
                            resets: incoming_resets,
                        }),
                        first_at,
                        inside_amount: kwh,
                        inside_resets: resets,
                        leaving: leaving.get(which).expect("both marks"),
                    };
                let incoming_resets = incoming.map_or(0, |i| i.4);
                let counters = Counters {
                    bought: Some(side(
                        Counter::Bought,
                        c.inside.0,
                        c.inside.2,
                        incoming_resets,
                    )),
                    sold: Some(side(Counter::Sold, c.inside.1, 0, 0)),
                    ..Default::default()
                };
                (counters, leaving)
            }
            // Left out: the chain is not known either.
            Some(_) => (Counters::default(), Chain::default()),
            None => (
                Counters::default(),
                self.ch.map(both).transpose()?.unwrap_or_default(),
            ),
        };
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
