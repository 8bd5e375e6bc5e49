//! The rollups use case's primitives on DynamoDB: one device's hour and day
//! items, its raw readings and its marker, strongly consistent.

use super::blocks::{hour_block, hour_of};
use super::rollups::Expected;
use super::rollups::{hour_item, rollup_item};
use super::{DynamoStore, Item};
use domain::aggregate::rollup::Rollup;
use domain::model::{DeviceId, Reading, Span, TimeRange, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use storage::{Keeping, Marker, RollupSpans, StoreError};

/// One device's rollups, with the hour items last read: an hour's block
/// holds readings whose raw items TTL may have deleted, and an hour whose
/// new item equals the one stored is not written again. An hour put is
/// conditional on the item read, so that two writers (the rollups function
/// and a batch written as blocks) never write over each other's readings:
/// the loser fails, and its caller retries or falls back.
pub struct DynamoSpans<'a> {
    store: &'a DynamoStore,
    device: &'a DeviceId,
    /// The hour items inside `hours_cover`, by hour.
    hours: BTreeMap<Timestamp, Item>,
    hours_cover: Option<TimeRange>,
    /// A batch being written as blocks (`batch_blocks.rs`): readings as if
    /// they were stored, in time order, one per time.
    batch: Vec<Reading>,
}

impl DynamoStore {
    /// A device's rollups, for the rollups use case.
    pub fn rollup_spans<'a>(&'a self, device: &'a DeviceId) -> DynamoSpans<'a> {
        DynamoSpans {
            store: self,
            device,
            hours: BTreeMap::new(),
            hours_cover: None,
            batch: Vec::new(),
        }
    }
}

impl DynamoSpans<'_> {
    /// The same, with a batch's readings of the device taken as stored.
    pub fn with_batch(mut self, readings: Vec<Reading>) -> Self {
        self.batch = domain::block::normalize(readings);
        self
    }

    /// The batch's readings inside `range`.
    fn batch_within(&self, range: &TimeRange) -> &[Reading] {
        let from = self.batch.partition_point(|r| r.timestamp < range.from());
        let to = self.batch.partition_point(|r| r.timestamp < range.to());
        &self.batch[from..to]
    }
}

impl DynamoSpans<'_> {
    /// Reads the hour items inside `range`, unless those read cover it.
    async fn load_hours(&mut self, range: &TimeRange) -> Result<(), StoreError> {
        if self
            .hours_cover
            .is_some_and(|c| c.from() <= range.from() && range.to() <= c.to())
        {
            return Ok(());
        }
        let items = self.store.hour_items_within(self.device, range).await?;
        self.hours.clear();
        for item in items {
            self.hours.insert(hour_of(&item)?, item);
        }
        self.hours_cover = Some(*range);
        Ok(())
    }

    fn covered(&self, hour: Timestamp) -> bool {
        self.hours_cover
            .is_some_and(|c| c.from() <= hour && hour < c.to())
    }
}

