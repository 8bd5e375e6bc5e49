//! IoT Core's Kinesis stream, read by the mqtt function's scheduled run
//! (`usecases::stream_reading`; docs/batches.md): its shards, and a
//! shard's records after a position, with the SDK's standard retry (it
//! backs off from a shard's five reads a second).

use aws_sdk_kinesis::types::ShardIteratorType;
use aws_sdk_kinesis::Client;
use usecases::stream_reading::{Shard, ShardRead, ShardSource, StreamRecord};

/// Records a GetRecords call returns at most.
const PAGE: usize = 10_000;
/// Empty pages in a row a read tolerates while the shard says it is
/// behind (Kinesis may answer empty pages before reaching records).
const EMPTY_PAGES: usize = 10;

/// A stream, by name.
pub struct KinesisStream {
    pub client: Client,
    pub name: String,
}

fn error(e: impl std::error::Error) -> String {
    aws_sdk_kinesis::error::DisplayErrorContext(e).to_string()
}

impl ShardSource for KinesisStream {
    async fn shards(&self) -> Result<Vec<Shard>, String> {
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        loop {
            // The name and a page token may not go together.
            let call = match next.take() {
                Some(token) => self.client.list_shards().next_token(token),
                None => self.client.list_shards().stream_name(&self.name),
            };
            let page = call.send().await.map_err(error)?;
            for s in page.shards() {
                let parents = [s.parent_shard_id(), s.adjacent_parent_shard_id()];
                out.push(Shard {
                    id: s.shard_id().to_owned(),
                    parents: parents.into_iter().flatten().map(str::to_owned).collect(),
                });
            }
            match page.next_token() {
                Some(token) => next = Some(token.to_owned()),
                None => return Ok(out),
            }
        }
    }

    async fn read(
        &self,
        shard: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<ShardRead, String> {
        let call = self
            .client
            .get_shard_iterator()
            .stream_name(&self.name)
            .shard_id(shard);
        let call = match after {
            Some(sequence) => call
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .starting_sequence_number(sequence),
            None => call.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let mut iterator = call.send().await.map_err(error)?.shard_iterator;
        let mut out = ShardRead::default();
        let mut empty = 0;
        while let Some(it) = iterator.take() {
            if out.records.len() >= max {
                break;
            }
            let limit = PAGE.min(max - out.records.len()) as i32;
            let page = self
                .client
                .get_records()
                .shard_iterator(it)
                .limit(limit)
                .send()
                .await
                .map_err(error)?;
            let records = page.records();
            out.records.extend(records.iter().map(|r| StreamRecord {
                sequence: r.sequence_number().to_owned(),
                data: r.data().as_ref().to_vec(),
            }));
            iterator = page.next_shard_iterator().map(str::to_owned);
            // No next iterator: the shard is closed and read to its end.
            out.ended = iterator.is_none();
            if records.is_empty() {
                empty += 1;
                let caught_up = page.millis_behind_latest().unwrap_or(0) == 0;
                if caught_up || empty >= EMPTY_PAGES {
                    break;
                }
            } else {
                empty = 0;
            }
        }
        Ok(out)
    }
}
