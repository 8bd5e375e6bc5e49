//! Rollups on DynamoDB (docs/rollups.md): `RH#<hour>` and `RD#<day>` items in
//! the device's own partition, and the `RSINCE` marker item (`store::Marker`),
//! read and written here; what to recompute is the rollups use case's
//! (above the store), over `RollupSpans` (`rollup_spans.rs`), run by the
//! rollups stream function. Queries use rollups only from the marker's hour
//! (and only up to the function's lag).
//!
//! An hour item is the hour's block and the chain it entered with; a day
//! item is the rollup's stored shape (`rollup::Stored`).

use super::blocks::{block_value, hour_block};
use super::calls::Request;
use super::{decode_reading, s, unavailable, DynamoStore, Item};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use domain::aggregate::counter::{Chain, Counter, Counters, Mark};
use domain::aggregate::rollup::{spans, Rollup};
use domain::model::{DeviceId, Reading, Span, TimeRange, Timestamp};
use futures_util::StreamExt;
use std::collections::BTreeSet;
use storage::format::rollup::{Stored, StoredV1};
use storage::keys::{self, attr, ROLLUPS_SINCE_SK};
use storage::{Marker, StoreError};

const SINCE: &str = "since";
/// The marker's open day: the day of the newest hour the function has
/// recomputed. Its day item (and any later one) may lag behind its hours.
const OPEN_DAY: &str = "open";

/// What a conditional hour put expects to find in the table.
pub(super) enum Expected<'a> {
    /// The hour was not read: put whatever is there.
    Unread,
    /// The hour was read, and held this item (`None`: none).
    Read(Option<&'a Item>),
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
    pub(super) async fn put_item_units(&self, item: Item) -> Result<f64, StoreError> {
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

    /// Puts an hour item, conditional on what was read of it (`expected`);
    /// returns the write units DynamoDB reported. An item changed since it
    /// was read (another writer's readings in its block) fails the put.
    pub(super) async fn put_hour_item(
        &self,
        item: Item,
        expected: Expected<'_>,
    ) -> Result<f64, StoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        let put = match expected {
            Expected::Unread => put,
            Expected::Read(None) => put
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK),
            Expected::Read(Some(old)) => match old.get(attr::BLOCK) {
                Some(block) => put
                    .condition_expression("#b = :b")
                    .expression_attribute_names("#b", attr::BLOCK)
                    .expression_attribute_values(":b", block.clone()),
                None => put
                    .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#b)")
                    .expression_attribute_names("#pk", attr::PK)
                    .expression_attribute_names("#b", attr::BLOCK),
            },
        };
        match put.retried(self).await {
            Ok(out) => Ok(super::metered_write(out.consumed_capacity())),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::Conflict(
                    "an hour item changed while it was recomputed".into(),
                ))
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    pub(super) async fn delete_rollup(
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

    pub(super) async fn rollups_within(
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

    pub(super) async fn rollups_ordered(
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
    pub(super) async fn rollup_before(
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
    pub(super) async fn rollup_after(
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

    /// The hour items of a device lying inside `range`, oldest first, strongly consistent.
    pub(super) async fn hour_items_within(
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
    pub(super) async fn readings_for_rollups(
        &self,
        device: &DeviceId,
        range: &TimeRange,
    ) -> Result<Vec<Reading>, StoreError> {
        let query = self.readings_query(device, range).consistent_read(true);
        let (items, _) = self.query_pages(query, usize::MAX).await?;
        items.iter().map(decode_reading).collect()
    }

    /// The start of every hour with readings of a device from `from` on (keys only).
    pub(super) async fn hours_with_readings(
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
    pub(super) async fn rollup_marker(
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

    pub(super) async fn set_rollup_marker(
        &self,
        device: &DeviceId,
        marker: Marker,
    ) -> Result<(), StoreError> {
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
    pub(super) fn recompute_floor(&self) -> Timestamp {
        let Some(retention) = self.retention else {
            return Timestamp::MIN;
        };
        let first_kept = retention.first_kept_millis(super::now_epoch_seconds());
        Timestamp::from_millis(first_kept.max(0))
            .map(|t| Span::Hour.start_of(t))
            .unwrap_or(Timestamp::MIN)
    }

    /// The time of a device's first or last reading in `within`.
    pub(super) async fn edge_reading(
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

    /// Puts items in BatchWriteItem chunks, retried like readings.
    pub(super) async fn put_all(&self, items: Vec<Item>) -> Result<(), StoreError> {
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
    if entering != Chain::default() {
        item.insert(attr::ENTERING.to_owned(), entering_value(&entering));
    }
    Ok(item)
}

/// An hour item's entering chain: `[time, kWh]` of the bought counter, then
/// of the sold one, each `NULL` for a counter without a mark (four
/// elements), then where gas or water has a mark, the same of gas and of
/// water (eight), then where a tariff has one, the same of the tariffs
/// (sixteen). Items written before each counter was followed on its own
/// have three: `[time, kWh bought, kWh sold]`, both counters at that time.
fn entering_value(chain: &Chain) -> AttributeValue {
    let marked = |counters: &[Counter]| counters.iter().any(|c| chain.get(*c).is_some());
    let counters: &[Counter] = match (marked(&Counter::TARIFFS), marked(&Counter::VOLUMES)) {
        (true, _) => &Counter::ALL,
        (false, true) => &Counter::ALL[..4],
        (false, false) => &Counter::ELECTRICITY,
    };
    let mut parts = Vec::with_capacity(2 * counters.len());
    for &c in counters {
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
            ..Default::default()
        }),
        n @ (4 | 8 | 16) => {
            let mut chain = Chain::default();
            for (i, c) in Counter::ALL.into_iter().take(n / 2).enumerate() {
                *chain.get_mut(c) = mark(number(2 * i)?, number(2 * i + 1)?)?;
            }
            Ok(chain)
        }
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
