//! The messages a broker has in flight to us, stored in one write (issue
//! 44): each is decoded on its own, so a bad one is rejected alone, and the
//! readings of the rest are written together, one transaction on the
//! embedded store instead of one per message. What became of each message
//! comes back in order, for the subscription to acknowledge the stored
//! ones (never one before it is stored).

use super::message::{readings_of, MessageError};
use domain::model::Timestamp;
use storage::Store;
use usecases::ingest::{self, Batching, IngestError};
use usecases::registry::RegistryCache;

/// One message: its topic, payload, and when it arrived (the time of a
/// payload that carries none). Each message keeps its own: one time for a
/// whole batch would give two time-less messages of a device the same key,
/// and the second would be dropped as a duplicate.
pub struct Message<'a> {
    pub topic: &'a str,
    pub payload: &'a [u8],
    pub received: Timestamp,
}

/// What became of a message that needs no delivery again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its readings are stored.
    Stored,
    /// It carries no reading of ours, and why: a shape that carries none
    /// (a Zigbee2MQTT bridge topic, a Shelly's `sys`), or one with no
    /// quantity of ours (a Tasmota `SENSOR` whose names are not ours).
    Ignored(&'static str),
}

/// Ingests `messages` as [`super::ingest_message`] would one by one, in one
/// write (its blocks cut as `batching` says): each message's outcome, in
/// order. A message some of whose
/// readings were not stored is `IngestError::Unavailable` (indices within
/// the message), so that it is delivered again.
pub async fn ingest_messages<S: Store>(
    store: &S,
    registry: &RegistryCache,
    messages: &[Message<'_>],
    batching: Batching<'_>,
) -> Vec<Result<Outcome, MessageError>> {
    let parsed = match registry
        .parse_with_rooms(store, |rooms| {
            messages
                .iter()
                .map(|m| readings_of(m.topic, m.payload, m.received, rooms))
                .collect::<Vec<_>>()
        })
        .await
    {
        Ok(parsed) => parsed,
        Err(e) => {
            let unavailable = IngestError::RegistryUnavailable(e.to_string());
            return messages
                .iter()
                .map(|_| Err(unavailable.clone().into()))
                .collect();
        }
    };
    let mut readings = Vec::new();
    // Each message's readings are `spans[i]` of `readings` (or why it has
    // none), or its error.
    let mut spans = Vec::with_capacity(messages.len());
    for parsed in parsed {
        spans.push(parsed.map(|mut parsed| {
            let from = readings.len();
            readings.append(&mut parsed.readings);
            (from..readings.len(), parsed.nothing)
        }));
    }
    let written = ingest::write_batched(store, registry, readings, batching).await;
    spans
        .into_iter()
        .map(|span| {
            let (span, nothing) = span?;
            if span.is_empty() {
                return Ok(Outcome::Ignored(
                    nothing.unwrap_or("no quantity of ours in it"),
                ));
            }
            let unwritten: Vec<usize> = written
                .unwritten
                .iter()
                .filter(|i| span.contains(i))
                .map(|i| i - span.start)
                .collect();
            if unwritten.is_empty() {
                Ok(Outcome::Stored)
            } else {
                Err(IngestError::Unavailable {
                    unwritten,
                    total: span.len(),
                }
                .into())
            }
        })
        .collect()
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use domain::model::{DeviceId, Quantity};
    use sqlite::SqliteStore;
    use std::time::Duration;
    use storage::{Order, RangeRequest, ReadingStore};

    /// Each message's outcome is its own: a bad message between good ones is
    /// rejected alone, the good ones' readings are all stored (a message of
    /// two readings too), a message with nothing to store is ignored, and two
    /// messages of a device that carry no time each keep the time they
    /// arrived (with one time for the batch the second was a duplicate).
    #[tokio::test]
    async fn a_batch_stores_the_good_messages_and_rejects_the_bad_one_alone() {
        let store = SqliteStore::in_memory().unwrap();
        let registry = RegistryCache::load(&store, Duration::from_secs(30))
            .await
            .unwrap();
        let at = |ms: i64| Timestamp::from_millis(ms).unwrap();
        let arrived = 1_793_500_000_000;
        let message = |topic, payload, ms| Message {
            topic,
            payload,
            received: at(ms),
        };
        let messages = [
            message(
                "readings/m-1",
                br#"{"timestamp":1793491200,"current_w":1}"#.as_slice(),
                arrived,
            ),
            message(
                "readings/m-1",
                br#"{"timestamp":1793491260,"current_w":"lots"}"#,
                arrived,
            ),
            message(
                "readings/m-1",
                br#"[{"timestamp":1793491320,"current_w":3},{"timestamp":1793491380,"current_w":4}]"#,
                arrived,
            ),
            message("zigbee2mqtt/bridge/state", br#"{"state":"online"}"#, arrived),
            message("readings/m-1", br#"{"current_w":5}"#, arrived),
            message("readings/m-1", br#"{"current_w":6}"#, arrived + 1000),
        ];
        let outcomes = ingest_messages(&store, &registry, &messages, Default::default()).await;
        let ok: Vec<Option<Outcome>> = outcomes.iter().map(|o| o.clone().ok()).collect();
        let stored = Some(Outcome::Stored);
        assert_eq!(
            ok,
            [
                stored,
                None,
                stored,
                Some(Outcome::Ignored("a Zigbee2MQTT bridge topic")),
                stored,
                stored
            ],
            "{outcomes:?}"
        );
        assert!(!outcomes[1].as_ref().unwrap_err().may_succeed_later());
        let page = store
            .device_readings(
                &DeviceId::parse("m-1").unwrap(),
                &RangeRequest {
                    range: domain::model::TimeRange::new(at(1_793_491_200_000), at(arrived + 2000))
                        .unwrap(),
                    order: Order::Asc,
                    limit: 10,
                    after: None,
                },
            )
            .await
            .unwrap();
        let watts: Vec<f64> = page
            .readings
            .iter()
            .filter_map(|r| r.get(Quantity::Power))
            .collect();
        assert_eq!(watts, [1.0, 3.0, 4.0, 5.0, 6.0]);
    }
}
