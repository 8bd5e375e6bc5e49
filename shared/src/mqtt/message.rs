//! An MQTT message through the one ingest: decoded by topic (`payload`),
//! then written as the HTTP write of the same body would be.

use super::payload::{self, Decoded};
use crate::ingest::line_protocol::Precision;
use crate::ingest::{ingest, IngestError, Ingested, Wire, MAX_BODY_BYTES};
use crate::model::Timestamp;
use crate::registry::RegistryCache;
use crate::store::Store;

/// Why an MQTT message was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// It can never be: acknowledge it, log and count it.
    #[error(transparent)]
    Decode(#[from] payload::MqttError),
    /// As an HTTP write would fail; `IngestError::Unavailable` may succeed
    /// later (keep the message), the rest never will.
    #[error(transparent)]
    Ingest(#[from] IngestError),
}

impl MessageError {
    /// Whether delivering the message again may store it (the store was
    /// unavailable), rather than fail the same way.
    pub fn may_succeed_later(&self) -> bool {
        matches!(self, MessageError::Ingest(IngestError::Unavailable { .. }))
    }

    /// What is wrong, and where, for a log line (never the payload).
    pub fn detail(&self) -> String {
        match self {
            MessageError::Ingest(IngestError::Invalid(problems)) => problems
                .iter()
                .map(|p| format!("reading {}: {}: {}", p.index, p.field, p.message))
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        }
    }
}

/// Decodes an MQTT message (`payload::decode`) and ingests it as the HTTP
/// write of the same body would be; a payload without a time takes
/// `received`.
pub async fn ingest_message<S: Store>(
    store: &S,
    registry: &RegistryCache,
    topic: &str,
    payload: &[u8],
    received: Timestamp,
) -> Result<Ingested, MessageError> {
    let body = match payload::decode(topic, payload)? {
        Decoded::Json(b) => b,
        Decoded::LineProtocol(b) => {
            return Ok(ingest(
                store,
                registry,
                Wire::LineProtocol {
                    body: &b,
                    precision: Precision::Nanoseconds,
                },
                received,
            )
            .await?)
        }
        Decoded::Nothing(why) => {
            tracing::debug!(topic, why, "message without readings");
            return Ok(Ingested {
                written: 0,
                duplicates: 0,
                skipped_lines: 0,
            });
        }
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(IngestError::TooLarge(format!(
            "a message of {} bytes; the limit is {MAX_BODY_BYTES}",
            body.len()
        ))
        .into());
    }
    Ok(ingest(store, registry, Wire::Json(&body), received).await?)
}
