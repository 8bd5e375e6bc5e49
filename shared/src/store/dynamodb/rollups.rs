//! Rollups on DynamoDB (docs/rollups.md): `RH#<hour>` and `RD#<day>` items in
//! the device's own partition, kept by the rollups stream function.
//!
//! Each touched hour is recomputed from a strongly consistent Query of its
//! readings (with the counter chain of the hour rollup before it) and put
//! whole, then its day from its hours. Recompute-and-put depends only on
//! what the table holds, so duplicate, late and reordered delivery cannot
//! count a reading twice. When an hour's leaving chain changes, the next
//! hour rollup is recomputed too, since it entered with that chain.
//!
//! A marker item (`RSINCE`) per device says from which hour on its rollups
//! are complete: the first hour the function saw, where every hour with
//! readings from there on was recomputed (the beginning of time, for a device
//! with no reading before that hour), or what `rollups rebuild` covered.
//! Queries use rollups only from there (and only up to the function's lag).

use super::blocks::{block_value, hour_block, hour_of};
use super::calls::Request;
use super::{decode_reading, s, unavailable, DynamoStore, Item};
use crate::domain::aggregate::counter::{Chain, Counter, Counters, Mark};
use crate::domain::aggregate::rollup::{day, leaving, spans, Cascade, Rollup, Stored, StoredV1};
use crate::keys::{self, attr, ROLLUPS_SINCE_SK};
use crate::model::{DeviceId, Reading, Span, TimeRange, Timestamp};
use crate::store::{RollupWrites, StoreError};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use futures_util::StreamExt;
use std::collections::BTreeSet;

const SINCE: &str = "since";
/// The marker's open day: the day of the newest hour the function has
/// recomputed. Its day item (and any later one) may lag behind its hours.
const OPEN_DAY: &str = "open";

/// What a device's rollup marker says.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Marker {
    /// From this hour on, every hour with readings has its hour item.
    since: Timestamp,
    /// From this day on, day items may lag behind their hours (`None`: a
    /// marker from before open days, whose day items were all kept whole).
    open_day: Option<Timestamp>,
}

fn range(from: Timestamp, to: Timestamp) -> Option<TimeRange> {
    TimeRange::new(from, to).ok()
}

impl DynamoStore {
    /// Puts a device's rollup whole (a day's, or an hour's in the shape
    /// from before blocks); returns the write units DynamoDB reported.
    pub async fn put_rollup(&self, device: &DeviceId, rollup: &Rollup) -> Result<f64, StoreError> {
        self.put_item_units(rollup_item(device, rollup)?).await
    }

    /// Puts an item; returns the write units DynamoDB reported (0 where the
    /// server reports none).
    async fn put_item_units(&self, item: Item) -> Result<f64, StoreError> {
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(super::metered_write(out.consumed_capacity()))
    }

