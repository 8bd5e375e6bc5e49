//! Ingest: a `POST /readings` body (or line protocol, `line_protocol`) becomes
//! validated readings (all or nothing),
//! which are written; what could not be written is reported by index.

pub mod line_protocol;

use crate::model::{DeviceId, RawBody, RawReading, Reading, RoomId, Timestamp};
use crate::store::{RegistrySnapshot, Store, WriteReport};

/// Largest body accepted (DESIGN §5), enforced by the route's body limit layer.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most readings in one request (DESIGN §5).
pub const MAX_READINGS: usize = 1000;

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
    #[error("{} of {total} readings could not be stored; retrying the whole request is safe", unwritten.len())]
    Unavailable { unwritten: Vec<usize>, total: usize },
}

/// What a successful ingest stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    pub written: usize,
    pub duplicates: usize,
}

/// Parses and validates a body: one reading or an array of up to 1000. Every
/// problem of every reading is reported; a single invalid reading rejects all.
pub fn parse_batch(
    body: &[u8],
    now: Timestamp,
    registry: &RegistrySnapshot,
) -> Result<Vec<Reading>, IngestError> {
    // Straight into borrowed fields, not a `serde_json::Value` tree: see `RawReading`.
    let parsed: RawBody = serde_json::from_slice(body).map_err(|e| IngestError::InvalidJson {
        message: e.to_string(),
        line: e.line(),
        column: e.column(),
    })?;
    let items: Vec<RawReading> = match parsed {
        RawBody::Many(items) => items,
        RawBody::One(item) => vec![item],
        RawBody::Neither => return Err(IngestError::NotReadings),
    };
    if items.is_empty() {
        return Err(IngestError::Empty);
    }
    if items.len() > MAX_READINGS {
        return Err(IngestError::TooLarge(format!(
            "{} readings in one request; the limit is {MAX_READINGS}",
            items.len()
        )));
    }
    let room_of =
        |d: &DeviceId| -> Option<RoomId> { registry.devices.get(d).and_then(|r| r.room.clone()) };
    let mut readings = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match Reading::from_raw(item, now, room_of) {
            Ok(r) => readings.push(r),
            Err(ps) => problems.extend(ps.into_iter().map(|p| ReadingProblem {
                index,
                field: p.field,
                message: p.message,
            })),
        }
    }
    if problems.is_empty() {
        Ok(readings)
    } else {
        Err(IngestError::Invalid(problems))
    }
}

/// Validates and writes a body. On a storage failure the error lists the request
/// indices that are not stored; the rest are.
pub async fn ingest<S: Store>(
    store: &S,
    registry: &RegistrySnapshot,
    body: &[u8],
    now: Timestamp,
) -> Result<Ingested, IngestError> {
    let readings = parse_batch(body, now, registry)?;
    let total = readings.len();
    let WriteReport {
        unwritten,
        items_written,
        duplicates,
    } = store.write_owned_readings(readings).await;
    if unwritten.is_empty() {
        Ok(Ingested {
            written: items_written,
            duplicates,
        })
    } else {
        Err(IngestError::Unavailable { unwritten, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Quantity;

    /// A value with 17 significant digits is stored as the `f64` its text
    /// names, bit for bit (serde_json's `float_roundtrip`; without it this
    /// one came back one ulp off).
    #[test]
    fn long_values_are_parsed_exactly() {
        for text in [
            "43.019999999999996",
            "45.000000000000007",
            "0.30000000000000004",
        ] {
            let body = format!(
                r#"{{"device_id":"t-1","room":"hall","temperature":20.0,"humidity":{text}}}"#
            );
            let parsed = parse_batch(
                body.as_bytes(),
                Timestamp::now(),
                &RegistrySnapshot::default(),
            )
            .unwrap();
            let want: f64 = text.parse().unwrap();
            assert_eq!(
                parsed[0].get(Quantity::Humidity).map(f64::to_bits),
                Some(want.to_bits()),
                "{text}"
            );
        }
    }
}
