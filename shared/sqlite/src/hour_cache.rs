//! The hour rollups computed from sealed days, kept between reads. The
//! embedded store stores no hour rollups (docs/rollups.md): a day in a zone
//! folds its 24 computed hours, a year of them 8,760, and a dashboard or a
//! Grafana panel asks for the same days again at every refresh.
//!
//! A day's hours are kept as their stored bodies (`rollup_body`, a few
//! dozen bytes an hour, with the size DynamoDB's item would have) under a
//! fingerprint of what they were computed from: the day's block and
//! segments, byte for byte, and the counter chain the day entered with. A
//! day whose bytes or chain changed (a late reading sealed in, a rebuild, a
//! restore, another process's write to the file) has another fingerprint
//! and is computed again, so nothing has to tell the cache of a write.
//! Bounded by bytes: when a day would pass the bound, the cache starts over.

use domain::aggregate::counter::{Chain, Counter};
use domain::aggregate::rollup::Tally;
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::{RoomId, Span};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// One computed hour, as it would be stored, and its tallies and counters
/// decoded: stats and energy in a zone fold a year of hours a read, and
/// decoding them from the bodies was half and two thirds of their
/// instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedHour {
    pub start: i64,
    pub body: Vec<u8>,
    /// `billing::stored_size` of the hour: what a read of it meters.
    pub size: usize,
    /// The tally of all its readings.
    pub tally: Tally,
    /// The tally of each room its readings named; `None` where it is
    /// `tally` (a room sensor's always is), so boxed: most are.
    pub rooms: Vec<(RoomId, Option<Box<Tally>>)>,
    /// Its counters decoded, where it has a counter or a mark (a meter's
    /// hours): what an energy answer folds. `None` for the rest, whose
    /// counters an energy answer reads from the body.
    pub counters: Option<Box<RollupCounters>>,
}

impl CachedHour {
    /// What `rollup_body::tally(body, room)` reads: the tally of the
    /// readings that named `room`, or of all of them; `None` where no
    /// reading named the room.
    pub fn tally_of(&self, room: Option<&RoomId>) -> Option<Tally> {
        let Some(room) = room else {
            return Some(self.tally.clone());
        };
        let (_, own) = self.rooms.iter().find(|(r, _)| r == room)?;
        Some(own.as_deref().unwrap_or(&self.tally).clone())
    }

    /// The bytes it keeps, itself and what it points to.
    fn bytes(&self) -> usize {
        let tally = |t: &Tally| t.fields.heap_bytes();
        let rooms: usize = self
            .rooms
            .iter()
            .map(|(r, t)| {
                std::mem::size_of::<(RoomId, Option<Box<Tally>>)>()
                    + r.as_str().len()
                    + t.as_deref()
                        .map_or(0, |t| std::mem::size_of::<Tally>() + tally(t))
            })
            .sum();
        let counters = self.counters.as_ref().map_or(0, |c| {
            std::mem::size_of::<RollupCounters>() + c.heap_bytes()
        });
        std::mem::size_of::<Self>() + self.body.len() + tally(&self.tally) + rooms + counters
    }
}

/// The bytes a cache keeps by default. A year of a household's four
/// devices' hours takes about 14 MB as counted here (a room sensor's day
/// about 6 KB, a meter's 20 KB: hour bodies of 40 and 84 bytes, their
/// tallies, and a meter's counters,
/// `a_kept_day_of_a_sensor_and_of_a_meter_takes_what_the_docs_say`): five
/// such years fit (they came to 66 MB once a counter's chain had room for
/// gas and water, and to 70 MB once it had room for the tariffs).
pub const DEFAULT_CAPACITY: usize = 80 << 20;

/// What one kept day costs besides its hours: its key, fingerprint and
/// the list's place.
const DAY_OVERHEAD: usize = 64;

pub struct HourCache {
    capacity: usize,
    days: Mutex<Days>,
}

/// A kept day: the fingerprint of what its hours were computed from, and
/// the hours.
type KeptDay = (u64, Arc<[CachedHour]>);

#[derive(Default)]
struct Days {
    /// By device number, span and day number: a day's hours under
    /// `Span::Hour`, a block of several days' days under `Span::Day` and
    /// the block's first day.
    by_key: HashMap<(i64, Span, i64), KeptDay>,
    bytes: usize,
}

