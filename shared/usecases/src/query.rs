//! Queries: time ranges of a device or a room (one page, with an opaque cursor),
//! latest reading, and registry lookups that fall back to the table on a cache miss.

use crate::registry::RegistryCache;
use domain::aggregate::counter::{nearest, Counters};
use domain::aggregate::rollup::{segments, Segment};
use domain::aggregate::{BucketStats, Bucketing, EnergyBucket, EnergyFold, StatsFold};
use domain::model::{ClimateBox, DeviceId, Quantity, Reading, RoomId, TimeRange, Timestamp};
use storage::keys::zorder::{self, ZKey};
use storage::keys::{self, CursorError, CursorScope, Position};
use storage::{
    DeviceRecord, Indexes, Order, Page, RangeRequest, RoomRecord, Store, StoreError, ZIndex,
    ZRangeRequest,
};

/// A validated range query (from the HTTP parameters).
#[derive(Debug, Clone)]
pub struct ReadingsQuery {
    pub range: TimeRange,
    pub order: Order,
    pub limit: usize,
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadingsPage {
    pub readings: Vec<Reading>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("cursor {0}")]
    Cursor(#[from] CursorError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, Copy)]
pub enum Partition<'a> {
    Device(&'a DeviceId),
    Room(&'a RoomId),
}

/// One page of readings of a device or room.
pub async fn readings<S: Store>(
    store: &S,
    partition: Partition<'_>,
    q: &ReadingsQuery,
) -> Result<ReadingsPage, QueryError> {
    let descending = q.order == Order::Desc;
    let scope = match partition {
        Partition::Device(device) => CursorScope::Device {
            device,
            range: &q.range,
            descending,
        },
        Partition::Room(room) => CursorScope::Room {
            room,
            range: &q.range,
            descending,
        },
    };
    let after = q.cursor.as_deref().map(|c| scope.decode(c)).transpose()?;
    let request = RangeRequest {
        range: q.range,
        order: q.order,
        limit: q.limit,
        after,
    };
    let page = match partition {
        Partition::Device(device) => store.device_readings(device, &request).await?,
        Partition::Room(room) => store.room_readings(room, &request).await?,
    };
    Ok(ReadingsPage {
        next_cursor: page.next.as_ref().map(|p| scope.encode(p)),
        readings: page.readings,
    })
}

/// A device's newest reading.
pub async fn latest<S: Store>(store: &S, device: &DeviceId) -> Result<Option<Reading>, StoreError> {
    store.latest_reading(device).await
}

/// The optional indexes the store keeps: what the search routes and the
/// all-devices feed need.
pub fn indexes<S: Store>(store: &S) -> Indexes {
    store.capabilities().indexes
}

/// A device from the cache, or from the table when the cache has not seen it yet.
pub async fn device<S: Store>(
    store: &S,
    cache: &RegistryCache,
    id: &DeviceId,
) -> Result<Option<DeviceRecord>, StoreError> {
    let record = match cache.current(store).await.devices.get(id) {
        Some(d) => Some(d.clone()),
        None => store.device(id).await?,
    };
    let Some(mut record) = record else {
        return Ok(None);
    };
    // The registry's latest may lag by the registry function's interval
    // (docs/api-behaviour.md): the device's own partition has its newest.
    // Boxed: a deep future, under every route that shows a device.
    if let Some(r) = Box::pin(store.latest_reading(id)).await? {
        if record.last_seen.is_none_or(|seen| r.timestamp >= seen) {
            record.last_seen = Some(r.timestamp);
            record.latest = Some(r);
        }
    }
    Ok(Some(record))
}

/// A room from the cache, or from the table when the cache has not seen it yet.
pub async fn room<S: Store>(
    store: &S,
    cache: &RegistryCache,
    id: &RoomId,
) -> Result<Option<RoomRecord>, StoreError> {
    match cache.current(store).await.rooms.get(id) {
        Some(r) => Ok(Some(r.clone())),
        None => store.room(id).await,
    }
}

/// The latest value of each of `wanted`, each from the newest reading that
/// has it, with its time; in `wanted`'s order, those found.
pub type LatestValues = Vec<(Quantity, f64, Timestamp)>;

/// How many of a partition's newest readings, of the day before its
/// newest, are searched for the quantities its newest reading lacks.
const LATEST_LOOKBACK: usize = 100;

/// A device's or a room's latest value of each of `wanted` (`LatestValues`).
/// Its `newest` reading has them all where its sensors report them at once
/// (most do). Where they report one each (a temperature probe beside a
/// hygrometer) or in parts (a Shelly Pro 3EM's watts and totals, an H&T's
/// temperature and humidity: a message each), the rest come from its
/// newest readings (`LATEST_LOOKBACK`): one read, only for such a partition.
pub async fn latest_values<S: Store>(
    store: &S,
    partition: Partition<'_>,
    newest: Option<&Reading>,
    wanted: &[Quantity],
) -> Result<LatestValues, StoreError> {
    let mut found: Vec<Option<(f64, Timestamp)>> = vec![None; wanted.len()];
    let mut take = |r: &Reading| {
        for (slot, q) in found.iter_mut().zip(wanted) {
            if slot.is_none() {
                *slot = r.get(*q).map(|v| (v, r.timestamp));
            }
        }
        found.iter().all(Option::is_some)
    };
    let Some(newest) = newest else {
        return Ok(Vec::new());
    };
    if !take(newest) {
        let to = newest.timestamp.saturating_add_millis(1);
        let request = RangeRequest {
            range: TimeRange::new(to.saturating_add_millis(-24 * 3_600_000), to)
                .expect("a day before a time is a range"),
            order: Order::Desc,
            limit: LATEST_LOOKBACK,
            after: None,
        };
        for r in &page(store, &partition, &request).await?.readings {
            if take(r) {
                break;
            }
        }
    }
    Ok(wanted
        .iter()
        .zip(found)
        .filter_map(|(q, f)| f.map(|(v, at)| (*q, v, at)))
        .collect())
}

/// A validated aggregate query (from the HTTP parameters).
#[derive(Debug, Clone, Copy)]
pub struct StatsQuery {
    pub range: TimeRange,
    pub bucketing: Bucketing,
}

/// Readings per page while aggregating: memory holds one page and the buckets.
const AGGREGATE_PAGE: usize = 1000;

async fn page<S: Store>(
    store: &S,
    partition: &Partition<'_>,
    request: &RangeRequest,
) -> Result<storage::Page, StoreError> {
    match partition {
        Partition::Device(d) => store.device_readings(d, request).await,
        Partition::Room(r) => store.room_readings(r, request).await,
    }
}

/// Visits every reading of a range, oldest first, one page at a time.
pub(crate) async fn each_reading<S: Store>(
    store: &S,
    partition: &Partition<'_>,
    range: TimeRange,
    mut visit: impl FnMut(&Reading),
) -> Result<(), StoreError> {
    let mut after: Option<Position> = None;
    loop {
        let request = RangeRequest {
            range,
            order: Order::Asc,
            limit: AGGREGATE_PAGE,
            after: after.take(),
        };
        let page = page(store, partition, &request).await?;
        page.readings.iter().for_each(&mut visit);
        match page.next {
            Some(p) => after = Some(p),
            None => return Ok(()),
        }
    }
}

/// An aggregate answer, what it was computed from and how many items it read.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate<B> {
    pub buckets: Vec<B>,
    pub source: Source,
    /// Readings and rollups read.
    pub items_read: usize,
}

/// What an aggregate was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Every reading of the range.
    Raw,
    /// Rollups only.
    Rollups,
    /// Rollups, and the readings of the range's ends that are not whole hours.
    RollupsAndRaw,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Raw => "raw",
            Source::Rollups => "rollups",
            Source::RollupsAndRaw => "rollups+raw",
        }
    }

    fn of(segments: &[Segment]) -> Self {
        let rollups = segments.iter().any(|s| matches!(s, Segment::Rollups(..)));
        let raw = segments.iter().any(|s| matches!(s, Segment::Raw(_)));
        match (rollups, raw) {
            (true, false) => Source::Rollups,
            (true, true) => Source::RollupsAndRaw,
            _ => Source::Raw,
        }
    }
}

