//! Storage: a small trait over the table, which each engine's crate
//! (`dynamodb`, `sqlite`) implements; the key encoding (`keys`) and the one
//! backoff (`retry`). The use cases above see readings and registry
//! records, never engine types.

pub mod alerts;
pub mod format;
pub mod keys;
pub mod metering;
pub mod retry;
mod upkeep;

use crate::keys::zorder::ZKey;
use crate::keys::Position;
use domain::aggregate::rollup::{Rollup, Tally};
use domain::aggregate::rollup_counters::RollupCounters;
use domain::model::{ClimateBox, DeviceId, Name, Reading, RoomId, Span, TimeRange, Timestamp};
use std::future::Future;

pub use alerts::Alerts;
pub use domain::indexes::Indexes;
pub use domain::registry::{DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomRecord, RoomUpdate};
pub use domain::registry_list::{
    DeviceFilter, DeviceListRequest, DevicePage, RoomFilter, RoomListRequest, RoomPage,
};
pub use domain::retention::Retention;
pub use domain::rollup_upkeep::{Keeping, Marker, RollupSpans, RollupWrites};
pub use upkeep::Upkeep;

/// A late reading's raw item lives at least this long after it is written,
/// whatever its raw window says: time for the rollups function to fold it
/// into its hour's block before TTL may delete it, with days to spare for a
/// replay from the failure queue or a `blocks rebuild` (docs/blocks.md).
pub const LATE_RAW_GRACE_SECONDS: i64 = 7 * 86_400;

/// When a reading's item expires on DynamoDB: the sooner of its retention
/// (the reading is forgotten) and its raw window (`RAW_READING_DAYS`: the
/// item goes, the reading stays in its hour's block). `None`: never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub retention: Option<Retention>,
    pub raw: Option<Retention>,
    /// When the item is written (epoch seconds).
    pub now: i64,
}

impl Expiry {
    /// Items that never expire.
    pub const NEVER: Expiry = Expiry {
        retention: None,
        raw: None,
        now: 0,
    };

