//! Records of AWS IoT Core's Kinesis stream (issue 78; docs/batches.md),
//! stored: devices publish through Basic Ingest
//! (`$aws/rules/<rule>/readings/<device>`), a topic rule puts each message
//! on the stream (keyed by its topic, so a device's messages keep their
//! order), and the mqtt function's scheduled run reads minutes of it at a
//! time (`schedule::mqtt_stream`): one block put a device and hour.
//!
//! A record is the rule's message (`RuleMessage`, the same SQL as the
//! per-message rule), so a record read again keeps its receive time and is
//! stored once. A record that can never be stored is logged and passed;
//! the records before the first one the store could not take are stored,
//! and the reader reads from that one again.

use super::iot_rule::RuleMessage;
use super::{ingest_messages, Message};
use domain::batch_hours::Hours;
use storage::Store;
use usecases::ingest::Batching;
use usecases::registry::{RegistryCache, RegistryUpkeep};
use usecases::stream_reading::{RecordSink, StreamRecord};

/// Where the stream's records go: the one ingest, a run's records of a
/// shard in one batch, the open hour written as blocks, the registry's
/// latest values kept by the warm function's memory.
pub struct StreamSink<'a, S> {
    pub store: &'a S,
    pub registry: &'a RegistryCache,
    pub upkeep: &'a RegistryUpkeep,
}

/// A record's message and payload, or why it is none.
fn message_of(record: &StreamRecord) -> Result<(RuleMessage, Vec<u8>), String> {
    let message: RuleMessage = serde_json::from_slice(&record.data)
        .map_err(|e| format!("the record is not the rule's message: {e}"))?;
    let payload = message.payload_bytes()?;
    Ok((message, payload))
}

impl<S: Store> RecordSink for StreamSink<'_, S> {
    async fn store(&self, records: &[StreamRecord]) -> usize {
        let decoded: Vec<(usize, RuleMessage, Vec<u8>)> = records
            .iter()
            .enumerate()
            .filter_map(|(i, record)| match message_of(record) {
                Ok((message, payload)) => Some((i, message, payload)),
                Err(reason) => {
                    tracing::warn!(sequence = %record.sequence, reason = %reason, "record rejected");
                    None
                }
            })
            .collect();
        let messages: Vec<Message<'_>> = decoded
            .iter()
            .map(|(_, message, payload)| Message {
                topic: &message.topic,
                payload,
                received: message.received_at(),
            })
            .collect();
        let batching = Batching {
            hours: Hours::Any,
            upkeep: Some(self.upkeep),
        };
        let outcomes = ingest_messages(self.store, self.registry, &messages, batching).await;
        let mut stored = records.len();
        for ((i, message, _), outcome) in decoded.iter().zip(outcomes) {
            match outcome {
                Ok(_) => {}
                Err(e) if e.may_succeed_later() => {
                    if *i < stored {
                        tracing::error!(topic = %message.topic, error = %e, "message not stored; read again");
                        stored = *i;
                    }
                }
                Err(e) => {
                    tracing::warn!(topic = %message.topic, reason = %e.detail(), "message rejected");
                }
            }
        }
        stored
    }
}
