//! The DynamoDB Streams edge: records → reading changes → one registry update
//! per device and room → `batchItemFailures` naming the first failed record.

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use domain::model::Reading;
use dynamodb::item::ReadingItem;
use serde::Deserialize;
use storage::Store;
use usecases::registry;

/// What a stream record means to the registry.
#[derive(Debug, PartialEq)]
pub enum Change {
    /// A reading was inserted or modified.
    Reading(Box<Reading>),
    /// Nothing to do: a deletion (TTL or manual), a registry item's own record, another item type.
    Ignored(&'static str),
    /// A reading item that does not decode.
    Poison(String),
}

#[derive(Deserialize)]
pub(crate) struct Keys {
    pub(crate) pk: String,
    pub(crate) sk: String,
}

/// What a record is to every consumer of the stream: a reading written
/// (inserted or modified) with its keys, nothing to act on, or undecodable.
pub(crate) enum Written {
    Reading(Keys),
    Ignored(&'static str),
    Poison(String),
}

pub(crate) fn written(record: &EventRecord) -> Written {
    match record.event_name.as_str() {
        "INSERT" | "MODIFY" => {}
        // Deletions never make the registry forget, nor touch rollups (TTL expiry included).
        "REMOVE" => return Written::Ignored("removal"),
        _ => return Written::Poison(format!("unknown eventName {:?}", record.event_name)),
    }
    let keys: Keys = match serde_dynamo::from_item(record.change.keys.clone()) {
        Ok(k) => k,
        Err(e) => return Written::Poison(format!("keys: {e}")),
    };
    if !ReadingItem::is_reading_key(&keys.pk, &keys.sk) {
        return Written::Ignored("not a reading item");
    }
    Written::Reading(keys)
}

pub fn classify(record: &EventRecord) -> Change {
    match written(record) {
        Written::Reading(_) => {}
        Written::Ignored(why) => return Change::Ignored(why),
        Written::Poison(why) => return Change::Poison(why),
    }
    match serde_dynamo::from_item::<_, ReadingItem>(record.change.new_image.clone()) {
        Ok(item) => match item.into_reading() {
            Ok(r) => Change::Reading(Box::new(r)),
            Err(e) => Change::Poison(e),
        },
        Err(e) => Change::Poison(format!("new image: {e}")),
    }
}

/// Handles one batch, writing every update (`RegistryUpkeep::every_update`).
pub async fn handle<S: Store>(store: &S, event: Event) -> DynamoDbEventResponse {
    handle_with(store, &registry::RegistryUpkeep::every_update(), event).await
}

/// Handles one batch, writing the updates `upkeep` finds worth a write.
/// Records before the first failure are done; Lambda retries from the
/// reported record (updates are idempotent, so re-applying is harmless).
pub async fn handle_with<S: Store>(
    store: &S,
    upkeep: &registry::RegistryUpkeep,
    event: Event,
) -> DynamoDbEventResponse {
    let mut changes = Vec::with_capacity(event.records.len());
    let mut failed: Option<usize> = None;
    for (i, record) in event.records.iter().enumerate() {
        match classify(record) {
            Change::Reading(r) => changes.push((i, *r)),
            Change::Ignored(_) => {}
            Change::Poison(why) => {
                poison(record, i, why, &mut failed);
            }
        }
    }
    let plan = domain::registry::plan(changes.iter().map(|(i, r)| (*i, r)));
    let (failures, writes) = upkeep.apply(store, plan).await;
    if let Some(first) = failures.into_iter().min() {
        failed = Some(failed.map_or(first, |f| f.min(first)));
    }
    tracing::info!(
        records = event.records.len(),
        readings = changes.len(),
        writes,
        failed = failed.is_some(),
        "stream batch"
    );
    failing_at(&event, failed)
}

/// A record neither consumer can read: logged, and the batch fails from it
/// on (the earliest failed record is what Lambda retries from).
pub(crate) fn poison(
    record: &EventRecord,
    i: usize,
    why: impl std::fmt::Display,
    failed: &mut Option<usize>,
) {
    tracing::error!(
        record = i,
        sequence = record.change.sequence_number.as_deref().unwrap_or("?"),
        why = %why,
        "poison record"
    );
    *failed = Some(failed.map_or(i, |f| f.min(i)));
}

/// The answer to Lambda: the record to retry from, if one failed.
pub(crate) fn failing_at(event: &Event, failed: Option<usize>) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    if let Some(i) = failed {
        let mut failure = DynamoDbBatchItemFailure::default();
        // An empty identifier makes Lambda retry the whole batch, the safe fallback.
        failure.item_identifier = Some(
            event.records[i]
                .change
                .sequence_number
                .clone()
                .unwrap_or_default(),
        );
        response.batch_item_failures.push(failure);
    }
    response
}

pub mod rollups;