/// How to answer an aggregate over `devices`' readings: rollups where the
/// engine has complete ones for all of them (`Store::rollup_coverage`) and
/// the buckets allow (`rollup::segments`), readings elsewhere, in time order.
async fn plan<S: Store>(
    store: &S,
    devices: &[DeviceId],
    q: &StatsQuery,
) -> Result<Vec<Segment>, StoreError> {
    let all_raw = vec![Segment::Raw(q.range)];
    if !store.capabilities().answers_from_rollups {
        return Ok(all_raw);
    }
    let Some((cover, days_until)) = store.rollup_cover(devices).await? else {
        return Ok(all_raw);
    };
    let (from, to) = (
        q.range.from().max(cover.from()),
        q.range.to().min(cover.to()),
    );
    let Ok(middle) = TimeRange::new(from, to) else {
        return Ok(all_raw);
    };
    let raw = |a, b| TimeRange::new(a, b).ok().map(Segment::Raw);
    let mut out: Vec<Segment> = raw(q.range.from(), from).into_iter().collect();
    out.extend(segments(&q.bucketing, middle, days_until));
    out.extend(raw(to, q.range.to()));
    Ok(out)
}

/// min/max/mean/count per bucket and numeric field; empty buckets omitted.
pub async fn stats<S: Store>(
    store: &S,
    partition: Partition<'_>,
    q: &StatsQuery,
) -> Result<Aggregate<BucketStats>, StoreError> {
    // A room's rollups are its devices' (each reading counts in the room it named).
    let devices: Vec<DeviceId> = match &partition {
        Partition::Device(device) => vec![(*device).clone()],
        Partition::Room(room) if store.capabilities().answers_from_rollups => store
            .room(room)
            .await?
            .map(|r| r.devices.into_iter().collect())
            .unwrap_or_default(),
        Partition::Room(_) => Vec::new(),
    };
    // Boxed: deep futures (a debug test thread's stack overflowed).
    let segments = Box::pin(plan(store, &devices, q)).await?;
    let mut fold = StatsFold::new(q.bucketing);
    let mut items_read = 0;
    for segment in &segments {
        match segment {
            Segment::Raw(range) => {
                Box::pin(each_reading(store, &partition, *range, |r| {
                    items_read += 1;
                    fold.add(r)
                }))
                .await?
            }
            Segment::Rollups(span, range) => {
                // A room's tallies are its devices' of the room.
                let room = match &partition {
                    Partition::Device(_) => None,
                    Partition::Room(room) => Some(*room),
                };
                for device in &devices {
                    for (start, tally) in store.rollup_tallies(device, *span, range, room).await? {
                        items_read += 1;
                        if let Some(tally) = tally {
                            fold.add_tally(start, &tally);
                        }
                    }
                }
            }
        }
    }
    Ok(Aggregate {
        buckets: fold.finish(),
        source: Source::of(&segments),
        items_read,
    })
}

