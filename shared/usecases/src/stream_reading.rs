//! Reading an outside stream into the store (issue 78; docs/batches.md):
//! AWS IoT Core's rule puts every message of the devices that publish one
//! reading at a time on a Kinesis stream, and the mqtt function reads it
//! every few minutes, so that each run holds minutes of every device and
//! writes a device's hour as one block put, not an item a reading.
//!
//! Lambda's own Kinesis trigger hands over at most 10,000 records a batch:
//! at 10,000 devices a minute, a minute, one reading a device, and the hour
//! block would be put once a reading. Hence this reader, run on a schedule:
//!
//! - every shard is read from where the last run stored up to, a shard
//!   split or merged (closed) before its children, so a device's readings
//!   come in order;
//! - the records go to the sink (the MQTT edge's ingest) in one batch a
//!   shard, which says how many from the start are stored: up to the first
//!   one the store could not take;
//! - the position moves past those alone, so the next run reads the rest
//!   again (a record stored twice is the same key: it keeps its receive
//!   time), and a shard read to its end is marked so.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use storage::{ShardPosition, StoreError, StreamPositions};

/// A record of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRecord {
    pub sequence: String,
    pub data: Vec<u8>,
}

/// A shard, and the shards it came from (a split's one, a merge's two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub id: String,
    pub parents: Vec<String>,
}

/// A shard's records from a position on.
#[derive(Debug, Default)]
pub struct ShardRead {
    pub records: Vec<StreamRecord>,
    /// The shard is closed and nothing is left after these.
    pub ended: bool,
}

/// Where the records come from (Kinesis, `shared::sdk::kinesis`).
pub trait ShardSource {
    fn shards(&self) -> impl Future<Output = Result<Vec<Shard>, String>> + Send;
    /// Up to about `max` records after `after` (from the oldest kept when
    /// `None`), as far as the shard holds now.
    fn read(
        &self,
        shard: &str,
        after: Option<&str>,
        max: usize,
    ) -> impl Future<Output = Result<ShardRead, String>> + Send;
}

/// Where the records go: how many from the start of `records` are stored.
pub trait RecordSink {
    fn store(&self, records: &[StreamRecord]) -> impl Future<Output = usize> + Send;
}

/// What a run did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Records read, and stored (or passed as never storable).
    pub read: usize,
    pub stored: usize,
    /// Shards whose records are not all stored, or that could not be read:
    /// read again by the next run. The run fails, for the alarm.
    pub behind: Vec<String>,
}

/// Batches of a shard a run reads at most.
pub const BATCHES_A_RUN: usize = 3;

/// Reads every shard of `stream` from its position, batches of at most
/// `max` records, into `sink`, and keeps the positions.
pub async fn read_stream<P, R, K>(
    positions: &P,
    stream: &str,
    source: &R,
    sink: &K,
    max: usize,
) -> Result<ReadReport, StoreError>
where
    P: StreamPositions,
    R: ShardSource,
    K: RecordSink,
{
    let mut kept = positions.stream_positions(stream).await?;
    let shards = source
        .shards()
        .await
        .map_err(|e| StoreError::Unavailable(format!("the stream's shards: {e}")))?;
    let mut report = ReadReport::default();
    let listed: BTreeSet<&str> = shards.iter().map(|s| s.id.as_str()).collect();
    for shard in in_order(&shards) {
        // A child waits for its parents to be read to their ends (a parent
        // past the stream's retention is no longer listed: nothing to wait for).
        let waiting = shard.parents.iter().any(|p| {
            listed.contains(p.as_str()) && kept.get(p.as_str()) != Some(&ShardPosition::Ended)
        });
        if waiting || kept.get(&shard.id) == Some(&ShardPosition::Ended) {
            continue;
        }
        // A shard behind by more than a batch (a backlog after an outage)
        // is read in a few batches a run.
        for _ in 0..BATCHES_A_RUN {
            let after = match kept.get(&shard.id) {
                Some(ShardPosition::After(sequence)) => Some(sequence.clone()),
                _ => None,
            };
            let read = match source.read(&shard.id, after.as_deref(), max).await {
                Ok(read) => read,
                Err(e) => {
                    tracing::error!(shard = %shard.id, error = %e, "shard not read");
                    report.behind.push(shard.id.clone());
                    break;
                }
            };
            let stored = match read.records.is_empty() {
                true => 0,
                false => sink.store(&read.records).await,
            };
            report.read += read.records.len();
            report.stored += stored;
            let all = stored == read.records.len();
            let position = if all && read.ended {
                Some(ShardPosition::Ended)
            } else if stored > 0 {
                Some(ShardPosition::After(
                    read.records[stored - 1].sequence.clone(),
                ))
            } else {
                None
            };
            if let Some(position) = position {
                positions
                    .save_stream_position(stream, &shard.id, &position)
                    .await?;
                kept.insert(shard.id.clone(), position);
            }
            if !all {
                report.behind.push(shard.id.clone());
                break;
            }
            if read.ended || read.records.len() < max {
                break;
            }
        }
    }
    Ok(report)
}

