//! Batches written as hour blocks (issue 78, docs/batches.md): a device's
//! readings of a request write each of their hours' items (block and
//! entering chain) and what follows from them (the day, the marker),
//! folded by the rollups use case's own `refresh` over the hour's stored
//! block and raw items plus the batch, with no item per reading. The hour
//! puts are conditional on the item read (`rollup_spans.rs`), so this and
//! the rollups function never write over each other's readings.

use crate::DynamoStore;
use domain::model::{DeviceId, Reading, Span, Timestamp};
use domain::rollup_upkeep::refresh;
use std::collections::BTreeSet;
use storage::{ReadingStore, StoreError};

impl DynamoStore {
    /// `ReadingStore::write_hour_blocks`.
    pub(crate) async fn hour_blocks_of(
        &self,
        device: &DeviceId,
        readings: &[Reading],
    ) -> Result<(), StoreError> {
        // Hours past retention get no rollup: as items, they expire at once.
        let floor = self.recompute_floor();
        let (kept, old): (Vec<Reading>, Vec<Reading>) =
            readings.iter().cloned().partition(|r| r.timestamp >= floor);
        if !old.is_empty() {
            let report = self.write_readings(&old).await;
            if !report.unwritten.is_empty() {
                return Err(StoreError::Unavailable(format!(
                    "{} readings of {device} not written",
                    report.unwritten.len()
                )));
            }
        }
        let hours: BTreeSet<Timestamp> = kept
            .iter()
            .map(|r| Span::Hour.start_of(r.timestamp))
            .collect();
        if hours.is_empty() {
            return Ok(());
        }
        let mut spans = self.rollup_spans(device).with_batch(kept);
        // Boxed: a deep future, polled under the ingest handler's.
        Box::pin(refresh(&mut spans, hours)).await.map(|_| ())
    }
}
