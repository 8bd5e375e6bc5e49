//! Hour blocks on DynamoDB (issue 24; docs/blocks.md): each hour rollup item
//! (`RH#<hour>`) also holds that hour's readings in `domain::block`'s codec,
//! written by the rollups function with the rollup, in the same put. Raw
//! `TS#` items expire after the raw window (`RAW_READING_DAYS`); older
//! readings are read from the blocks.
//!
//! **The read rule** (`sources`, the one place it is decided): a stretch of a
//! device's time is read from blocks when it lies before the raw cutoff
//! (where raw items may be gone) and from the device's rollup marker on
//! (where every hour with readings has its item); everything else from raw
//! items. Inside the block stretch an hour item without a block (written by
//! a version before blocks) is read from its raw items.

use super::calls::Request;
use super::{decode_reading, unavailable, unexpired, DynamoStore, Item};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use domain::block;
use domain::model::{DeviceId, Reading, RoomId, Span, TimeRange, Timestamp};
use domain::room_presence::in_room;
use storage::after_position;
use storage::keys::{self, attr};
use storage::{Order, Page, RangeRequest, StoreError};

/// Hour items asked for per Query while paging through blocks.
const HOURS_PER_QUERY: i32 = 24;

/// Where a stretch of a device's time is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Raw,
    Blocks,
}

/// The read rule (module comment): `range` cut into stretches in time
/// order, each with its source. `since`: from when the device's hour items
/// are complete (its rollup marker); `cutoff`: before when raw items may be
/// gone (`None`: raw items are kept forever).
pub(crate) fn sources(
    range: &TimeRange,
    since: Option<Timestamp>,
    cutoff: Option<Timestamp>,
) -> Vec<(Source, TimeRange)> {
    let blocks = match (since, cutoff) {
        (Some(since), Some(cutoff)) => TimeRange::new(since, cutoff).ok(),
        _ => None,
    };
    let Some(blocks) = blocks else {
        return vec![(Source::Raw, *range)];
    };
    let cut = |from: Timestamp, to: Timestamp| {
        TimeRange::new(from.max(range.from()), to.min(range.to())).ok()
    };
    [
        (Source::Raw, cut(Timestamp::MIN, blocks.from())),
        (Source::Blocks, cut(blocks.from(), blocks.to())),
        (Source::Raw, cut(blocks.to(), Timestamp::MAX)),
    ]
    .into_iter()
    .filter_map(|(source, r)| Some((source, r?)))
    .collect()
}

impl DynamoStore {
    /// Before this, a reading's raw item may be gone (expired at the raw
    /// window): an hour of margin past `now − window`, so that an item read
    /// as raw has not expired by the time the read's own filter runs.
    pub fn raw_cutoff(&self) -> Option<Timestamp> {
        let raw = self.raw?;
        self.rollup_lag?;
        let first_kept = raw.first_kept_millis(super::now_epoch_seconds());
        let t = Timestamp::from_millis(first_kept.max(Timestamp::MIN.millis())).ok()?;
        Some(
            Span::Hour
                .start_of(t)
                .saturating_add_millis(2 * Span::Hour.millis()),
        )
    }

