//! The mqtt function's scheduled run over IoT Core's Kinesis stream
//! (issue 78; docs/batches.md): every shard read from where the last run
//! stored up to, its records stored by the one ingest
//! (`mqtt::kinesis::StreamSink`), the positions kept. A shard left behind
//! (a record the store could not take, a shard that could not be read)
//! fails the run, for the function's error alarm; the next run reads it
//! again.

use crate::mqtt::kinesis::StreamSink;
use storage::{Store, StreamPositions};
use usecases::registry::{RegistryCache, RegistryUpkeep};
use usecases::stream_reading::{read_stream, ReadReport, ShardSource};

/// Records of a shard in one batch: a quarter hour at 500 records a second
/// (a shard's share, `fleet_cost::RECORDS_A_SHARD_SECOND`), about 400 MB
/// in the function's 1 GB as records, messages and readings. A device's
/// readings of one batch are one block put; a backlog is read in a few.
pub const MAX_RECORDS_A_SHARD: usize = 500_000;

/// Reads the stream `name` once; `Err` names the shards left behind.
pub async fn run<S, R>(
    store: &S,
    registry: &RegistryCache,
    upkeep: &RegistryUpkeep,
    source: &R,
    name: &str,
) -> Result<ReadReport, String>
where
    S: Store + StreamPositions,
    R: ShardSource,
{
    let sink = StreamSink {
        store,
        registry,
        upkeep,
    };
    let report = read_stream(store, name, source, &sink, MAX_RECORDS_A_SHARD)
        .await
        .map_err(|e| format!("the stream's positions: {e}"))?;
    tracing::info!(
        read = report.read,
        stored = report.stored,
        behind = report.behind.len(),
        "stream read"
    );
    match report.behind.is_empty() {
        true => Ok(report),
        false => Err(format!(
            "shards left behind, read again next run: {}",
            report.behind.join(", ")
        )),
    }
}
