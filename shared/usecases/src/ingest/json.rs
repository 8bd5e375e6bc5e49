//! The JSON wire format of `POST /readings`: one reading object or an
//! array of them, validated all or nothing.

use super::{IngestError, ReadingProblem, MAX_READINGS};
use crate::registry::KnownRooms;
use domain::model::{DeviceId, RawBody, RawReading, Reading, Timestamp};

/// Parses and validates a body: one reading or an array of up to 1000. Every
/// problem of every reading is reported; a single invalid reading rejects all.
pub fn parse_batch(
    body: &[u8],
    now: Timestamp,
    registry: &KnownRooms,
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
    let room_of = |d: &DeviceId| registry.room_of(d);
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

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::Quantity;

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
            let parsed =
                parse_batch(body.as_bytes(), Timestamp::now(), &KnownRooms::default()).unwrap();
            let want: f64 = text.parse().unwrap();
            assert_eq!(
                parsed[0].get(Quantity::Humidity).map(f64::to_bits),
                Some(want.to_bits()),
                "{text}"
            );
        }
    }
}