    /// `range` of a device cut into stretches by the read rule: one marker
    /// read, only when the range reaches before the cutoff.
    async fn stretches(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> Result<Vec<(Source, TimeRange)>, StoreError> {
        let cutoff = self.raw_cutoff().filter(|c| range.from() < *c);
        let since = match cutoff {
            Some(_) => self.rollups_since(device, false).await?,
            None => None,
        };
        Ok(sources(range, since, cutoff))
    }

    /// Up to `limit` of a device's readings in `range` that `keep` keeps, in
    /// `order`, from whichever source the read rule names for each stretch;
    /// `true` when more may follow.
    pub(super) async fn device_part(
        &self,
        device: &DeviceId,
        range: &TimeRange,
        order: Order,
        limit: usize,
        keep: &(dyn Fn(&Reading) -> bool + Sync),
    ) -> Result<(Vec<Reading>, bool), StoreError> {
        let mut stretches = self.stretches(device, range).await?;
        if order == Order::Desc {
            stretches.reverse();
        }
        let mut out = Vec::new();
        for (source, stretch) in stretches {
            if out.len() == limit {
                return Ok((out, true));
            }
            let left = limit - out.len();
            let (mut got, more) = match source {
                // Boxed: these futures are large, and nest under every read.
                Source::Raw if self.reads_hour_blocks() => {
                    Box::pin(self.raw_with_blocks(device, &stretch, order, left, keep)).await?
                }
                Source::Raw => Box::pin(self.raw_part(device, &stretch, order, left, keep)).await?,
                Source::Blocks => {
                    let part = self.block_part(device, &stretch, order, left, keep, true);
                    Box::pin(part).await?
                }
            };
            out.append(&mut got);
            if more {
                return Ok((out, true));
            }
        }
        Ok((out, false))
    }

    /// A device's page (`Store::device_readings`).
    pub(super) async fn device_page(
        &self,
        device: &DeviceId,
        request: &RangeRequest,
    ) -> Result<Page, StoreError> {
        let Some(range) = after_position(
            &request.range,
            request.order,
            request.after.as_ref(),
            device,
        ) else {
            return Ok(Page::default());
        };
        let (readings, more) = self
            .device_part(device, &range, request.order, request.limit, &|_| true)
            .await?;
        Ok(Page::of(readings, more))
    }

    /// The part of a room's page before the raw cutoff: the blocks (or raw
    /// items) of every device that has reported in the room, merged.
    pub(super) async fn room_before_cutoff(
        &self,
        room: &RoomId,
        request: &RangeRequest,
        devices: &[DeviceId],
    ) -> Result<Page, StoreError> {
        let keep = in_room(room);
        let keep: &(dyn Fn(&Reading) -> bool + Sync) = &keep;
        let pages = futures_util::future::try_join_all(devices.iter().filter_map(|device| {
            let range = after_position(
                &request.range,
                request.order,
                request.after.as_ref(),
                device,
            )?;
            Some(async move {
                let (readings, more) = self
                    .device_part(device, &range, request.order, request.limit, keep)
                    .await?;
                Ok::<_, StoreError>(Page::of(readings, more))
            })
        }))
        .await?;
        let mut page = storage::merge_pages(pages, request);
        page.readings = super::presence::room_views(room, page.readings);
        Ok(page)
    }

    /// Raw items of a device in `range`, unexpired, that `keep` keeps.
    async fn raw_part(
        &self,
        device: &DeviceId,
        range: &TimeRange,
        order: Order,
        limit: usize,
        keep: &(dyn Fn(&Reading) -> bool + Sync),
    ) -> Result<(Vec<Reading>, bool), StoreError> {
        let query = unexpired(
            self.readings_query(device, range)
                .scan_index_forward(order == Order::Asc),
        );
        self.query_kept(query, limit, |item| {
            let r = decode_reading(item)?;
            Ok(keep(&r).then_some(r))
        })
        .await
    }

    /// The raw stretch where batches are written as hour blocks
    /// (docs/batches.md): its raw items and its hours' blocks, merged, the
    /// raw item winning where both hold a time (a newer write the rollups
    /// function has not folded yet).
    async fn raw_with_blocks(
        &self,
        device: &DeviceId,
        range: &TimeRange,
        order: Order,
        limit: usize,
        keep: &(dyn Fn(&Reading) -> bool + Sync),
    ) -> Result<(Vec<Reading>, bool), StoreError> {
        let (raw, blocks) = futures_util::future::try_join(
            Box::pin(self.raw_part(device, range, order, limit, keep)),
            Box::pin(self.block_part(device, range, order, limit, keep, false)),
        )
        .await?;
        Ok(merge_sources(raw, blocks, order, limit))
    }

    /// A device's readings in `range` from its hour items' blocks, in
    /// `order`. An hour item without one (an earlier version's) is read from
    /// that hour's raw items when `blockless_from_raw`, else skipped.
    async fn block_part(
        &self,
        device: &DeviceId,
        range: &TimeRange,
        order: Order,
        limit: usize,
        keep: &(dyn Fn(&Reading) -> bool + Sync),
        blockless_from_raw: bool,
    ) -> Result<(Vec<Reading>, bool), StoreError> {
        let first = Span::Hour.start_of(range.from());
        let last = Span::Hour.start_of(range.last());
        let mut query = self
            .sk_range_query(
                keys::reading_pk(device),
                keys::rollup_sk(Span::Hour, first),
                keys::rollup_sk(Span::Hour, last),
            )
            .scan_index_forward(order == Order::Asc)
            .limit(HOURS_PER_QUERY);
        let mut out = Vec::new();
        loop {
            let page = query
                .clone()
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
            super::metered(page.consumed_capacity());
            for item in page.items() {
                let mut readings = match hour_block(device, item)? {
                    Some(readings) => readings,
                    None if !blockless_from_raw => continue,
                    None => {
                        let hour = hour_of(item)?;
                        let Some(within) = TimeRange::new(
                            hour.max(range.from()),
                            Span::Hour.end_of(hour).min(range.to()),
                        )
                        .ok() else {
                            continue;
                        };
                        self.raw_part(device, &within, Order::Asc, usize::MAX, keep)
                            .await?
                            .0
                    }
                };
                readings.retain(|r| range.contains(r.timestamp) && keep(r));
                if order == Order::Desc {
                    readings.reverse();
                }
                for r in readings {
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(r);
                }
            }
            match page.last_evaluated_key() {
                Some(lek) => query = query.set_exclusive_start_key(Some(lek.clone())),
                None => return Ok((out, false)),
            }
        }
    }

    /// A device's newest reading in its newest hour item's block (where
    /// batches are written as blocks, the newest reading may be in one
    /// alone): one item read, whatever the device's history. An hour item
    /// without a block (an earlier version's) gives none: its readings are
    /// items, which `latest` reads first.
    pub(super) async fn newest_in_blocks(
        &self,
        device: &DeviceId,
    ) -> Result<Option<Reading>, StoreError> {
        let query = self
            .sk_range_query(
                keys::reading_pk(device),
                keys::rollup_sk(Span::Hour, Span::Hour.start_of(Timestamp::MIN)),
                keys::rollup_sk(Span::Hour, Span::Hour.start_of(Timestamp::MAX)),
            )
            .scan_index_forward(false)
            .limit(1);
        let out = query
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        super::metered(out.consumed_capacity());
        match out.items().first() {
            Some(item) => Ok(hour_block(device, item)?.and_then(|mut r| r.pop())),
            None => Ok(None),
        }
    }

    /// A device's newest reading before the raw cutoff, from the read rule:
    /// what `latest` answers for a device silent for longer than the window.
    pub(super) async fn latest_before_cutoff(
        &self,
        device: &DeviceId,
    ) -> Result<Option<Reading>, StoreError> {
        let Some(cutoff) = self.raw_cutoff() else {
            return Ok(None);
        };
        let Ok(before) = TimeRange::new(Timestamp::MIN, cutoff) else {
            return Ok(None);
        };
        let (mut readings, _) = self
            .device_part(device, &before, Order::Desc, 1, &|_| true)
            .await?;
        Ok(readings.pop())
    }
}

/// Two sources' readings of one device, each in `order` with whether more
/// follow, merged into at most `limit`; where both hold a time, the first's.
fn merge_sources(
    (first, first_more): (Vec<Reading>, bool),
    (second, second_more): (Vec<Reading>, bool),
    order: Order,
    limit: usize,
) -> (Vec<Reading>, bool) {
    let before = |a: &Reading, b: &Reading| match order {
        Order::Asc => a.timestamp < b.timestamp,
        Order::Desc => a.timestamp > b.timestamp,
    };
    let mut out = Vec::with_capacity(limit.min(first.len() + second.len()));
    let (mut a, mut b) = (first.into_iter().peekable(), second.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (Some(x), Some(y)) if x.timestamp == y.timestamp => {
                b.next();
                a.next()
            }
            (Some(x), Some(y)) if before(x, y) => a.next(),
            _ => b.next(),
        };
        if out.len() == limit {
            return (out, true);
        }
        out.extend(next);
    }
    (out, first_more || second_more)
}

