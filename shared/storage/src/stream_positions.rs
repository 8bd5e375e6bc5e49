//! Where a reader of an outside stream is (issue 78; docs/batches.md): the
//! mqtt function reads AWS IoT Core's Kinesis stream every few minutes and
//! keeps, per shard, the last record it stored, so the next run reads from
//! there (a run that failed is read again; nothing acknowledged is lost).
//! DynamoDB keeps them, in the partition `STREAM#<stream>` (`keys`); the
//! embedded store reads no stream.

use super::StoreError;
use std::collections::BTreeMap;
use std::future::Future;

/// How far a shard is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardPosition {
    /// Up to and including the record of this sequence number.
    After(String),
    /// To its end: a closed shard (split or merged) with nothing left.
    Ended,
}

pub trait StreamPositions {
    /// Every shard's position that is kept, by shard id.
    fn stream_positions(
        &self,
        stream: &str,
    ) -> impl Future<Output = Result<BTreeMap<String, ShardPosition>, StoreError>> + Send;
    /// Keeps a shard's position.
    fn save_stream_position(
        &self,
        stream: &str,
        shard: &str,
        position: &ShardPosition,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
