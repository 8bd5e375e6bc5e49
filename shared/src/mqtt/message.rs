//! An MQTT message through the one ingest: decoded by topic (`payload`),
//! then written as the HTTP write of the same body would be.

use super::payload::{self, Decoded};
use domain::model::{Reading, Timestamp};
use storage::Store;
use usecases::ingest::line_protocol::Precision;
use usecases::ingest::{self, IngestError, Ingested, Wire, MAX_BODY_BYTES};
use usecases::registry::{KnownRooms, RegistryCache};

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
        matches!(
            self,
            MessageError::Ingest(
                IngestError::Unavailable { .. } | IngestError::RegistryUnavailable(_)
            )
        )
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
    let parsed = registry
        .parse_with_rooms(store, |rooms| readings_of(topic, payload, received, rooms))
        .await
        .map_err(|e| IngestError::RegistryUnavailable(e.to_string()))??;
    Ok(ingest::write(store, registry, parsed.readings)
        .await
        .into_ingested(parsed.skipped)?)
}

/// A message's readings, parsed as the HTTP write of the same body would
/// parse them.
pub(super) struct MessageReadings {
    pub readings: Vec<Reading>,
    /// Its lines that carried no quantity of ours.
    pub skipped: ingest::Skipped,
    /// Why it carries no reading, where its shape carries none (a
    /// Zigbee2MQTT bridge topic, a Shelly's `sys`).
    pub nothing: Option<&'static str>,
}

/// A message's readings (`MessageReadings`).
pub(super) fn readings_of(
    topic: &str,
    payload: &[u8],
    received: Timestamp,
    rooms: &KnownRooms,
) -> Result<MessageReadings, MessageError> {
    let wire_body;
    let wire = match payload::decode(topic, payload)? {
        Decoded::Json(b) => {
            if b.len() > MAX_BODY_BYTES {
                return Err(IngestError::TooLarge(format!(
                    "a message of {} bytes; the limit is {MAX_BODY_BYTES}",
                    b.len()
                ))
                .into());
            }
            wire_body = b;
            Wire::Json(&wire_body)
        }
        Decoded::LineProtocol(b) => {
            wire_body = b;
            Wire::LineProtocol {
                body: &wire_body,
                precision: Precision::Nanoseconds,
            }
        }
        Decoded::Nothing(why) => {
            tracing::debug!(topic, why, "message without readings");
            return Ok(MessageReadings {
                readings: Vec::new(),
                skipped: ingest::Skipped::default(),
                nothing: Some(why),
            });
        }
    };
    let (readings, skipped) = ingest::parse(wire, received, rooms)?;
    Ok(MessageReadings {
        readings,
        skipped,
        nothing: None,
    })
}
