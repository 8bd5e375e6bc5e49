//! A batch's closed hours written as hour blocks (issue 78,
//! docs/batches.md), where the store offers it: each device's hours the
//! domain's rule picks (`domain::batch_hours`) go into their blocks and
//! rollups, and the registry is brought up to date from them here (no
//! reading item reaches the stream for the registry function to see). What
//! fails of either is written as items, the path every reading can take:
//! reads and rollups take a reading in a block and as an item as one.

use domain::batch_hours;
use domain::model::{Reading, Timestamp};
use futures_util::StreamExt;
use std::collections::BTreeSet;
use storage::{Deduped, Store, WriteReport};

/// Devices whose hours are written at once.
const DEVICE_CONCURRENCY: usize = 8;

/// Writes `readings`, closed hours as blocks and the rest as items; the
/// report's indices are into `readings`.
pub async fn write<S: Store>(store: &S, readings: Vec<Reading>, now: Timestamp) -> WriteReport {
    let split = batch_hours::split(&readings, now);
    if split.blocks.is_empty() {
        return store.write_owned_readings(readings).await;
    }
    let readings = &readings;
    let results: Vec<_> = futures_util::stream::iter(split.blocks)
        .map(|(device, idx)| async move {
            let batch: Vec<Reading> = idx.iter().map(|&i| readings[i].clone()).collect();
            let result = store.write_hour_blocks(&device, &batch).await;
            if let Err(e) = &result {
                tracing::warn!(device = %device, error = %e, "hours not written as blocks: as items");
            }
            (idx, result.is_ok())
        })
        .buffer_unordered(DEVICE_CONCURRENCY)
        .collect()
        .await;
    let mut items = split.items;
    let mut in_blocks = Vec::new();
    for (idx, ok) in results {
        match ok {
            true => in_blocks.extend(idx),
            false => items.extend(idx),
        }
    }
    // The registry, from the readings in blocks; a device whose update
    // failed has its readings written as items too, for the stream to redo.
    let plan = domain::registry::plan(in_blocks.iter().map(|&i| (i, &readings[i])));
    let failed: BTreeSet<&str> = crate::registry::apply(store, &plan)
        .await
        .into_iter()
        .map(|i| readings[i].device_id.as_str())
        .collect();
    let (redo, in_blocks): (Vec<usize>, Vec<usize>) = in_blocks
        .into_iter()
        .partition(|&i| failed.contains(readings[i].device_id.as_str()));
    items.extend(redo);
    items.sort_unstable();
    items.dedup();
    let as_items: Vec<Reading> = items.iter().map(|&i| readings[i].clone()).collect();
    let report = store.write_owned_readings(as_items).await;
    let in_blocks: Vec<Reading> = in_blocks.iter().map(|&i| readings[i].clone()).collect();
    let deduped = Deduped::new(&in_blocks);
    WriteReport {
        unwritten: report.unwritten.iter().map(|&j| items[j]).collect(),
        items_written: report.items_written + deduped.winners.len(),
        duplicates: report.duplicates + (in_blocks.len() - deduped.winners.len()),
    }
}