impl HourCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            days: Mutex::new(Days::default()),
        }
    }

    /// The hours of a device's day (`device` and `day` numbers; `span`
    /// `Hour`), or the days of its block of several days that begins on
    /// `day` (`span` `Day`), when they were kept from the same bytes and
    /// chain (`fingerprint`).
    pub fn get(
        &self,
        device: i64,
        span: Span,
        day: i64,
        fingerprint: u64,
    ) -> Option<Arc<[CachedHour]>> {
        let days = self.days.lock().unwrap_or_else(|p| p.into_inner());
        match days.by_key.get(&(device, span, day)) {
            Some((kept, hours)) if *kept == fingerprint => Some(hours.clone()),
            _ => None,
        }
    }

    /// Keeps a day's hours (or a block's days), computed from what
    /// `fingerprint` names.
    pub fn put(
        &self,
        device: i64,
        span: Span,
        day: i64,
        fingerprint: u64,
        hours: Arc<[CachedHour]>,
    ) {
        let cost = day_bytes(&hours);
        if cost > self.capacity {
            return;
        }
        let mut days = self.days.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, old)) = days.by_key.remove(&(device, span, day)) {
            days.bytes -= day_bytes(&old);
        }
        if days.bytes + cost > self.capacity {
            *days = Days::default();
        }
        days.bytes += cost;
        days.by_key
            .insert((device, span, day), (fingerprint, hours));
    }

    /// The bytes kept.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.days.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

fn day_bytes(hours: &[CachedHour]) -> usize {
    DAY_OVERHEAD + hours.iter().map(CachedHour::bytes).sum::<usize>()
}

/// The fingerprint of a day's hours: its rows' bodies, in order, and the
/// chain it entered with. foldhash's quality hasher, not SipHash: the
/// bytes are the store's own (nothing to resist), and a zone's year of
/// days hashes a year of blocks on every read (SipHash was a twentieth of
/// its instructions).
pub fn fingerprint<'a>(bodies: impl IntoIterator<Item = &'a [u8]>, entering: &Chain) -> u64 {
    use std::hash::BuildHasher;
    let mut h = foldhash::quality::FixedState::with_seed(0x1d_ca7e).build_hasher();
    for body in bodies {
        body.hash(&mut h);
    }
    for c in Counter::ALL {
        match entering.get(c) {
            None => 0u8.hash(&mut h),
            Some(mark) => {
                1u8.hash(&mut h);
                mark.at.millis().hash(&mut h);
                mark.reference.to_bits().hash(&mut h);
            }
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::aggregate::counter::Mark;
    use domain::model::Timestamp;

    fn hours(n: usize, body: usize) -> Arc<[CachedHour]> {
        (0..n)
            .map(|i| CachedHour {
                start: i as i64,
                body: vec![i as u8; body],
                size: body,
                tally: Tally::default(),
                rooms: Vec::new(),
                counters: None,
            })
            .collect()
    }

    #[test]
    fn a_day_is_found_by_its_fingerprint_only() {
        let cache = HourCache::new(DEFAULT_CAPACITY);
        cache.put(1, Span::Hour, 20_000, 7, hours(24, 30));
        assert_eq!(cache.get(1, Span::Hour, 20_000, 7).unwrap().len(), 24);
        assert!(
            cache.get(1, Span::Hour, 20_000, 8).is_none(),
            "another fingerprint"
        );
        assert!(cache.get(1, Span::Hour, 20_001, 7).is_none(), "another day");
        assert!(
            cache.get(2, Span::Hour, 20_000, 7).is_none(),
            "another device"
        );
        assert!(
            cache.get(1, Span::Day, 20_000, 7).is_none(),
            "a block's days, not the day's hours"
        );
        // Kept again from other bytes: the new hours replace the old.
        cache.put(1, Span::Hour, 20_000, 8, hours(3, 30));
        assert!(cache.get(1, Span::Hour, 20_000, 7).is_none());
        assert_eq!(cache.get(1, Span::Hour, 20_000, 8).unwrap().len(), 3);
        assert_eq!(cache.bytes(), day_bytes(&hours(3, 30)));
    }

    #[test]
    fn the_cache_stays_within_its_bytes() {
        let one = day_bytes(&hours(24, 30));
        let cache = HourCache::new(one * 10);
        for day in 0..25 {
            cache.put(1, Span::Hour, day, 0, hours(24, 30));
            assert!(
                cache.bytes() <= one * 10,
                "{} after day {day}",
                cache.bytes()
            );
            assert!(
                cache.get(1, Span::Hour, day, 0).is_some(),
                "the day just kept"
            );
        }
        // A day larger than the whole cache is not kept.
        let small = HourCache::new(100);
        small.put(1, Span::Hour, 1, 0, hours(24, 30));
        assert!(small.get(1, Span::Hour, 1, 0).is_none());
        assert_eq!(small.bytes(), 0);
    }

    #[test]
    fn the_fingerprint_follows_every_byte_and_the_chain() {
        let chain = Chain::default();
        let base = fingerprint([&b"block"[..], &b"segment"[..]], &chain);
        assert_eq!(base, fingerprint([&b"block"[..], &b"segment"[..]], &chain));
        assert_ne!(base, fingerprint([&b"block"[..], &b"segmenT"[..]], &chain));
        // Where one body ends and the next begins counts too.
        assert_ne!(base, fingerprint([&b"blocks"[..], &b"egment"[..]], &chain));
        let mut marked = chain;
        marked.bought = Some(Mark {
            at: Timestamp::from_millis(1).unwrap(),
            reference: 10.0,
        });
        assert_ne!(base, fingerprint([&b"block"[..], &b"segment"[..]], &marked));
    }
}