/// The start of an hour item's hour.
pub(super) fn hour_of(item: &Item) -> Result<Timestamp, StoreError> {
    item.get(attr::SK)
        .and_then(|v| v.as_s().ok())
        .and_then(|sk| keys::parse_rollup_sk(sk))
        .map(|(_, start)| start)
        .ok_or_else(|| StoreError::Corrupt("an hour item without a rollup key".into()))
}

/// The readings of an hour item's block, oldest first; `None` when the item
/// has none.
pub(super) fn hour_block(
    device: &DeviceId,
    item: &Item,
) -> Result<Option<Vec<Reading>>, StoreError> {
    match item.get(attr::BLOCK) {
        None => Ok(None),
        Some(AttributeValue::B(bytes)) => {
            block::decode(device, bytes.as_ref())
                .map(Some)
                .map_err(|e| {
                    StoreError::Corrupt(format!(
                        "{device}'s block at {:?}: {e}",
                        item.get(attr::SK)
                    ))
                })
        }
        Some(_) => Err(StoreError::Corrupt(format!(
            "{device}: a block that is not binary"
        ))),
    }
}

/// The block attribute of an hour's readings (`None` for no readings).
pub(super) fn block_value(readings: &[Reading]) -> Result<Option<AttributeValue>, StoreError> {
    if readings.is_empty() {
        return Ok(None);
    }
    block::encode(readings)
        .map(|b| {
            Some(AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(
                b,
            )))
        })
        .map_err(|e| StoreError::Corrupt(format!("an hour's block: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + h * 3_600_000).unwrap()
    }

    fn r(a: i64, b: i64) -> TimeRange {
        TimeRange::new(t(a), t(b)).unwrap()
    }

    #[test]
    fn the_read_rule_cuts_a_range_at_the_marker_and_the_cutoff() {
        use Source::*;
        // Raw kept forever, or no marker: all raw.
        assert_eq!(sources(&r(0, 10), Some(t(0)), None), vec![(Raw, r(0, 10))]);
        assert_eq!(sources(&r(0, 10), None, Some(t(5))), vec![(Raw, r(0, 10))]);
        // Marker at 2, cutoff at 5: raw before the marker, blocks, raw after.
        assert_eq!(
            sources(&r(0, 10), Some(t(2)), Some(t(5))),
            vec![(Raw, r(0, 2)), (Blocks, r(2, 5)), (Raw, r(5, 10))]
        );
        // A range wholly inside one stretch.
        assert_eq!(
            sources(&r(3, 4), Some(t(2)), Some(t(5))),
            vec![(Blocks, r(3, 4))]
        );
        assert_eq!(
            sources(&r(6, 9), Some(t(2)), Some(t(5))),
            vec![(Raw, r(6, 9))]
        );
        // A marker after the cutoff: no block stretch.
        assert_eq!(
            sources(&r(0, 10), Some(t(7)), Some(t(5))),
            vec![(Raw, r(0, 10))]
        );
    }
}
