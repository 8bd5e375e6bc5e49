//! The JSON wire format of `POST /readings`: one reading object or an
//! array of them, validated all or nothing.

use super::{IngestError, ReadingProblem, MAX_READINGS};
use crate::registry::KnownRooms;
use domain::model::{read_plain, RawBody, RawReading, Reading, RequestIds, Timestamp};

/// Parses and validates a body: one reading or an array of up to 1000. Every
/// problem of every reading is reported; a single invalid reading rejects all.
pub fn parse_batch(
    body: &[u8],
    now: Timestamp,
    registry: &KnownRooms,
) -> Result<Vec<Reading>, IngestError> {
    let mut checked = Checked::new(now, registry);
    // A plain body (flat objects, no escapes) is read without serde_json
    // (`read_plain`); any other, and every syntax error, by serde_json,
    // from the start.
    let count = match read_plain(body, MAX_READINGS, |index, item| checked.add(index, item)) {
        Some(count) => count,
        None => return parse_batch_without_fast_path(body, now, registry),
    };
    if count == 0 {
        return Err(IngestError::Empty);
    }
    checked.finish()
}

/// `parse_batch` without the reader of plain bodies: what the fuzz target
/// compares `parse_batch` against (the plain reader must never change an answer).
#[doc(hidden)]
pub fn parse_batch_without_fast_path(
    body: &[u8],
    now: Timestamp,
    registry: &KnownRooms,
) -> Result<Vec<Reading>, IngestError> {
    let mut checked = Checked::new(now, registry);
    for (index, item) in serde_body(body)?.iter().enumerate() {
        checked.add(index, item);
    }
    checked.finish()
}

/// A body read by serde_json straight into borrowed fields, not a
/// `serde_json::Value` tree (see `RawReading`), and its count checked.
fn serde_body(body: &[u8]) -> Result<Vec<RawReading<'_>>, IngestError> {
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
    Ok(items)
}

/// A body's readings as they are checked, and every problem found.
struct Checked<'r> {
    now: Timestamp,
    registry: &'r KnownRooms,
    ids: RequestIds,
    readings: Vec<Reading>,
    problems: Vec<ReadingProblem>,
}

impl<'r> Checked<'r> {
    fn new(now: Timestamp, registry: &'r KnownRooms) -> Self {
        Self {
            now,
            registry,
            ids: RequestIds::default(),
            readings: Vec::new(),
            problems: Vec::new(),
        }
    }

    fn add(&mut self, index: usize, item: &RawReading<'_>) {
        let registry = self.registry;
        match Reading::from_raw_in(item, self.now, |d| registry.room_of(d), &mut self.ids) {
            Ok(r) => self.readings.push(r),
            Err(ps) => self.problems.extend(ps.into_iter().map(|p| ReadingProblem {
                index,
                field: p.field,
                message: p.message,
            })),
        }
    }

    fn finish(self) -> Result<Vec<Reading>, IngestError> {
        if self.problems.is_empty() {
            Ok(self.readings)
        } else {
            Err(IngestError::Invalid(self.problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::Quantity;

    /// Bodies of readings, good and bad, plain and not: the same answer
    /// with and without the plain reader (the fuzz target checks any bytes).
    #[test]
    fn the_plain_reader_gives_the_answers_serde_json_gives() {
        let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        let rooms = KnownRooms::default();
        let one = r#"{"device_id":"t-1","room":"hall","temperature":20.5,"humidity":45,"timestamp":1763769600000}"#;
        let thousand = format!("[{}]", vec![one; MAX_READINGS].join(","));
        let too_many = format!("[{}]", vec![one; MAX_READINGS + 1].join(","));
        let bodies = [
            one.to_owned(),
            format!("[{one},{one}]"),
            format!(" [ {one} ,\n {one} ] "),
            thousand,
            too_many,
            "[]".to_owned(),
            "{}".to_owned(),
            "3".to_owned(),
            r#"[{"device_id":"t-1","temperature":20.5}]"#.to_owned(),
            r#"[{"device_id":"bad id","room":"hall","temperature":"x","speed":3}]"#.to_owned(),
            r#"[{"device_id":"m-1","power_w":-5e400}]"#.to_owned(),
            r#"[{"device_id":"m-1","current_w":12,"timestamp":"2026-11-21T10:00:00Z"},1]"#
                .to_owned(),
            r#"[{"device_id":"m-\u0031","current_w":12}]"#.to_owned(),
            format!(r#"[{one},{{"device_id":"t-2","temperature":1e999}}]"#),
            format!("[{one}"),
        ];
        for body in &bodies {
            let fast = parse_batch(body.as_bytes(), now, &rooms);
            let slow = parse_batch_without_fast_path(body.as_bytes(), now, &rooms);
            assert_eq!(fast, slow, "{body}");
        }
        // The readings of one device share its id's text.
        let two = parse_batch(format!("[{one},{one}]").as_bytes(), now, &rooms).unwrap();
        assert_eq!(
            two[0].device_id.as_ref().as_ptr(),
            two[1].device_id.as_ref().as_ptr()
        );
    }

    /// A bad reading anywhere in a batch of 600 is named by its index, as
    /// serde_json's path names it: strings that hold braces and commas,
    /// escapes, nesting and bad values.
    #[test]
    fn a_bad_reading_among_many_answers_as_serde_json_does() {
        let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        let rooms = KnownRooms::default();
        let good = |i: usize| {
            format!(
                r#"{{"device_id":"t-{}","room":"hall","temperature":{}.5,"timestamp":{}}}"#,
                i % 3,
                i % 30,
                1_763_769_600_000u64 + (i as u64 % 7) * 60_000
            )
        };
        for bad_at in [0, 150, 299, 300, 301, 450, 599] {
            for odd in [
                r#"{"device_id":"t-1","room":"},{","temperature":1}"#,
                r#"{"device_id":"x\"y","temperature":1}"#,
                r#"{"device_id":"t-1","room":"a\"},{\"b","humidity":200}"#,
                r#"{"device_id":"t-1","room":{"x":1},"temperature":1}"#,
                r#"{"device_id":"t-1","temperature":"}"}"#,
                r#"{"device_id":"t 1","temperature":1}"#,
            ] {
                let items: Vec<String> = (0..600)
                    .map(|i| if i == bad_at { odd.to_owned() } else { good(i) })
                    .collect();
                let body = format!("[{}]", items.join(",\n"));
                let fast = parse_batch(body.as_bytes(), now, &rooms);
                let slow = parse_batch_without_fast_path(body.as_bytes(), now, &rooms);
                assert_eq!(fast, slow, "{odd} at {bad_at}");
                let Err(IngestError::Invalid(problems)) = fast else {
                    panic!("{odd} at {bad_at}: {fast:?}")
                };
                assert!(problems.iter().all(|p| p.index == bad_at), "{problems:?}");
            }
        }
    }

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
