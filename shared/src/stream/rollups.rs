//! The rollups stream function's handler (docs/rollups.md): the touched
//! (device, hour) pairs of a batch, each device's hours recomputed from the
//! table (`rollups::Upkeep::refresh_rollups`), and `batchItemFailures` naming the
//! first record of the first device that failed.
//!
//! Only the keys of a record matter: the hours are recomputed from what the
//! table holds, never from the record's image. Removals (TTL expiry
//! included) are ignored, since rollups outlive readings; rollup and
//! registry items' own records are not readings and are ignored too.

use super::poison;
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use domain::model::{DeviceId, Timestamp};
use futures_util::StreamExt;
use std::collections::{BTreeMap, BTreeSet};
use storage::keys;
use storage::RollupWrites;
use usecases::rollups::{self, Upkeep};

/// Devices refreshed at once.
const CONCURRENT_DEVICES: usize = 8;

/// What one record asks of the rollups.
#[derive(Debug, PartialEq)]
pub enum Touch {
    /// A reading of this device at this time was written.
    Reading(DeviceId, Timestamp),
    Ignored(&'static str),
    Poison(String),
}

pub fn classify(record: &EventRecord) -> Touch {
    let keys = match super::written(record) {
        super::Written::Reading(keys) => keys,
        super::Written::Ignored(why) => return Touch::Ignored(why),
        super::Written::Poison(why) => return Touch::Poison(why),
    };
    // `written` checked the key is a reading's.
    let Some(at) = keys::parse_reading_sk(&keys.sk) else {
        return Touch::Ignored("not a reading item");
    };
    match DeviceId::parse(&keys.pk) {
        Ok(device) => Touch::Reading(device, at),
        Err(e) => Touch::Poison(format!("pk {:?}: {e}", keys.pk)),
    }
}

/// What one batch did: logged, and measured by the benches.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct BatchReport {
    pub records: usize,
    pub readings: usize,
    pub devices: usize,
    pub writes: RollupWrites,
    pub failed: Option<usize>,
}

/// Handles one batch and says what it did.
pub async fn handle_batch<S: Upkeep>(store: &S, event: &Event) -> BatchReport {
    // Per device: the index of its first record, and its touched hours.
    let mut touched: BTreeMap<DeviceId, (usize, BTreeSet<Timestamp>)> = BTreeMap::new();
    let mut report = BatchReport {
        records: event.records.len(),
        ..BatchReport::default()
    };
    let mut failed: Option<usize> = None;
    for (i, record) in event.records.iter().enumerate() {
        match classify(record) {
            Touch::Reading(device, at) => {
                report.readings += 1;
                let entry = touched.entry(device).or_insert((i, BTreeSet::new()));
                entry.1.insert(domain::model::Span::Hour.start_of(at));
            }
            Touch::Ignored(_) => {}
            Touch::Poison(why) => {
                poison(record, i, why, &mut failed);
            }
        }
    }
    report.devices = touched.len();
    let results: Vec<_> = futures_util::stream::iter(touched)
        .map(|(device, (first, hours))| async move {
            let result = rollups::refresh_hours(store, &device, hours).await;
            (device, first, result)
        })
        .buffer_unordered(CONCURRENT_DEVICES)
        .collect()
        .await;
    for (device, first, result) in results {
        match result {
            Ok(w) => report.writes += w,
            Err(e) => {
                tracing::error!(device = %device, error = %e, "rollup refresh failed");
                failed = Some(failed.map_or(first, |f| f.min(first)));
            }
        }
    }
    report.failed = failed;
    tracing::info!(
        records = report.records,
        readings = report.readings,
        devices = report.devices,
        hour_writes = report.writes.hours,
        day_writes = report.writes.days,
        write_units = report.writes.write_units,
        failed = failed.is_some(),
        "rollup batch"
    );
    report
}

/// The Lambda handler: one batch in, the first failed record out.
pub async fn handle<S: Upkeep>(store: &S, event: Event) -> DynamoDbEventResponse {
    let report = handle_batch(store, &event).await;
    super::failing_at(&event, report.failed)
}
