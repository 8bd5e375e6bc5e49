//! The AWS IoT Core edge (issue 26; docs/mqtt.md): a topic rule's Lambda
//! action delivers each message as `{"payload": <base64>, "topic": ...,
//! "received": <epoch ms>}` (the rule's SQL: `SELECT encode(*, 'base64') AS
//! payload, topic() AS topic, timestamp() AS received FROM '<filter>'`).
//! The message goes through `ingest::ingest_message`, as a home broker's
//! does. A message that can never be stored is logged with its topic and
//! reason (never its payload) and answered, so it is not retried; one the
//! store could not take fails the invocation, so Lambda retries it and then
//! hands it to the function's failure queue.

use super::{ingest_message, MessageError};
use base64::Engine;
use domain::model::Timestamp;
use serde::{Deserialize, Serialize};
use storage::Store;
use usecases::ingest::Ingested;
use usecases::registry::RegistryCache;

/// One message, as the topic rule sends it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RuleMessage {
    pub topic: String,
    /// The payload, base64 (any bytes: JSON or line protocol).
    pub payload: String,
    /// When IoT Core received it, epoch milliseconds.
    pub received: i64,
}

impl RuleMessage {
    /// The payload's bytes, or why the rule's base64 is not.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.payload)
            .map_err(|e| format!("the rule's payload is not base64: {e}"))
    }

    /// When IoT Core received it: the time of a payload that carries none.
    /// The rule's, so a message delivered again keeps it.
    pub fn received_at(&self) -> Timestamp {
        Timestamp::from_millis(self.received).unwrap_or_else(|_| Timestamp::now())
    }
}

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleOutcome {
    pub written: usize,
    pub duplicates: usize,
    /// Why the message can never be stored (`None`: it was).
    pub rejected: Option<String>,
}

/// Handles one message; `Err` only where delivering it again may succeed.
pub async fn handle<S: Store>(
    store: &S,
    registry: &RegistryCache,
    message: &RuleMessage,
) -> Result<RuleOutcome, MessageError> {
    let rejected = |reason: String| {
        tracing::warn!(topic = %message.topic, reason = %reason, "message rejected");
        Ok(RuleOutcome {
            written: 0,
            duplicates: 0,
            rejected: Some(reason),
        })
    };
    let payload = match message.payload_bytes() {
        Ok(p) => p,
        Err(reason) => return rejected(reason),
    };
    match ingest_message(
        store,
        registry,
        &message.topic,
        &payload,
        message.received_at(),
    )
    .await
    {
        Ok(Ingested {
            written,
            duplicates,
            ..
        }) => Ok(RuleOutcome {
            written,
            duplicates,
            rejected: None,
        }),
        Err(e) if e.may_succeed_later() => {
            tracing::error!(topic = %message.topic, error = %e, "message not stored; retried");
            Err(e)
        }
        Err(e) => rejected(e.detail()),
    }
}