/// Each counter's nearest reading outside the range, on one side, among
/// the 100 nearest readings (`counter::nearest`): what a fold needs to stand
/// where each counter was when the range begins, or to spread the growth
/// that crosses its end.
async fn neighbours<S: Store>(
    store: &S,
    device: &DeviceId,
    range: Option<TimeRange>,
    order: Order,
) -> Result<(Vec<(Timestamp, Counters<Option<f64>>)>, usize), StoreError> {
    let Some(range) = range else {
        return Ok((Vec::new(), 0));
    };
    let request = RangeRequest {
        range,
        order,
        limit: 100,
        after: None,
    };
    let page = store.device_readings(device, &request).await?;
    Ok((nearest(&page.readings), page.readings.len()))
}

/// kWh bought and sold per bucket from the cumulative counters (rules in
/// `aggregate::EnergyFold` and `aggregate::counter`). From rollups where the
/// fold stands where a rollup's readings began; where it does not (the
/// reading before the range was a dip, so the fold's reference differs from
/// the device's), that span's readings, until the two agree again.
pub async fn energy<S: Store>(
    store: &S,
    device: &DeviceId,
    q: &StatsQuery,
) -> Result<Aggregate<EnergyBucket>, StoreError> {
    let segments = Box::pin(plan(store, std::slice::from_ref(device), q)).await?;
    let before = TimeRange::new(Timestamp::MIN, q.range.from()).ok();
    let after = TimeRange::new(q.range.to(), Timestamp::MAX).ok();
    let mut fold = EnergyFold::new(q.bucketing, q.range);
    let mut items_read = 0;
    let feed = |fold: &mut EnergyFold, r: &Reading| fold.add(r.timestamp, Counters::of(r));
    let (found, read) = neighbours(store, device, before, Order::Desc).await?;
    items_read += read;
    for (t, values) in found {
        fold.add(t, values);
    }
    let partition = Partition::Device(device);
    for segment in &segments {
        match segment {
            Segment::Raw(range) => {
                each_reading(store, &partition, *range, |r| {
                    items_read += 1;
                    feed(&mut fold, r)
                })
                .await?
            }
            Segment::Rollups(span, range) => {
                // By reference: each is a few hundred bytes, moved out
                // once an hour of a year otherwise.
                let rollups = store.rollup_counters(device, *span, range).await?;
                for rollup in &rollups {
                    items_read += 1;
                    if rollup.continues(fold.chain()) {
                        fold.add_counters(rollup.start, rollup.spans());
                    } else {
                        let span_range = TimeRange::new(rollup.start, rollup.end())
                            .expect("a span is not empty");
                        each_reading(store, &partition, span_range, |r| {
                            items_read += 1;
                            feed(&mut fold, r)
                        })
                        .await?;
                    }
                }
            }
        }
    }
    let (found, read) = neighbours(store, device, after, Order::Asc).await?;
    items_read += read;
    for (t, values) in found {
        fold.add(t, values);
    }
    Ok(Aggregate {
        buckets: fold.finish(),
        source: Source::of(&segments),
        items_read,
    })
}