    async fn delete_rollup(
        &self,
        device: &DeviceId,
        span: Span,
        start: Timestamp,
    ) -> Result<f64, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::reading_pk(device)))
            .key(attr::SK, AttributeValue::S(keys::rollup_sk(span, start)))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(super::metered_write(out.consumed_capacity()))
    }

    /// A device's rollups of `span` lying wholly inside `range`, oldest first (all pages).
    pub async fn read_rollups(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
    ) -> Result<Vec<Rollup>, StoreError> {
        self.rollups_within(device, span, range, false, usize::MAX)
            .await
    }

    async fn rollups_within(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
        consistent: bool,
        limit: usize,
    ) -> Result<Vec<Rollup>, StoreError> {
        self.rollups_ordered(device, span, range, consistent, true, limit)
            .await
    }

    async fn rollups_ordered(
        &self,
        device: &DeviceId,
        span: Span,
        range: &TimeRange,
        consistent: bool,
        ascending: bool,
        limit: usize,
    ) -> Result<Vec<Rollup>, StoreError> {
        let Some((lo, hi)) = keys::rollup_sk_bounds(span, range) else {
            return Ok(Vec::new());
        };
        let query = self
            .sk_range_query(keys::reading_pk(device), lo, hi)
            .consistent_read(consistent)
            .scan_index_forward(ascending);
        let (items, _) = self.query_pages(query, limit).await?;
        items.into_iter().map(decode_rollup).collect()
    }

    /// The newest rollup of `span` starting before `start`.
    async fn rollup_before(
        &self,
        device: &DeviceId,
        span: Span,
        start: Timestamp,
    ) -> Result<Option<Rollup>, StoreError> {
        let Some(before) = range(Timestamp::MIN, start) else {
            return Ok(None);
        };
        Ok(self
            .rollups_ordered(device, span, &before, true, false, 1)
            .await?
            .pop())
    }

    /// The first rollup of `span` after the one at `start`.
    async fn rollup_after(
        &self,
        device: &DeviceId,
        span: Span,
        start: Timestamp,
    ) -> Result<Option<Rollup>, StoreError> {
        let Some(after) = range(span.end_of(start), Timestamp::MAX) else {
            return Ok(None);
        };
        Ok(self
            .rollups_ordered(device, span, &after, true, true, 1)
            .await?
            .pop())
    }

    /// Recomputes the hours at `todo` in time order, and the hours after
    /// them that the domain's cascade rule names (`rollup::Cascade`); then
    /// their days before `open_day`, and the days of `closing`.
    async fn recompute_hours(
        &self,
        device: &DeviceId,
        todo: BTreeSet<Timestamp>,
        open_day: Timestamp,
        closing: BTreeSet<Timestamp>,
    ) -> Result<RollupWrites, StoreError> {
        let mut writes = RollupWrites::default();
        let mut days = closing;
        let mut cascade = Cascade::new(todo);
        while let Some(hour) = cascade.next_start() {
            let (leaving, written) = Box::pin(self.recompute_hour(device, hour)).await?;
            if let Some(units) = written {
                writes.hours += 1;
                writes.write_units += units;
            }
            if Span::Day.start_of(hour) < open_day {
                days.insert(Span::Day.start_of(hour));
            }
            let next = self.rollup_after(device, Span::Hour, hour).await?;
            cascade.recomputed(leaving, next.as_ref());
        }
        for start in days {
            if let Some(units) = self.recompute_day(device, start).await? {
                writes.days += 1;
                writes.write_units += units;
            }
        }
        Ok(writes)
    }

    async fn rollup_at(
        &self,
        device: &DeviceId,
        span: Span,
        start: Timestamp,
    ) -> Result<Option<Rollup>, StoreError> {
        self.rollup_item_at(device, span, start)
            .await?
            .map(decode_rollup)
            .transpose()
    }

    async fn rollup_item_at(
        &self,
        device: &DeviceId,
        span: Span,
        start: Timestamp,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::reading_pk(device)))
            .key(attr::SK, AttributeValue::S(keys::rollup_sk(span, start)))
            .consistent_read(true)
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(out.item().cloned())
    }

    /// The hour items of a device lying inside `range`, oldest first, strongly consistent.
    async fn hour_items_within(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> Result<Vec<Item>, StoreError> {
        let Some((lo, hi)) = keys::rollup_sk_bounds(Span::Hour, range) else {
            return Ok(Vec::new());
        };
        let query = self
            .sk_range_query(keys::reading_pk(device), lo, hi)
            .consistent_read(true);
        Ok(self.query_pages(query, usize::MAX).await?.0)
    }

    /// Every reading of a device in `range`, oldest first, strongly
    /// consistent, including readings past their expiry that TTL has not
    /// deleted yet (rollups outlive readings).
    async fn readings_for_rollups(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> Result<Vec<Reading>, StoreError> {
        let query = self.readings_query(device, range).consistent_read(true);
        let (items, _) = self.query_pages(query, usize::MAX).await?;
        items.iter().map(decode_reading).collect()
    }

    /// The start of every hour with readings of a device from `from` on (keys only).
    async fn hours_with_readings(
        &self,
        device: &DeviceId,
        from: Timestamp,
    ) -> Result<BTreeSet<Timestamp>, StoreError> {
        let Some(all) = range(from, Timestamp::MAX) else {
            return Ok(BTreeSet::new());
        };
        let query = self
            .readings_query(device, &all)
            .projection_expression("#sk")
            .consistent_read(true);
        let (items, _) = self.query_pages(query, usize::MAX).await?;
        Ok(items
            .iter()
            .filter_map(|i| i.get(attr::SK)?.as_s().ok())
            .filter_map(|sk| keys::parse_reading_sk(sk))
            .map(|t| Span::Hour.start_of(t))
            .collect())
    }

    /// The hour from which a device's rollups are complete, if they are kept.
    pub async fn rollups_since(
        &self,
        device: &DeviceId,
        consistent: bool,
    ) -> Result<Option<Timestamp>, StoreError> {
        Ok(self
            .rollup_marker(device, consistent)
            .await?
            .map(|m| m.since))
    }

    /// A device's rollup marker (module comment), if its rollups are kept.
    async fn rollup_marker(
        &self,
        device: &DeviceId,
        consistent: bool,
    ) -> Result<Option<Marker>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::reading_pk(device)))
            .key(attr::SK, s(ROLLUPS_SINCE_SK))
            .consistent_read(consistent)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        super::metered(out.consumed_capacity());
        let Some(item) = out.item() else {
            return Ok(None);
        };
        let time = |name: &str| -> Result<Option<Timestamp>, StoreError> {
            let Some(v) = item.get(name) else {
                return Ok(None);
            };
            let corrupt =
                || StoreError::Corrupt(format!("{device}: a rollup marker's `{name}` is {v:?}"));
            let ms: i64 = v
                .as_n()
                .ok()
                .and_then(|n| n.parse().ok())
                .ok_or_else(corrupt)?;
            Timestamp::from_millis(ms).map(Some).map_err(|_| corrupt())
        };
        let since = time(SINCE)?.ok_or_else(|| {
            StoreError::Corrupt(format!("{device}: a rollup marker without `since`"))
        })?;
        Ok(Some(Marker {
            since,
            open_day: time(OPEN_DAY)?,
        }))
    }

    async fn set_rollup_marker(&self, device: &DeviceId, marker: Marker) -> Result<(), StoreError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(keys::reading_pk(device)))
            .item(attr::SK, s(ROLLUPS_SINCE_SK))
            .item(SINCE, AttributeValue::N(marker.since.millis().to_string()));
        if let Some(open) = marker.open_day {
            put = put.item(OPEN_DAY, AttributeValue::N(open.millis().to_string()));
        }
        let out = put
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        super::metered_write(out.consumed_capacity());
        Ok(())
    }

    /// The hour rollups ending before this are not recomputed: their
    /// readings may be gone to TTL, and a rollup outlives them.
    fn recompute_floor(&self) -> Timestamp {
        let Some(retention) = self.retention else {
            return Timestamp::MIN;
        };
        let first_kept = retention.first_kept_millis(super::now_epoch_seconds());
        Timestamp::from_millis(first_kept.max(0))
            .map(|t| Span::Hour.start_of(t))
            .unwrap_or(Timestamp::MIN)
    }

    /// `Store::refresh_rollups` on DynamoDB (module comment).
    pub(super) async fn refresh_device_rollups(
        &self,
        device: &DeviceId,
        hours: BTreeSet<Timestamp>,
    ) -> Result<RollupWrites, StoreError> {
        let floor = self.recompute_floor();
        let mut todo: BTreeSet<Timestamp> = hours
            .into_iter()
            .map(|h| Span::Hour.start_of(h))
            .filter(|h| *h >= floor)
            .collect();
        let Some(&first) = todo.first() else {
            return Ok(RollupWrites::default());
        };
        let marker = self.rollup_marker(device, true).await?;
        let first_sight = marker.is_none();
        if first_sight {
            // Hours from here on may hold readings written before rollups
            // were kept: recompute them all, so that the marker holds.
            todo.extend(self.hours_with_readings(device, first).await?);
        }
        // Days are rewritten when they close, not every batch: the newest
        // day touched stays open (read from its hours), and the day that
        // was open until now is written whole (docs/rollups.md).
        let newest_day = Span::Day.start_of(*todo.last().expect("not empty"));
        let was_open = marker.and_then(|m| m.open_day);
        let open_day = was_open.map_or(newest_day, |o| o.max(newest_day));
        let mut closing = BTreeSet::new();
        if let Some(o) = was_open.filter(|o| *o < open_day) {
            closing.insert(o);
        }
        // Boxed: a deep future (a debug test thread's stack overflowed).
        let writes = Box::pin(self.recompute_hours(device, todo, open_day, closing)).await?;
        let since = match marker {
            Some(m) => Some(m.since),
            None => {
                // Complete from the start when nothing lies before (a new device).
                let before = range(Timestamp::MIN, first);
                let older = match before {
                    Some(before) => self.edge_reading(device, &before, false).await?,
                    None => None,
                };
                Some(if older.is_some() {
                    first
                } else {
                    Timestamp::MIN
                })
            }
        };
        if first_sight || was_open != Some(open_day) {
            let since = since.expect("set above");
            self.set_rollup_marker(
                device,
                Marker {
                    since,
                    open_day: Some(open_day),
                },
            )
            .await?;
        }
        Ok(writes)
    }

    /// Recomputes one hour rollup from its readings; returns the counter
    /// chain leaving it (what the next hour enters with), and the write units
    /// spent (`None`: nothing written, the rollup was already right).
    async fn recompute_hour(
        &self,
        device: &DeviceId,
        start: Timestamp,
    ) -> Result<(Chain, Option<f64>), StoreError> {
        let old_item = self.rollup_item_at(device, Span::Hour, start).await?;
        // The block keeps readings whose raw items TTL has deleted; the raw
        // items there are newer writes of the same key, or new readings.
        let kept = match &old_item {
            Some(item) => hour_block(device, item)?.unwrap_or_default(),
            None => Vec::new(),
        };
        let entering = self
            .rollup_before(device, Span::Hour, start)
            .await?
            .map(|r| r.chain)
            .unwrap_or_default();
        let hour = range(start, Span::Hour.end_of(start)).expect("an hour is not empty");
        let mut readings = kept;
        readings.extend(self.readings_for_rollups(device, &hour).await?);
        let readings = crate::domain::block::normalize(readings);
        let new = spans(Span::Hour, entering, readings.iter()).pop();
        let units = match (&old_item, &new) {
            (_, Some(_)) => {
                let item = hour_item(device, start, &readings, entering)?;
                // The item is its block and entering chain: equal items, equal rollups.
                if old_item.as_ref() == Some(&item) {
                    None
                } else {
                    Some(self.put_item_units(item).await?)
                }
            }
            (Some(_), None) => Some(self.delete_rollup(device, Span::Hour, start).await?),
            (None, None) => None,
        };
        Ok((leaving(new.as_ref(), entering), units))
    }

    /// Recomputes a day rollup from its hour rollups; returns the write units
    /// (`None`: nothing written).
    async fn recompute_day(
        &self,
        device: &DeviceId,
        start: Timestamp,
    ) -> Result<Option<f64>, StoreError> {
        let whole = range(start, Span::Day.end_of(start)).expect("a day is not empty");
        let hours = self
            .rollups_within(device, Span::Hour, &whole, true, usize::MAX)
            .await?;
        let old = self.rollup_at(device, Span::Day, start).await?;
        match (old, hours.is_empty()) {
            (None, true) => Ok(None),
            (Some(_), true) => self.delete_rollup(device, Span::Day, start).await.map(Some),
            (old, false) => {
                let new = day(start, &hours);
                if old.as_ref() == Some(&new) {
                    return Ok(None);
                }
                self.put_rollup(device, &new).await.map(Some)
            }
        }
    }

    /// The time of a device's first or last reading in `within`.
    async fn edge_reading(
        &self,
        device: &DeviceId,
        within: &TimeRange,
        ascending: bool,
    ) -> Result<Option<Timestamp>, StoreError> {
        let out = self
            .readings_query(device, within)
            .projection_expression("#sk")
            .scan_index_forward(ascending)
            .consistent_read(true)
            .limit(1)
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(out
            .items()
            .first()
            .and_then(|i| i.get(attr::SK)?.as_s().ok())
            .and_then(|sk| keys::parse_reading_sk(sk)))
    }

    /// `Store::rebuild_rollups` on DynamoDB: the days overlapping `range` that
    /// hold readings, a day at a time, written in batches; rollups there
    /// without readings any more are deleted; then the hour after, whose
    /// entering chain may have changed; then the marker, when the rebuilt
    /// days reach back to the device's first reading or join the hours the
    /// stream function already covers.
    pub(super) async fn rebuild_device_rollups(
        &self,
        device: &DeviceId,
        range: TimeRange,
    ) -> Result<usize, StoreError> {
        let from = Span::Day.start_of(range.from());
        let to = Span::Day.end_of(Span::Day.start_of(range.to().saturating_add_millis(-1)));
        let days = TimeRange::new(from, to).expect("whole days around a range");
        // The first and last reading, raw or in a block (raw items may be gone).
        let hours = self.hour_items_within(device, &days).await?;
        let (first_hour, last_hour) = match (hours.first(), hours.last()) {
            (Some(a), Some(b)) => (
                Some(hour_of(a)?),
                Some(Span::Hour.end_of(hour_of(b)?).saturating_add_millis(-1)),
            ),
            _ => (None, None),
        };
        let first = [self.edge_reading(device, &days, true).await?, first_hour]
            .into_iter()
            .flatten()
            .min();
        let last = [self.edge_reading(device, &days, false).await?, last_hour]
            .into_iter()
            .flatten()
            .max();
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(0);
        };
        let mut kept: std::collections::BTreeMap<Timestamp, Vec<Reading>> =
            std::collections::BTreeMap::new();
        for item in &hours {
            if let Some(readings) = hour_block(device, item)? {
                kept.insert(hour_of(item)?, readings);
            }
        }
        // Every hour and day item there; those the rebuild does not write again go.
        let mut stale: BTreeSet<(Span, Timestamp)> = BTreeSet::new();
        for item in &hours {
            stale.insert((Span::Hour, hour_of(item)?));
        }
        for r in self
            .rollups_within(device, Span::Day, &days, true, usize::MAX)
            .await?
        {
            stale.insert((Span::Day, r.start));
        }
        let mut chains = [
            self.rollup_before(device, Span::Hour, from)
                .await?
                .map(|r| r.chain)
                .unwrap_or_default(),
            self.rollup_before(device, Span::Day, from)
                .await?
                .map(|r| r.chain)
                .unwrap_or_default(),
        ];
        let mut built = 0;
        let mut day_start = Span::Day.start_of(first);
        while day_start <= last {
            let whole = TimeRange::new(day_start, Span::Day.end_of(day_start)).expect("a day");
            let mut readings: Vec<Reading> = kept
                .range(day_start..Span::Day.end_of(day_start))
                .flat_map(|(_, r)| r.iter().cloned())
                .collect();
            readings.extend(self.readings_for_rollups(device, &whole).await?);
            let readings = crate::domain::block::normalize(readings);
            let mut items = Vec::new();
            for (span, chain) in [Span::Hour, Span::Day].into_iter().zip(chains.iter_mut()) {
                for r in spans(span, *chain, readings.iter()) {
                    let entering = *chain;
                    *chain = r.chain;
                    stale.remove(&(span, r.start));
                    items.push(match span {
                        Span::Hour => {
                            let end = Span::Hour.end_of(r.start);
                            let from = readings.partition_point(|x| x.timestamp < r.start);
                            let to = readings.partition_point(|x| x.timestamp < end);
                            hour_item(device, r.start, &readings[from..to], entering)?
                        }
                        Span::Day => rollup_item(device, &r)?,
                    });
                }
            }
            built += items.len();
            self.put_all(items).await?;
            day_start = Span::Day.end_of(day_start);
        }
        for (span, start) in stale {
            self.delete_rollup(device, span, start).await?;
        }
        // The hour after the rebuilt days entered with the chain they leave.
        let last_hour = to.saturating_add_millis(-Span::Hour.millis());
        if let Some(after) = self.rollup_after(device, Span::Hour, last_hour).await? {
            let open = self
                .rollup_marker(device, true)
                .await?
                .and_then(|m| m.open_day)
                .unwrap_or(Timestamp::MAX);
            self.recompute_hours(device, BTreeSet::from([after.start]), open, BTreeSet::new())
                .await?;
        }
        let earliest = self
            .edge_reading(
                device,
                &TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN < MAX"),
                true,
            )
            .await?;
        let reaches_back = earliest.is_some_and(|e| e >= from);
        let marker = self.rollup_marker(device, true).await?;
        let new_since = if reaches_back {
            Span::Day.start_of(first)
        } else {
            from
        };
        // The rebuild wrote every day whole: the open day stays what the
        // stream function said (its later batches close it).
        match marker {
            // Joins what the stream function keeps: complete from the rebuilt days on.
            Some(m) if m.since <= to && new_since < m.since => {
                self.set_rollup_marker(
                    device,
                    Marker {
                        since: new_since,
                        ..m
                    },
                )
                .await?
            }
            // Never seen by the function: complete when the rebuild reaches now.
            None if to.millis() >= super::now_epoch_seconds() * 1000 => {
                self.set_rollup_marker(
                    device,
                    Marker {
                        since: new_since,
                        open_day: None,
                    },
                )
                .await?
            }
            _ => {}
        }
        Ok(built)
    }

    /// Puts items in BatchWriteItem chunks, retried like readings.
    async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let mut chunks = Vec::new();
        let mut items = items.into_iter().enumerate().peekable();
        while items.peek().is_some() {
            chunks.push(
                items
                    .by_ref()
                    .take(super::BATCH_WRITE_MAX)
                    .collect::<Vec<_>>(),
            );
        }
        let unwritten: usize = futures_util::stream::iter(chunks)
            .map(|c| self.write_chunk(c))
            .buffer_unordered(self.policy.chunk_concurrency)
            .map(|left| left.len())
            .fold(0, |a, b| async move { a + b })
            .await;
        if unwritten > 0 {
            return Err(StoreError::Unavailable(format!(
                "{unwritten} rollup items unwritten after retries"
            )));
        }
        Ok(())
    }

    /// The range over which every one of `devices` has complete rollups:
    /// from the latest of their markers to the last whole hour the stream
    /// function has surely reached (`rollup_lag` behind now); and the
    /// earliest of their open days, from which hours stand in for days.
    pub(super) async fn coverage(
        &self,
        devices: &[DeviceId],
    ) -> Result<Option<(TimeRange, Timestamp)>, StoreError> {
        let Some(lag) = self.rollup_lag else {
            return Ok(None);
        };
        if devices.is_empty() {
            return Ok(None);
        }
        let marks = futures_util::future::try_join_all(
            devices.iter().map(|d| self.rollup_marker(d, false)),
        )
        .await?;
        let mut from = Timestamp::MIN;
        let mut days_until = Timestamp::MAX;
        for mark in marks {
            match mark {
                Some(m) => {
                    from = from.max(m.since);
                    if let Some(open) = m.open_day {
                        days_until = days_until.min(open);
                    }
                }
                None => return Ok(None),
            }
        }
        let now = super::now_epoch_seconds() * 1000 - lag.as_millis() as i64;
        let to = Span::Hour.start_of(Timestamp::from_millis(now.max(0)).unwrap_or(Timestamp::MIN));
        Ok(range(from, to).map(|r| (r, days_until)))
    }
}

