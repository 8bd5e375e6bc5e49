//! A batch written as hour blocks (issue 78, docs/batches.md), where the
//! store offers it: the devices the domain's rule picks
//! (`domain::batch_hours`) go into their hours' blocks and
//! rollups, and the registry is brought up to date from them here (no
//! reading item reaches the stream for the registry function to see). An
//! hour the rollups function wrote meanwhile (a conflict), or a registry
//! update that failed, sends the device's readings as items, the path every
//! reading can take: reads and rollups take a reading in a block and as an
//! item as one. A store out of its budget reports the readings unwritten.

use crate::registry::RegistryUpkeep;
use domain::batch_hours::{self, Hours};
use domain::model::{Reading, Timestamp};
use futures_util::StreamExt;
use std::collections::BTreeSet;
use storage::{Deduped, Store, StoreError, WriteReport};

/// What became of a device's hours.
enum Outcome {
    Blocks,
    Items,
    Unwritten,
}

/// Devices whose hours are written at once.
const DEVICE_CONCURRENCY: usize = 8;

/// How a batch goes as blocks: which hours count (a request's closed
/// hours, or a stream window's open one), and whether the registry is
/// written every batch or kept by a warm function's memory
/// (`RegistryUpkeep`: a device's latest values at most once an interval,
/// as the registry function keeps them; what makes a stream's windows
/// cheap, docs/batches.md).
#[derive(Clone, Copy, Default)]
pub struct Batching<'a> {
    pub hours: Hours,
    pub upkeep: Option<&'a RegistryUpkeep>,
}

/// Writes `readings`, the devices the rule picks as blocks and the rest as
/// items; the report's indices are into `readings`.
pub async fn write<S: Store>(
    store: &S,
    readings: Vec<Reading>,
    now: Timestamp,
    batching: Batching<'_>,
) -> WriteReport {
    let split = batch_hours::split(&readings, now, batching.hours);
    if split.blocks.is_empty() {
        return store.write_owned_readings(readings).await;
    }
    let readings = &readings;
    let results: Vec<_> = futures_util::stream::iter(split.blocks)
        .map(|(device, idx)| async move {
            let batch: Vec<Reading> = idx.iter().map(|&i| readings[i].clone()).collect();
            let outcome = match store.write_hour_blocks(&device, &batch).await {
                Ok(()) => Outcome::Blocks,
                // The rollups function wrote an hour meanwhile: as items,
                // which it folds in turn.
                Err(StoreError::Conflict(e)) => {
                    tracing::info!(device = %device, error = %e, "hours written as items");
                    Outcome::Items
                }
                // The store's budget is spent: reported, for the client to
                // send again (some hours may be written; again is harmless).
                Err(e) => {
                    tracing::warn!(device = %device, error = %e, "hours not written");
                    Outcome::Unwritten
                }
            };
            (idx, outcome)
        })
        .buffer_unordered(DEVICE_CONCURRENCY)
        .collect()
        .await;
    let mut items = split.items;
    let (mut in_blocks, mut unwritten) = (Vec::new(), Vec::new());
    for (idx, outcome) in results {
        match outcome {
            Outcome::Blocks => in_blocks.extend(idx),
            Outcome::Items => items.extend(idx),
            Outcome::Unwritten => unwritten.extend(idx),
        }
    }
    // The registry, from the readings in blocks; a device whose update
    // failed has its readings written as items too, for the stream to redo.
    let plan = domain::registry::plan(in_blocks.iter().map(|&i| (i, &readings[i])));
    let failed = match batching.upkeep {
        Some(upkeep) => upkeep.apply(store, plan).await.0,
        None => crate::registry::apply(store, &plan).await,
    };
    let failed: BTreeSet<&str> = failed
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
        unwritten: {
            unwritten.extend(report.unwritten.iter().map(|&j| items[j]));
            unwritten.sort_unstable();
            unwritten
        },
        items_written: report.items_written + deduped.winners.len(),
        duplicates: report.duplicates + (in_blocks.len() - deduped.winners.len()),
    }
}