    pub fn at(&self, t: Timestamp) -> Option<i64> {
        let kept = self.retention.map(|k| k.expires_at(t));
        let raw = self
            .raw
            .map(|k| k.expires_at(t).max(self.now + LATE_RAW_GRACE_SECONDS));
        match (kept, raw) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Now, as epoch seconds: what `expires_at` is compared with.
pub fn now_epoch_seconds() -> i64 {
    Timestamp::now().millis().div_euclid(1000)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// A Z-order index partition: one room's or one device's climate readings.
#[derive(Debug, Clone, Copy)]
pub enum ZIndex<'a> {
    Room(&'a RoomId),
    Device(&'a DeviceId),
}

/// Keys `from..=to` of a Z-order index, after `after` when set, at most `limit` items read.
#[derive(Debug, Clone, Copy)]
pub struct ZRangeRequest<'a> {
    pub from: &'a ZKey,
    pub to: &'a ZKey,
    pub after: Option<&'a ZKey>,
    pub limit: usize,
}

/// Sealed readings inside a box (`Store::sealed_in_box`), in Z order.
#[derive(Debug, Clone, Default)]
pub struct SealedPage {
    pub items: Vec<(ZKey, Reading)>,
    /// Readings decoded to find them: what the read cost.
    pub decoded: usize,
}

/// What one index read returned, in key order.
#[derive(Debug, Clone, Default)]
pub struct ZPage {
    pub items: Vec<(ZKey, Reading)>,
    /// Items the engine read, including expired ones it then filtered out.
    pub scanned: usize,
    /// The last key read, when more may follow.
    pub last_read: Option<ZKey>,
}

/// One page of a time-range query.
#[derive(Debug, Clone)]
pub struct RangeRequest {
    pub range: TimeRange,
    pub order: Order,
    /// At most this many readings (1..=1000, checked by the caller).
    pub limit: usize,
    /// Start after this key (from a cursor).
    pub after: Option<Position>,
}

#[derive(Debug, Clone, Default)]
pub struct Page {
    pub readings: Vec<Reading>,
    /// Set when more readings may follow.
    pub next: Option<Position>,
}

impl Page {
    /// A page of readings; when the query stopped before the end of its range,
    /// the next page starts after the last reading here.
    pub fn of(readings: Vec<Reading>, more: bool) -> Self {
        let next = if more {
            readings.last().map(|r| Position {
                timestamp: r.timestamp,
                device_id: r.device_id.clone(),
            })
        } else {
            None
        };
        Page { readings, next }
    }
}

/// The part of `range` after `after` for one device's readings, in `order`:
/// positions order by (time, device), so at the position's own time only
/// devices after it (before it, descending) remain.
pub fn after_position(
    range: &TimeRange,
    order: Order,
    after: Option<&Position>,
    device: &DeviceId,
) -> Option<TimeRange> {
    let Some(p) = after else {
        return Some(*range);
    };
    match order {
        Order::Asc => {
            let from = if *device > p.device_id {
                p.timestamp
            } else {
                p.timestamp.saturating_add_millis(1)
            };
            TimeRange::new(from.max(range.from()), range.to()).ok()
        }
        Order::Desc => {
            let to = if *device < p.device_id {
                p.timestamp.saturating_add_millis(1)
            } else {
                p.timestamp
            };
            TimeRange::new(range.from(), to.min(range.to())).ok()
        }
    }
}

/// What a batch write did. Indices refer to the slice given to `write_readings`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Readings that are not stored (after retries). Empty on full success.
    pub unwritten: Vec<usize>,
    /// Items written (duplicate keys in one request are one item).
    pub items_written: usize,
    /// Readings superseded by a later reading with the same key in the same request.
    pub duplicates: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The engine did not answer, throttled past the retry budget, or refused.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// An item in the table does not decode (written by something else?).
    #[error("stored item does not decode: {0}")]
    Corrupt(String),
}

/// The storage operations the service needs; every adapter passes the same contract tests.
/// `Clone` and `'static` so that a background task (the registry refresh) can hold one.
pub trait Store: Alerts + Clone + Send + Sync + 'static {
    /// Writes readings, last one wins for duplicate keys, and reports what is not stored.
    fn write_readings(&self, readings: &[Reading]) -> impl Future<Output = WriteReport> + Send;
    /// The same, for a caller that is done with the readings: an engine that
    /// writes on another thread takes them without a copy.
    fn write_owned_readings(
        &self,
        readings: Vec<Reading>,
    ) -> impl Future<Output = WriteReport> + Send {
        async move { self.write_readings(&readings).await }
    }
    /// Whether `write_readings` also brings the registry up to date (the
    /// embedded store does, in the same transaction). Otherwise a stream
    /// consumer does it, later (DynamoDB).
    fn registry_follows_writes(&self) -> bool {
        false
    }
    /// The optional indexes this store keeps (the embedded store: all, at no
    /// extra cost per reading worth a setting).
    fn indexes(&self) -> Indexes {
        Indexes::ALL
    }
    /// Whether aggregates may be answered from hour and day rollups of the
    /// devices' readings (docs/rollups.md); otherwise they read the readings.
    fn answers_from_rollups(&self) -> bool {
        false
    }
    /// The time range over which every one of `devices` has complete rollups
    /// (`None`: none). The embedded store keeps them in the readings' own
    /// transaction, so always; on DynamoDB the stream function keeps them a
    /// little behind, from the hour it first saw each device
    /// (`rollups rebuild` extends that back).
    fn rollup_coverage(
        &self,
        _devices: &[DeviceId],
    ) -> impl Future<Output = Result<Option<TimeRange>, StoreError>> + Send {
        async { Ok(None) }
    }
    /// `rollup_coverage`, and the first day whose day rollups may lag
    /// behind their hours (the open day of the device that has the
    /// earliest one; `Timestamp::MAX` where day rollups are always whole).
    fn rollup_cover(
        &self,
        devices: &[DeviceId],
    ) -> impl Future<Output = Result<Option<(TimeRange, Timestamp)>, StoreError>> + Send {
        async move {
            Ok(self
                .rollup_coverage(devices)
                .await?
                .map(|r| (r, Timestamp::MAX)))
        }
    }
    /// A device's rollups of a span that lie wholly inside `range`, oldest first.
    fn rollups(
        &self,
        _device: &DeviceId,
        _span: Span,
        _range: &TimeRange,
    ) -> impl Future<Output = Result<Vec<Rollup>, StoreError>> + Send {
        async { Ok(Vec::new()) }
    }
    /// The tallies of `rollups`, with their starts: of the readings that
    /// named `room`, or of all of them (`None`; `None` as a tally where no
    /// reading of the span named the room). What a stats answer folds; an
    /// engine may read them without building whole rollups.
    fn rollup_tallies(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
        room: Option<&RoomId>,
    ) -> impl Future<Output = Result<Vec<(Timestamp, Option<Tally>)>, StoreError>> + Send {
        async move {
            Ok(self
                .rollups(device, span, range)
                .await?
                .into_iter()
                .map(|r| r.into_tally(room))
                .collect())
        }
    }
    /// The counters of `rollups` (`RollupCounters`): what an energy answer
    /// folds; an engine may read them without building whole rollups.
    fn rollup_counters(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> impl Future<Output = Result<Vec<RollupCounters>, StoreError>> + Send {
        async move {
            Ok(self
                .rollups(device, span, range)
                .await?
                .iter()
                .map(RollupCounters::from)
                .collect())
        }
    }
    fn device_readings(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// Climate readings of every device in a room (through the `room-time` index).
    fn room_readings(
        &self,
        room: &RoomId,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// One page of every device's readings in the range, ordered by (time,
    /// device), after `request.after`. (How: the engine's business; DynamoDB
    /// reads its `all-time` shards concurrently and merges them.)
    fn all_readings(
        &self,
        request: &RangeRequest,
    ) -> impl Future<Output = Result<Page, StoreError>> + Send;
    /// One read of a Z-order index, as DynamoDB's Query with `Limit` reads.
    /// An engine that seals spans into blocks indexes its unsealed readings
    /// only; `sealed_in_box` finds the rest.
    fn z_range(
        &self,
        index: ZIndex<'_>,
        request: &ZRangeRequest<'_>,
    ) -> impl Future<Output = Result<ZPage, StoreError>> + Send;
    /// The sealed readings of a room or device inside a box, in Z order
    /// after `after`, at most `limit`: blocks whose header (times, minimum
    /// and maximum) meets the box, decoded. None on an engine without blocks.
    fn sealed_in_box(
        &self,
        _index: ZIndex<'_>,
        _inside: &ClimateBox,
        _after: Option<&ZKey>,
        _limit: usize,
    ) -> impl Future<Output = Result<SealedPage, StoreError>> + Send {
        async { Ok(SealedPage::default()) }
    }
    fn latest_reading(
        &self,
        device: &DeviceId,
    ) -> impl Future<Output = Result<Option<Reading>, StoreError>> + Send;
    /// Every device and room (all pages).
    fn load_registry(&self) -> impl Future<Output = Result<RegistrySnapshot, StoreError>> + Send;
    /// One page of the device list in id order, as its filter admits
    /// (`domain::registry_list`).
    fn device_page(
        &self,
        request: &DeviceListRequest,
    ) -> impl Future<Output = Result<DevicePage, StoreError>> + Send;
    /// One page of the room list in id order.
    fn room_page(
        &self,
        request: &RoomListRequest,
    ) -> impl Future<Output = Result<RoomPage, StoreError>> + Send;
    /// The registered room of each of `devices` that has a record (`None`
    /// inside: registered, in no room): what an ingest asks when the
    /// sandbox does not hold the whole registry. An engine may answer in
    /// one request.
    fn rooms_of(
        &self,
        devices: &[DeviceId],
    ) -> impl Future<Output = Result<Vec<(DeviceId, Option<RoomId>)>, StoreError>> + Send {
        async move {
            let mut found = Vec::with_capacity(devices.len());
            for d in devices {
                if let Some(record) = self.device(d).await? {
                    found.push((record.device_id, record.room));
                }
            }
            Ok(found)
        }
    }
    fn device(
        &self,
        device: &DeviceId,
    ) -> impl Future<Output = Result<Option<DeviceRecord>, StoreError>> + Send;
    fn room(
        &self,
        room: &RoomId,
    ) -> impl Future<Output = Result<Option<RoomRecord>, StoreError>> + Send;
    /// Idempotent and monotonic: never moves `last_seen`/`latest` back, `first_seen` only earlier.
    fn apply_device_update(
        &self,
        update: &DeviceUpdate,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn apply_room_update(
        &self,
        update: &RoomUpdate,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// What a user sets on a device: its name (`None` removes it) and, when given, its room.
    /// Creates the registry item if the device has not reported yet.
    fn set_device_profile(
        &self,
        device: &DeviceId,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// A room's name (`None` removes it); creates the registry item if needed.
    fn set_room_name(
        &self,
        room: &RoomId,
        name: Option<&Name>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Merges pages of disjoint sets of readings (shards, devices) that were each
/// read with `request`: the first `request.limit` of the merge in (time,
/// device) order, with `next` set when more may follow in any of them.
pub fn merge_pages(pages: Vec<Page>, request: &RangeRequest) -> Page {
    let more_in_a_page = pages.iter().any(|p| p.next.is_some());
    let mut readings: Vec<Reading> = pages.into_iter().flat_map(|p| p.readings).collect();
    readings.sort_by(|a, b| {
        let order = (a.timestamp, &a.device_id).cmp(&(b.timestamp, &b.device_id));
        match request.order {
            Order::Asc => order,
            Order::Desc => order.reverse(),
        }
    });
    let more = more_in_a_page || readings.len() > request.limit;
    readings.truncate(request.limit);
    Page::of(readings, more)
}

/// Duplicate keys within one request collapse to the last reading with that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deduped {
    /// Index (into the input) of the reading that wins each distinct key, in first-seen key order.
    pub winners: Vec<usize>,
    /// For each input index, the position in `winners` of its key.
    slot_of: Vec<usize>,
}

pub use domain::model::FastMap;

impl Deduped {
    pub fn new(readings: &[Reading]) -> Self {
        let mut by_key: FastMap<(&DeviceId, Timestamp), usize> =
            FastMap::with_capacity_and_hasher(readings.len(), Default::default());
        let mut winners = Vec::with_capacity(readings.len());
        let mut slot_of = Vec::with_capacity(readings.len());
        for (i, r) in readings.iter().enumerate() {
            let slot = *by_key
                .entry((&r.device_id, r.timestamp))
                .or_insert_with(|| {
                    winners.push(i);
                    winners.len() - 1
                });
            winners[slot] = i;
            slot_of.push(slot);
        }
        Self { winners, slot_of }
    }

    pub fn duplicates(&self) -> usize {
        self.slot_of.len() - self.winners.len()
    }

    /// Turns failed slots into the input indices they stand for (every reading with that key).
    pub fn report(&self, failed_slots: &[usize]) -> WriteReport {
        let mut failed = vec![false; self.winners.len()];
        for &s in failed_slots {
            failed[s] = true;
        }
        let unwritten = (0..self.slot_of.len())
            .filter(|&i| failed[self.slot_of[i]])
            .collect();
        WriteReport {
            unwritten,
            items_written: self.winners.len() - failed.iter().filter(|f| **f).count(),
            duplicates: self.duplicates(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::Measurement;

    fn power(dev: &str, ts: &str, kwh: f64) -> Reading {
        Reading {
            device_id: DeviceId::parse(dev).unwrap(),
            timestamp: Timestamp::parse(ts).unwrap(),
            measurement: Measurement::power(kwh, 0.0, 0.0).unwrap(),
        }
    }

    #[test]
    fn dedup_keeps_the_last_reading_per_key_and_maps_failures_back() {
        let rs = vec![
            power("a", "2026-11-01T00:00:00Z", 1.0),
            power("b", "2026-11-01T00:00:00Z", 2.0),
            power("a", "2026-11-01T09:00:00+09:00", 3.0), // same key as #0
            power("a", "2026-11-01T00:00:01Z", 4.0),
        ];
        let d = Deduped::new(&rs);
        assert_eq!(d.winners, vec![2, 1, 3]);
        assert_eq!(d.duplicates(), 1);
        let report = d.report(&[0]);
        assert_eq!(
            report.unwritten,
            vec![0, 2],
            "both readings with the failed key are unwritten"
        );
        assert_eq!(report.items_written, 2);
        assert_eq!(d.report(&[]).unwritten, Vec::<usize>::new());
    }

    fn t(h: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + h * 3_600_000).unwrap()
    }

    fn r(a: i64, b: i64) -> TimeRange {
        TimeRange::new(t(a), t(b)).unwrap()
    }

    #[test]
    fn a_position_narrows_each_device_s_range() {
        let a = DeviceId::parse("a").unwrap();
        let b = DeviceId::parse("b").unwrap();
        let c = DeviceId::parse("c").unwrap();
        let p = crate::keys::Position {
            timestamp: t(3),
            device_id: b.clone(),
        };
        let ms = |h: i64, d: i64| t(h).saturating_add_millis(d);
        let asc = |d: &DeviceId| after_position(&r(0, 10), Order::Asc, Some(&p), d).unwrap();
        assert_eq!(asc(&a).from(), ms(3, 1));
        assert_eq!(asc(&b).from(), ms(3, 1));
        assert_eq!(asc(&c).from(), t(3));
        let desc = |d: &DeviceId| after_position(&r(0, 10), Order::Desc, Some(&p), d).unwrap();
        assert_eq!(desc(&a).to(), ms(3, 1));
        assert_eq!(desc(&b).to(), t(3));
        assert_eq!(desc(&c).to(), t(3));
        assert_eq!(
            after_position(&r(0, 10), Order::Asc, None, &a),
            Some(r(0, 10))
        );
    }
}
