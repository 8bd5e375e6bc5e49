//! Ingest (a use case): a write request's body, whatever its wire format
//! (JSON, `json`; InfluxDB line protocol, `line_protocol`), becomes validated
//! readings, all or nothing, which are written; what could not be written
//! is reported by index. The HTTP routes only choose the format and word
//! the answer; MQTT messages (`mqtt`) become one of the two formats first.

pub mod hour_blocks;
pub use hour_blocks::Batching;
pub mod json;
pub mod line_protocol;

use crate::registry::{KnownRooms, RegistryCache};
use domain::model::{Reading, Timestamp};
use line_protocol::Precision;
use storage::{Store, WriteReport};

/// The limits of a write request, one table for every wire format
/// (docs/api-behaviour.md, "Limits"):
///
/// - the body: 1 MiB after inflating (DESIGN §5), enforced by the routes'
///   body limit layer, for both formats;
/// - readings per JSON request: 1000 (DESIGN §5);
/// - readings per line-protocol request: 5000, since one reading of ours is
///   often several lines of theirs (a line per entity in Home Assistant, a
///   line per field set in Telegraf), and Telegraf answers a 413 by
///   splitting its batch.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most readings in one JSON request.
pub const MAX_READINGS: usize = 1000;
/// Most readings in one line-protocol request.
pub const MAX_LINE_READINGS: usize = 5000;

/// A problem with one field of the reading at `index` of the request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReadingProblem {
    pub index: usize,
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    #[error("{0}")]
    TooLarge(String),
    #[error("body is not valid JSON: {message}")]
    InvalidJson {
        message: String,
        line: usize,
        column: usize,
    },
    #[error("body must be a reading object or an array of readings")]
    NotReadings,
    #[error("the batch is empty: send one reading, or an array of 1 to {MAX_READINGS}")]
    Empty,
    #[error("{} problem(s) in the readings; nothing was written", .0.len())]
    Invalid(Vec<ReadingProblem>),
    /// Line protocol that does not parse or map (the message names the line).
    #[error("{0}")]
    InvalidLines(String),
    #[error("the body is not UTF-8: {0}")]
    NotUtf8(String),
    #[error("{} of {total} readings could not be stored; retrying the whole request is safe", unwritten.len())]
    Unavailable { unwritten: Vec<usize>, total: usize },
    /// The rooms of the batch's devices could not be read (a sandbox over a
    /// fleet asks the store): nothing was written.
    #[error("the registry could not be read, so nothing was written; retrying the whole request is safe")]
    RegistryUnavailable(String),
}

/// A write request's body, in its wire format.
#[derive(Debug, Clone, Copy)]
pub enum Wire<'a> {
    /// `POST /readings`.
    Json(&'a [u8]),
    /// `POST /api/v2/write` and `POST /write`.
    LineProtocol {
        body: &'a [u8],
        precision: Precision,
    },
}

/// What a successful ingest stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    pub written: usize,
    pub duplicates: usize,
    /// Line protocol only: lines with no quantity of the catalogue.
    pub skipped: Skipped,
}

/// A line-protocol body's lines that held no quantity of the catalogue
/// (another program's metrics, an entity whose unit says nothing): how
/// many, and the first one with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    pub lines: usize,
    pub first: Option<String>,
}

/// Parses a body into readings, resolving a reading's room from the
/// registry when it names none; also the lines that carried no quantity of
/// ours (line protocol).
pub fn parse(
    wire: Wire<'_>,
    now: Timestamp,
    registry: &KnownRooms,
) -> Result<(Vec<Reading>, Skipped), IngestError> {
    match wire {
        Wire::Json(body) => Ok((json::parse_batch(body, now, registry)?, Skipped::default())),
        Wire::LineProtocol { body, precision } => {
            let text =
                std::str::from_utf8(body).map_err(|e| IngestError::NotUtf8(e.to_string()))?;
            let lines = line_protocol::parse(text, precision, now, |d| registry.room_of(d))
                .map_err(|e| IngestError::InvalidLines(e.to_string()))?;
            if lines.readings.len() > MAX_LINE_READINGS {
                return Err(IngestError::TooLarge(format!(
                    "{} readings in one request; the limit is {MAX_LINE_READINGS}",
                    lines.readings.len()
                )));
            }
            Ok((
                lines.readings,
                Skipped {
                    lines: lines.skipped,
                    first: lines.first_skipped,
                },
            ))
        }
    }
}

/// Parses, validates and writes a body. On a storage failure the error
/// lists the request's readings that are not stored; the rest are. A store
/// that keeps its registry in the write transaction has just changed it:
/// the cache is marked stale, so a new device is listed at once (only its
/// latest values, when no device changed rooms: the next batch's rooms are
/// then read from the cache as it is).
pub async fn ingest<S: Store>(
    store: &S,
    registry: &RegistryCache,
    wire: Wire<'_>,
    now: Timestamp,
) -> Result<Ingested, IngestError> {
    let (readings, skipped) = registry
        .parse_with_rooms(store, |rooms| parse(wire, now, rooms))
        .await
        .map_err(|e| IngestError::RegistryUnavailable(e.to_string()))??;
    write(store, registry, readings)
        .await
        .into_ingested(skipped)
}

/// What [`write`] did with its readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub total: usize,
    pub items_written: usize,
    pub duplicates: usize,
    /// The indices of the readings not stored.
    pub unwritten: Vec<usize>,
}

impl Written {
    /// A request's answer: what it stored, or which of its readings are not.
    pub fn into_ingested(self, skipped: Skipped) -> Result<Ingested, IngestError> {
        if self.unwritten.is_empty() {
            Ok(Ingested {
                written: self.items_written,
                duplicates: self.duplicates,
                skipped,
            })
        } else {
            Err(IngestError::Unavailable {
                unwritten: self.unwritten,
                total: self.total,
            })
        }
    }
}

/// Writes parsed readings (one request's, or a batch of MQTT messages')
/// in one store write, and tells the cache what the write changed of the
/// registry, where the store keeps it in the same transaction.
pub async fn write<S: Store>(
    store: &S,
    registry: &RegistryCache,
    readings: Vec<Reading>,
) -> Written {
    write_batched(store, registry, readings, Batching::default()).await
}

/// [`write`], with a batch's blocks cut as `batching` says (a stream's
/// window: the open hour too, the registry kept by the function's memory).
pub async fn write_batched<S: Store>(
    store: &S,
    registry: &RegistryCache,
    readings: Vec<Reading>,
    batching: Batching<'_>,
) -> Written {
    let total = readings.len();
    if readings.is_empty() {
        return Written {
            total,
            items_written: 0,
            duplicates: 0,
            unwritten: Vec::new(),
        };
    }
    let rooms = if store.capabilities().registry_follows_writes {
        registry.rooms_in(&readings)
    } else {
        Vec::new()
    };
    let WriteReport {
        unwritten,
        items_written,
        duplicates,
    } = if store.capabilities().hour_blocks_from_batches {
        hour_blocks::write(store, readings, Timestamp::now(), batching).await
    } else {
        store.write_owned_readings(readings).await
    };
    if store.capabilities().registry_follows_writes && items_written > 0 {
        registry.wrote(rooms);
    }
    Written {
        total,
        items_written,
        duplicates,
        unwritten,
    }
}
