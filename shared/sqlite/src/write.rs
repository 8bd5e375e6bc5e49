//! The write path: each reading goes to its device's day, as hot rows while
//! the day is open, or into the day's block once it is closed or sealed
//! (`blocks`), so that the two never hold the same day.

use super::names::Names;
use super::rows::{self, HotRows};
use super::{blocks, day_merge};
use domain::aggregate::rollup::Rollup;
use domain::block;
use domain::model::{IdIndex, Reading, Span};
use rusqlite::Connection;
use std::collections::BTreeMap;
use storage::FastMap;
use storage::StoreError;

/// The single writer: its connection, its cache of ids, and what it
/// remembers between transactions.
pub struct Writer {
    pub conn: Connection,
    pub names: Names,
    cache: Cache,
}

/// What the writer remembers between transactions (and forgets after one
/// that rolled back): each device's newest time, which tells a new key (the
/// common case: one insert per family) from a replaced one (its old rows are
/// deleted first, in every family, so the last write of a key wins whole);
/// its newest day rollup as stored (what an append continues); where
/// the sealed day it last wrote ends, so that the next batch of the same day
/// (history imported in order) is appended as a segment, not merged; and
/// the registry records it last wrote (`registry::Records`).
#[derive(Default)]
pub struct Cache {
    pub newest: FastMap<i64, i64>,
    pub spans: FastMap<(i64, Span), Rollup>,
    pub day_ends: FastMap<i64, blocks::DayEnd>,
    pub registry: super::registry::Records,
}

/// Most devices whose last sealed day's end the writer keeps.
const KEPT_DAY_ENDS: usize = 4096;

/// A device's readings in a batch, in time order, and whether every one is
/// newer than its readings before the batch (then its rollups just continue).
pub struct Touched<'a> {
    pub readings: Vec<&'a Reading>,
    pub appended: bool,
}

impl Writer {
    pub fn new(conn: Connection) -> Self {
        Self {
            conn,
            names: Names::default(),
            cache: Cache::default(),
        }
    }

    /// Forgets a device's sealed day (another path rewrote its blocks).
    pub fn forget_day(&mut self, device: i64) {
        self.cache.day_ends.remove(&device);
    }

    /// Forgets what a rolled-back transaction may have cached.
    pub fn forget(&mut self) {
        self.names.clear();
        self.cache = Cache::default();
    }

    /// The connection, the ids and the cache, borrowed apart.
    pub fn parts(&mut self) -> (&mut Connection, &mut Names, &mut Cache) {
        (&mut self.conn, &mut self.names, &mut self.cache)
    }
}

/// Writes readings (distinct keys) in the caller's transaction, each to
/// its day: open days as rows (a replaced key's old rows deleted first),
/// closed or sealed days into their blocks. `now_ms` tells which days are
/// closed.
pub fn put_readings<'a>(
    tx: &Connection,
    names: &mut Names,
    cache: &mut Cache,
    readings: impl Iterator<Item = &'a Reading>,
    now_ms: i64,
) -> Result<FastMap<i64, Touched<'a>>, StoreError> {
    let newest = &mut cache.newest;
    let mut hot = HotRows::new();
    // Borrowed: a batch appended to a sealed day is encoded from the
    // request's readings (copying each was a twentieth of such a batch).
    let mut sealed: BTreeMap<(i64, i64), Vec<&'a Reading>> = BTreeMap::new();
    let mut day_is_sealed: FastMap<(i64, i64), bool> = FastMap::default();
    let mut touched: FastMap<i64, Touched<'a>> = FastMap::default();
    // Each device's id, looked up once a batch (by address, see `IdIndex`).
    let mut devices = IdIndex::default();
    let mut device_ids = Vec::new();
    for r in readings {
        let (n, new) = devices.number(&r.device_id);
        if new {
            device_ids.push(names.device(tx, &r.device_id)?);
        }
        let device = device_ids[n];
        let ts = r.timestamp.millis();
        let stored_newest = match newest.get(&device) {
            Some(t) => *t,
            None => newest_time(tx, device, &r.device_id)?.unwrap_or(i64::MIN),
        };
        let t = touched.entry(device).or_insert_with(|| Touched {
            readings: Vec::new(),
            appended: true,
        });
        t.readings.push(r);
        newest.insert(device, stored_newest.max(ts));
        let day = blocks::day_of(ts);
        let to_block = match day_is_sealed.get(&(device, day)) {
            Some(known) => *known,
            None => {
                let known = blocks::closed(day, now_ms) || blocks::exists(tx, device, day)?;
                day_is_sealed.insert((device, day), known);
                known
            }
        };
        if ts <= stored_newest {
            t.appended = false;
        }
        if to_block {
            sealed.entry((device, day)).or_default().push(r);
            continue;
        }
        if ts <= stored_newest {
            rows::delete_at(tx, device, ts)?;
        }
        let room = r.room().map(|room| names.room(tx, room)).transpose()?;
        hot.push(device, room, r);
    }
    hot.insert(tx)?;
    for ((device, day), new) in sealed {
        // A day this writer stored last, and readings all after its end:
        // the next segment. Anything else merges the day (and its rows).
        let end = match cache.day_ends.remove(&device) {
            Some(end) if end.day == day => Some(end),
            _ => None,
        };
        let new = block::normalize(new);
        let stored = match end {
            Some(end) if new[0].timestamp.millis() > end.last => {
                Some(blocks::append(tx, device, end, &new)?)
            }
            _ => {
                let device_id = new[0].device_id.clone();
                day_merge::write_day(
                    tx,
                    (device, &device_id),
                    day,
                    new.into_iter().cloned().collect(),
                )?
            }
        };
        if let Some(end) = stored {
            if cache.day_ends.len() >= KEPT_DAY_ENDS {
                cache.day_ends.clear();
            }
            cache.day_ends.insert(device, end);
        }
    }
    for t in touched.values_mut() {
        t.readings.sort_unstable_by_key(|r| r.timestamp);
    }
    Ok(touched)
}

/// The newest time a device has a reading at, hot or sealed.
pub fn newest_time(
    conn: &Connection,
    device: i64,
    device_id: &domain::model::DeviceId,
) -> Result<Option<i64>, StoreError> {
    let hot = rows::newest_time(conn, device)?;
    let sealed = blocks::time_span(conn, device, device_id)?.map(|(_, last)| last);
    Ok(hot.max(sealed))
}
