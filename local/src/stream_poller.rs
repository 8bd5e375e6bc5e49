//! Plays the part of Lambda's event source mapping against a DynamoDB-compatible
//! endpoint: DescribeStream, GetShardIterator, GetRecords over every shard, each
//! page handed to the registry handler as the Lambda DynamoDB event, with a
//! per-shard checkpoint (kept in a file when one is given).

use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use serde_json::{json, Value};
use shared::aws_lambda_events::event::dynamodb::{Event, EventRecord};
use shared::store::DynamoStore;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One Streams API record in the shape Lambda delivers it.
pub fn lambda_record(
    r: &aws_sdk_dynamodbstreams::types::Record,
    arn: &str,
    region: &str,
) -> Result<EventRecord, String> {
    let change = r.dynamodb().ok_or("a stream record without its change")?;
    let image = |m: Option<
        &std::collections::HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
    >|
     -> Option<Value> {
        m.map(|m| serde_json::to_value(serde_dynamo::Item::from(m.clone())).unwrap_or(Value::Null))
    };
    let mut dynamodb = json!({
        "ApproximateCreationDateTime": change.approximate_creation_date_time().map(|t| t.secs()).unwrap_or(0),
        "Keys": image(change.keys()).unwrap_or(Value::Null),
        "SequenceNumber": change.sequence_number(),
        "SizeBytes": change.size_bytes().unwrap_or(0),
        "StreamViewType": change.stream_view_type().map(|v| v.as_str()).unwrap_or("NEW_AND_OLD_IMAGES"),
    });
    if let Some(new) = image(change.new_image()) {
        dynamodb["NewImage"] = new;
    }
    if let Some(old) = image(change.old_image()) {
        dynamodb["OldImage"] = old;
    }
    let mut record = json!({
        "eventID": r.event_id(),
        "eventName": r.event_name().map(|n| n.as_str()),
        "eventVersion": r.event_version().unwrap_or("1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "eventSourceARN": arn,
        "dynamodb": dynamodb,
    });
    if let Some(identity) = r.user_identity() {
        record["userIdentity"] =
            json!({"type": identity.r#type(), "principalId": identity.principal_id()});
    }
    serde_json::from_value(record).map_err(|e| e.to_string())
}

pub struct StreamPoller {
    streams: aws_sdk_dynamodbstreams::Client,
    region: String,
    /// Last sequence number handled, per shard.
    positions: BTreeMap<String, String>,
    checkpoint: Option<PathBuf>,
    /// Records per GetRecords call (the event source mapping's BatchSize).
    pub batch_size: i32,
    /// What the registry handler remembers between polls (docs/cost.md).
    registry: shared::registry::RegistryUpkeep,
}

impl StreamPoller {
    pub fn new(
        streams: aws_sdk_dynamodbstreams::Client,
        region: impl Into<String>,
        checkpoint: Option<PathBuf>,
    ) -> Self {
        let positions = checkpoint
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Self {
            streams,
            region: region.into(),
            positions,
            checkpoint,
            batch_size: 100,
            registry: shared::registry::RegistryUpkeep::every_update(),
        }
    }

    /// Writes a registry item's latest values again only once they are
    /// `interval` newer (`REGISTRY_LATEST_SECONDS`), as the registry Lambda does.
    pub fn with_registry_interval(mut self, interval: std::time::Duration) -> Self {
        self.registry = shared::registry::RegistryUpkeep::new(interval);
        self
    }

    fn save(&self) {
        if let Some(path) = &self.checkpoint {
            let text = serde_json::to_string_pretty(&self.positions).unwrap_or_default();
            // Write then rename, so a crash never leaves half a checkpoint.
            let tmp = path.with_extension("tmp");
            if std::fs::write(&tmp, text)
                .and_then(|_| std::fs::rename(&tmp, path))
                .is_err()
            {
                tracing::warn!(path = %path.display(), "could not save the stream checkpoint");
            }
        }
    }

    /// Reads what is new on every shard and hands it to the registry and rollups handlers.
    /// Returns how many records were handled.
    pub async fn poll_once(&mut self, store: &DynamoStore) -> Result<usize, String> {
        let described = store
            .client()
            .describe_table()
            .table_name(store.table())
            .send()
            .await
            .map_err(|e| format!("DescribeTable: {e}"))?;
        let arn = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or("the table has no stream")?
            .to_owned();
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let out = self
                .streams
                .describe_stream()
                .stream_arn(&arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(|e| format!("DescribeStream: {e}"))?;
            let desc = out
                .stream_description()
                .ok_or("DescribeStream without a description")?;
            shards.extend(
                desc.shards()
                    .iter()
                    .filter_map(|s| s.shard_id().map(str::to_owned)),
            );
            match desc.last_evaluated_shard_id() {
                Some(id) => start = Some(id.to_owned()),
                None => break,
            }
        }
        let mut handled = 0;
        for shard in shards {
            handled += self.poll_shard(store, &arn, &shard).await?;
        }
        Ok(handled)
    }

    async fn poll_shard(
        &mut self,
        store: &DynamoStore,
        arn: &str,
        shard: &str,
    ) -> Result<usize, String> {
        let mut request = self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard);
        request = match self.positions.get(shard) {
            Some(seq) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let mut iterator = request
            .send()
            .await
            .map_err(|e| format!("GetShardIterator: {e}"))?
            .shard_iterator()
            .map(str::to_owned);
        let mut handled = 0;
        // Bounded: a busy shard is picked up again on the next poll.
        for _ in 0..100 {
            let Some(it) = iterator.take() else { break };
            let page = self
                .streams
                .get_records()
                .shard_iterator(it)
                .limit(self.batch_size)
                .send()
                .await
                .map_err(|e| format!("GetRecords: {e}"))?;
            if page.records().is_empty() {
                break;
            }
            let records = page
                .records()
                .iter()
                .map(|r| lambda_record(r, arn, &self.region))
                .collect::<Result<Vec<_>, _>>()?;
            let seqs: Vec<Option<String>> = records
                .iter()
                .map(|r| r.change.sequence_number.clone())
                .collect();
            let mut event = Event::default();
            event.records = records;
            // Both consumers of the table's stream, as on AWS: the registry and
            // the rollups. Both are idempotent, so the earlier failure of the
            // two is where both resume.
            let registry = shared::stream::handle_with(store, &self.registry, event.clone()).await;
            let rollups = shared::stream::rollups::handle(store, event).await;
            let failed = registry
                .batch_item_failures
                .iter()
                .chain(&rollups.batch_item_failures)
                .filter_map(|f| f.item_identifier.clone())
                .min_by_key(|id| seqs.iter().position(|s| s.as_deref() == Some(id.as_str())));
            match failed {
                None => {
                    if let Some(Some(last)) = seqs.last() {
                        self.positions.insert(shard.to_owned(), last.clone());
                    }
                    handled += seqs.len();
                    self.save();
                }
                Some(failed) => {
                    // Keep the position before the failed record: retried on the next poll.
                    let done = seqs
                        .iter()
                        .take_while(|s| s.as_deref() != Some(failed.as_str()))
                        .count();
                    if done > 0 {
                        if let Some(Some(seq)) = seqs.get(done - 1) {
                            self.positions.insert(shard.to_owned(), seq.clone());
                        }
                    }
                    self.save();
                    return Err(format!("stream handler failed at sequence number {failed}"));
                }
            }
            iterator = page.next_shard_iterator().map(str::to_owned);
        }
        Ok(handled)
    }
}