impl RollupSpans for DynamoSpans<'_> {
    type Error = StoreError;
    fn keeping(&self) -> Keeping {
        Keeping::HoursAndDaysBehind
    }

    fn floor(&self) -> Timestamp {
        self.store.recompute_floor()
    }

    async fn readings(&mut self, range: &TimeRange) -> Result<Vec<Reading>, StoreError> {
        self.load_hours(range).await?;
        let mut readings = Vec::new();
        for item in self.hours.range(range.from()..range.to()).map(|(_, i)| i) {
            readings.extend(hour_block(self.device, item)?.unwrap_or_default());
        }
        // The raw items there are newer writes of the same key, or new
        // readings; the batch's, newer still.
        readings.extend(self.store.readings_for_rollups(self.device, range).await?);
        readings.extend(self.batch_within(range).iter().cloned());
        Ok(domain::block::normalize(readings))
    }

    async fn reading_times(
        &mut self,
        range: &TimeRange,
    ) -> Result<Option<(Timestamp, Timestamp)>, StoreError> {
        // Raw or in a block (raw items may be gone).
        self.load_hours(range).await?;
        let in_hours = self.hours.range(range.from()..range.to());
        let first_hour = in_hours.clone().next().map(|(h, _)| *h);
        let last_hour = in_hours
            .last()
            .map(|(h, _)| Span::Hour.end_of(*h).saturating_add_millis(-1));
        let batch = self.batch_within(range);
        let first = [
            self.store.edge_reading(self.device, range, true).await?,
            first_hour,
            batch.first().map(|r| r.timestamp),
        ]
        .into_iter()
        .flatten()
        .min();
        let last = [
            self.store.edge_reading(self.device, range, false).await?,
            last_hour,
            batch.last().map(|r| r.timestamp),
        ]
        .into_iter()
        .flatten()
        .max();
        Ok(first.zip(last))
    }

    async fn first_reading_before(
        &mut self,
        t: Timestamp,
    ) -> Result<Option<Timestamp>, StoreError> {
        let in_batch = self.batch.first().map(|r| r.timestamp).filter(|b| *b < t);
        match TimeRange::new(Timestamp::MIN, t) {
            Ok(before) => Ok([
                self.store.edge_reading(self.device, &before, true).await?,
                in_batch,
            ]
            .into_iter()
            .flatten()
            .min()),
            Err(_) => Ok(None),
        }
    }

    async fn hours_with_readings(
        &mut self,
        from: Timestamp,
    ) -> Result<BTreeSet<Timestamp>, StoreError> {
        let mut hours = self.store.hours_with_readings(self.device, from).await?;
        hours.extend(
            self.batch
                .iter()
                .filter(|r| r.timestamp >= from)
                .map(|r| Span::Hour.start_of(r.timestamp)),
        );
        Ok(hours)
    }

    async fn before(&mut self, span: Span, start: Timestamp) -> Result<Option<Rollup>, StoreError> {
        self.store.rollup_before(self.device, span, start).await
    }

    async fn after(&mut self, span: Span, start: Timestamp) -> Result<Option<Rollup>, StoreError> {
        self.store.rollup_after(self.device, span, start).await
    }

    async fn within(&mut self, span: Span, range: &TimeRange) -> Result<Vec<Rollup>, StoreError> {
        self.store
            .rollups_within(self.device, span, range, true, usize::MAX)
            .await
    }

    async fn starts(
        &mut self,
        span: Span,
        range: &TimeRange,
    ) -> Result<BTreeSet<Timestamp>, StoreError> {
        match span {
            Span::Hour => {
                self.load_hours(range).await?;
                Ok(self
                    .hours
                    .range(range.from()..range.to())
                    .map(|(h, _)| *h)
                    .collect())
            }
            Span::Day => Ok(self
                .within(span, range)
                .await?
                .into_iter()
                .map(|r| r.start)
                .collect()),
        }
    }

    async fn put(
        &mut self,
        rollup: &Rollup,
        readings: &[Reading],
    ) -> Result<Option<f64>, StoreError> {
        match rollup.span {
            Span::Hour => {
                let item = hour_item(self.device, rollup.start, readings, rollup.entering())?;
                // The item is its block and entering chain: equal items, equal rollups.
                if self.hours.get(&rollup.start) == Some(&item) {
                    return Ok(None);
                }
                let read = match self.covered(rollup.start) {
                    true => Expected::Read(self.hours.get(&rollup.start)),
                    false => Expected::Unread,
                };
                let units = self.store.put_hour_item(item.clone(), read).await?;
                if self.covered(rollup.start) {
                    self.hours.insert(rollup.start, item);
                }
                Ok(Some(units))
            }
            Span::Day => self.store.put_rollup(self.device, rollup).await.map(Some),
        }
    }

    async fn put_all(&mut self, rollups: &[(Rollup, &[Reading])]) -> Result<(), StoreError> {
        let mut items = Vec::with_capacity(rollups.len());
        for (rollup, readings) in rollups {
            items.push(match rollup.span {
                Span::Hour => {
                    let item = hour_item(self.device, rollup.start, readings, rollup.entering())?;
                    if self.covered(rollup.start) {
                        self.hours.insert(rollup.start, item.clone());
                    }
                    item
                }
                Span::Day => rollup_item(self.device, rollup)?,
            });
        }
        self.store.put_all(items).await
    }

    async fn delete(&mut self, span: Span, start: Timestamp) -> Result<Option<f64>, StoreError> {
        if span == Span::Hour && self.covered(start) && self.hours.remove(&start).is_none() {
            return Ok(None);
        }
        self.store
            .delete_rollup(self.device, span, start)
            .await
            .map(Some)
    }

    async fn marker(&mut self) -> Result<Option<Marker>, StoreError> {
        self.store.rollup_marker(self.device, true).await
    }

    async fn set_marker(&mut self, marker: Marker) -> Result<(), StoreError> {
        self.store.set_rollup_marker(self.device, marker).await
    }
}