/// A validated box search: a time range and inclusive bounds on temperature
/// and humidity.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub range: TimeRange,
    pub temperature: (f64, f64),
    pub humidity: (f64, f64),
    pub limit: usize,
    pub cursor: Option<String>,
}

/// One page of a box search, in Z order, with what it cost.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SearchPage {
    pub readings: Vec<Reading>,
    pub next_cursor: Option<String>,
    /// Index items read for this page (what DynamoDB charges for).
    pub items_read: usize,
    pub items_returned: usize,
    /// Index reads (Query requests) made.
    pub requests: usize,
}

/// First read of a run, and the most one read may take: small after a jump,
/// since a run in Z order may leave the box soon; doubling while it stays in.
const FIRST_READ: usize = 1;
const MAX_READ: usize = 1000;

impl SearchQuery {
    fn inside(&self) -> ClimateBox {
        ClimateBox {
            range: self.range,
            temperature: self.temperature,
            humidity: self.humidity,
        }
    }

    /// The box's corners in the Z space.
    fn corners(&self) -> (u128, u128) {
        (
            zorder::address(self.range.from(), self.temperature.0, self.humidity.0),
            zorder::address(self.range.last(), self.temperature.1, self.humidity.1),
        )
    }

    /// What a cursor is bound to: the partition and the box, spelled exactly.
    fn scope(&self, index: ZIndex<'_>) -> String {
        let (kind, id) = match index {
            ZIndex::Room(r) => ("room", r.as_str()),
            ZIndex::Device(d) => ("device", d.as_str()),
        };
        format!(
            "{kind}/{id}/{}/{}/{:x}/{:x}/{:x}/{:x}",
            self.range.from().millis(),
            self.range.to().millis(),
            self.temperature.0.to_bits(),
            self.temperature.1.to_bits(),
            self.humidity.0.to_bits(),
            self.humidity.1.to_bits()
        )
    }
}