/// An hour's item (docs/blocks.md): its readings' block and the counter chain
/// it entered with, from which its rollup is computed when read (by the same
/// fold that made it), at a third of the stored rollup's size.
pub(super) fn hour_item(
    device: &DeviceId,
    start: Timestamp,
    readings: &[Reading],
    entering: Chain,
) -> Result<Item, StoreError> {
    let mut item = Item::with_capacity(4);
    item.insert(attr::PK.to_owned(), s(keys::reading_pk(device)));
    item.insert(
        attr::SK.to_owned(),
        AttributeValue::S(keys::rollup_sk(Span::Hour, start)),
    );
    let block = block_value(readings)?
        .ok_or_else(|| StoreError::Corrupt(format!("{device}: an hour item without readings")))?;
    item.insert(attr::BLOCK.to_owned(), block);
    if entering.bought.is_some() || entering.sold.is_some() {
        item.insert(attr::ENTERING.to_owned(), entering_value(&entering));
    }
    Ok(item)
}

/// An hour item's entering chain: `[time, kWh]` of the bought counter, then
/// of the sold one, each `NULL` for a counter without a mark (four
/// elements). Items written before each counter was followed on its own
/// have three: `[time, kWh bought, kWh sold]`, both counters at that time.
fn entering_value(chain: &Chain) -> AttributeValue {
    let mut parts = Vec::with_capacity(4);
    for c in Counter::BOTH {
        match chain.get(c) {
            Some(m) => {
                parts.push(AttributeValue::N(m.at.millis().to_string()));
                parts.push(AttributeValue::N(m.reference.to_string()));
            }
            None => parts.extend([AttributeValue::Null(true), AttributeValue::Null(true)]),
        }
    }
    AttributeValue::L(parts)
}