/// Parents before their children; otherwise as listed.
fn in_order(shards: &[Shard]) -> Vec<&Shard> {
    let by_id: BTreeMap<&str, &Shard> = shards.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut out = Vec::with_capacity(shards.len());
    let mut placed = BTreeSet::new();
    fn place<'a>(
        shard: &'a Shard,
        by_id: &BTreeMap<&str, &'a Shard>,
        placed: &mut BTreeSet<&'a str>,
        out: &mut Vec<&'a Shard>,
    ) {
        if !placed.insert(shard.id.as_str()) {
            return;
        }
        for parent in &shard.parents {
            if let Some(p) = by_id.get(parent.as_str()) {
                place(p, by_id, placed, out);
            }
        }
        out.push(shard);
    }
    for shard in shards {
        place(shard, &by_id, &mut placed, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Positions in memory.
    #[derive(Default)]
    struct Kept(Mutex<BTreeMap<String, ShardPosition>>);

    impl StreamPositions for Kept {
        async fn stream_positions(
            &self,
            _: &str,
        ) -> Result<BTreeMap<String, ShardPosition>, StoreError> {
            Ok(self.0.lock().unwrap().clone())
        }
        async fn save_stream_position(
            &self,
            _: &str,
            shard: &str,
            position: &ShardPosition,
        ) -> Result<(), StoreError> {
            self.0
                .lock()
                .unwrap()
                .insert(shard.into(), position.clone());
            Ok(())
        }
    }

    /// Shards of numbered records; `closed` shards end.
    struct Source {
        shards: Vec<(Shard, Vec<u32>, bool)>,
    }

    impl ShardSource for Source {
        async fn shards(&self) -> Result<Vec<Shard>, String> {
            Ok(self.shards.iter().map(|(s, _, _)| s.clone()).collect())
        }
        async fn read(
            &self,
            id: &str,
            after: Option<&str>,
            max: usize,
        ) -> Result<ShardRead, String> {
            let (_, records, closed) = self.shards.iter().find(|(s, _, _)| s.id == id).unwrap();
            let after: Option<u32> = after.map(|a| a.parse().unwrap());
            let rest: Vec<StreamRecord> = records
                .iter()
                .filter(|n| after.is_none_or(|a| **n > a))
                .map(|n| StreamRecord {
                    sequence: n.to_string(),
                    data: vec![],
                })
                .collect();
            let ended = *closed && rest.len() <= max;
            Ok(ShardRead {
                records: rest.into_iter().take(max).collect(),
                ended,
            })
        }
    }

    /// Stores records in order; fails at `fail_at` (a sequence number).
    struct Sink {
        stored: Mutex<Vec<u32>>,
        fail_at: Mutex<Option<u32>>,
    }

    impl RecordSink for Sink {
        async fn store(&self, records: &[StreamRecord]) -> usize {
            let fail_at = *self.fail_at.lock().unwrap();
            let mut n = 0;
            for r in records {
                let seq: u32 = r.sequence.parse().unwrap();
                if Some(seq) == fail_at {
                    break;
                }
                self.stored.lock().unwrap().push(seq);
                n += 1;
            }
            n
        }
    }

    fn shard(id: &str, parents: &[&str]) -> Shard {
        Shard {
            id: id.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// A split shard is read to its end before its children; a record the
    /// sink could not store keeps the position before it, and the next run
    /// reads from there; a shard past the budget goes on next run.
    #[tokio::test]
    async fn shards_are_read_parents_first_and_from_the_first_record_not_stored() {
        let source = Source {
            shards: vec![
                (shard("child-a", &["parent"]), vec![20, 21], false),
                (shard("parent", &[]), vec![1, 2, 3, 4], true),
                (shard("child-b", &["parent"]), vec![30, 31, 32], false),
            ],
        };
        let kept = Kept::default();
        let sink = Sink {
            stored: Mutex::new(vec![]),
            fail_at: Mutex::new(Some(3)),
        };
        let first = read_stream(&kept, "s", &source, &sink, 10).await.unwrap();
        // The parent stopped at 3: its children wait.
        assert_eq!(*sink.stored.lock().unwrap(), [1, 2]);
        assert_eq!(first.behind, ["parent"]);
        assert_eq!(
            kept.0.lock().unwrap().get("parent"),
            Some(&ShardPosition::After("2".into()))
        );
        *sink.fail_at.lock().unwrap() = None;
        let second = read_stream(&kept, "s", &source, &sink, 2).await.unwrap();
        assert_eq!(second.behind, Vec::<String>::new());
        // From 3 on; the parent ended, so its children follow; child-b
        // holds three records, read in two batches of two at most.
        assert_eq!(
            *sink.stored.lock().unwrap(),
            [1, 2, 3, 4, 20, 21, 30, 31, 32]
        );
        assert_eq!(
            kept.0.lock().unwrap().get("parent"),
            Some(&ShardPosition::Ended)
        );
        // Nothing new: nothing read.
        let idle = read_stream(&kept, "s", &source, &sink, 2).await.unwrap();
        assert_eq!((idle.read, idle.stored), (0, 0));
        // A backlog past three batches waits for the next run.
        let long = Source {
            shards: vec![(shard("long", &[]), (1..=7).collect(), false)],
        };
        let kept = Kept::default();
        let sink = Sink {
            stored: Mutex::new(vec![]),
            fail_at: Mutex::new(None),
        };
        read_stream(&kept, "s", &long, &sink, 2).await.unwrap();
        assert_eq!(*sink.stored.lock().unwrap(), [1, 2, 3, 4, 5, 6]);
        read_stream(&kept, "s", &long, &sink, 2).await.unwrap();
        assert_eq!(*sink.stored.lock().unwrap(), [1, 2, 3, 4, 5, 6, 7]);
    }
}