/// Climate readings of a room or device inside the box, in Z order; the
/// next page continues after the cursor. Two sources, merged by key:
///
/// - the Z-order index, `BETWEEN zmin AND zmax`, and whenever a read reaches
///   a key outside the box, a jump to the next key inside it (BIGMIN) with a
///   new read;
/// - on an engine that seals spans into blocks, the sealed readings inside
///   the box (`Store::sealed_in_box`), which its index no longer holds.
pub async fn search<S: Store>(
    store: &S,
    index: ZIndex<'_>,
    q: &SearchQuery,
) -> Result<SearchPage, QueryError> {
    let scope = q.scope(index);
    let inside = q.inside();
    let (lo, hi) = q.corners();
    let to = ZKey::last_at(hi);
    let mut from = ZKey::first_at(lo);
    let cursor = q
        .cursor
        .as_deref()
        .map(|c| keys::decode_search_cursor(&scope, c))
        .transpose()?;
    let mut after = cursor.clone();
    let mut page = SearchPage {
        readings: Vec::new(),
        next_cursor: None,
        items_read: 0,
        items_returned: 0,
        requests: 0,
    };
    let mut indexed: Vec<(ZKey, Reading)> = Vec::new();
    let mut indexed_more = false;
    let mut want = FIRST_READ;
    'reads: loop {
        let read = store
            .z_range(
                index,
                &ZRangeRequest {
                    from: &from,
                    to: &to,
                    after: after.as_ref(),
                    limit: want.min(q.limit - indexed.len() + 1).max(1),
                },
            )
            .await?;
        page.requests += 1;
        page.items_read += read.scanned;
        for (key, reading) in read.items {
            if inside.contains(&reading) {
                indexed.push((key, reading));
                if indexed.len() == q.limit {
                    indexed_more = true;
                    break 'reads;
                }
                continue;
            }
            let z = key.address();
            if zorder::CLIMATE.in_box(z, lo, hi) {
                // Inside the box's Z corners but not the exact bounds (sub-second
                // time or f32 rounding): skip it and read on.
                continue;
            }
            match zorder::CLIMATE.bigmin(z, lo, hi) {
                Some(next) => {
                    from = ZKey::first_at(next);
                    after = None;
                    want = FIRST_READ;
                    continue 'reads;
                }
                None => break 'reads,
            }
        }
        match read.last_read {
            Some(last) => {
                after = Some(last);
                want = (want * 2).min(MAX_READ);
            }
            None => break,
        }
    }
    let sealed = store
        .sealed_in_box(index, &inside, cursor.as_ref(), q.limit + 1)
        .await?;
    if sealed.decoded > 0 {
        page.requests += 1;
    }
    page.items_read += sealed.decoded;
    let sealed_more = sealed.items.len() > q.limit;
    let mut merged = indexed;
    merged.extend(sealed.items);
    merged.sort_by(|a, b| a.0.cmp(&b.0));
    let more = merged.len() > q.limit || indexed_more || sealed_more;
    merged.truncate(q.limit);
    if more {
        page.next_cursor = merged
            .last()
            .map(|(key, _)| keys::encode_search_cursor(&scope, key));
    }
    page.readings = merged.into_iter().map(|(_, r)| r).collect();
    page.items_returned = page.readings.len();
    Ok(page)
}

/// One page of every device's readings in the range, in time order (then
/// device). The cursor holds one position in that order, whatever the engine
/// merges underneath (DynamoDB's shards).
pub async fn all_readings<S: Store>(
    store: &S,
    q: &ReadingsQuery,
) -> Result<ReadingsPage, QueryError> {
    let descending = q.order == Order::Desc;
    let scope = CursorScope::All {
        range: &q.range,
        descending,
    };
    let after = q.cursor.as_deref().map(|c| scope.decode(c)).transpose()?;
    let request = RangeRequest {
        range: q.range,
        order: q.order,
        limit: q.limit,
        after,
    };
    let Page { readings, next } = store.all_readings(&request).await?;
    let next_cursor = next.map(|position| scope.encode(&position));
    Ok(ReadingsPage {
        readings,
        next_cursor,
    })
}