/// The chain an hour item says its hour entered with (`entering_value`).
fn entering_of(item: &Item) -> Result<Chain, String> {
    let Some(v) = item.get(attr::ENTERING) else {
        return Ok(Chain::default());
    };
    let parts = v
        .as_l()
        .map_err(|_| "an entering chain that is not a list")?;
    let number = |i: usize| -> Result<Option<&str>, String> {
        match parts.get(i) {
            Some(AttributeValue::N(n)) => Ok(Some(n.as_str())),
            Some(AttributeValue::Null(_)) => Ok(None),
            _ => Err(format!("entering chain part {i}")),
        }
    };
    let mark = |at: Option<&str>, v: Option<&str>| -> Result<Option<Mark>, String> {
        match (at, v) {
            (Some(at), Some(v)) => {
                let at: i64 = at.parse().map_err(|e| format!("{e}"))?;
                Ok(Some(Mark {
                    at: Timestamp::from_millis(at).map_err(|e| e.to_string())?,
                    reference: v.parse().map_err(|e| format!("{e}"))?,
                }))
            }
            (None, None) => Ok(None),
            _ => Err("an entering mark with a time or a value alone".into()),
        }
    };
    match parts.len() {
        3 => Ok(Counters {
            bought: mark(number(0)?, number(1)?)?,
            sold: mark(number(0)?, number(2)?)?,
        }),
        4 => Ok(Counters {
            bought: mark(number(0)?, number(1)?)?,
            sold: mark(number(2)?, number(3)?)?,
        }),
        n => Err(format!("an entering chain of {n} parts")),
    }
}

/// A rollup's item in the stored shape (`rollup::Stored`): days, and hours
/// written before blocks.
pub(super) fn rollup_item(device: &DeviceId, rollup: &Rollup) -> Result<Item, StoreError> {
    let mut item: Item = serde_dynamo::to_item(Stored::from(rollup))
        .map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
    item.insert(attr::PK.to_owned(), s(keys::reading_pk(device)));
    item.insert(
        attr::SK.to_owned(),
        AttributeValue::S(keys::rollup_sk(rollup.span, rollup.start)),
    );
    Ok(item)
}

fn decode_rollup(mut item: Item) -> Result<Rollup, StoreError> {
    let sk = match item.get(attr::SK) {
        Some(AttributeValue::S(sk)) => sk.clone(),
        _ => return Err(StoreError::Corrupt("a rollup item without sk".into())),
    };
    let corrupt = |e: String| StoreError::Corrupt(format!("rollup {sk}: {e}"));
    let (span, start) =
        keys::parse_rollup_sk(&sk).ok_or_else(|| corrupt("not a rollup key".into()))?;
    if item.contains_key(attr::BLOCK) {
        // An hour item with its block: the rollup is the fold of its readings.
        let device = item
            .get(attr::PK)
            .and_then(|v| v.as_s().ok())
            .and_then(|pk| DeviceId::parse(pk).ok())
            .ok_or_else(|| corrupt("no device".into()))?;
        let readings = hour_block(&device, &item)?.unwrap_or_default();
        let entering = entering_of(&item).map_err(corrupt)?;
        return spans(span, entering, readings.iter())
            .pop()
            .filter(|r| r.start == start)
            .ok_or_else(|| corrupt("a block outside its hour".into()));
    }
    item.remove(attr::SK);
    item.remove(attr::PK);
    // Version 1 items (both counters followed together) are still read.
    if matches!(item.get("v"), Some(AttributeValue::N(v)) if v == "1") {
        let stored: StoredV1 = serde_dynamo::from_item(item).map_err(|e| corrupt(e.to_string()))?;
        return stored.decode(span, start).map_err(corrupt);
    }
    let stored: Stored = serde_dynamo::from_item(item).map_err(|e| corrupt(e.to_string()))?;
    stored.decode(span, start).map_err(corrupt)
}
