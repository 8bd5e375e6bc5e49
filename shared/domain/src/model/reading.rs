//! Readings: a device, a time and one or more quantities of the catalogue
//! (`quantity.rs`), plus the room for climate quantities. `Reading::from_json`
//! is the ingest boundary: it reports every problem of a reading at once, by field.

use super::raw_reading::{field, RawFields, RawReading, RawValue};
use super::{DeviceId, Quantity, ReadingKind, RequestIds, RoomId, Timestamp};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// One problem with one field of one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: String,
    pub message: String,
}

impl FieldProblem {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Bounds on times and magnitudes (the quantities' ranges are in the catalogue).
pub struct Bounds {
    /// Readings older than this are a device clock that was never set (epoch 0 and friends).
    pub earliest_timestamp_ms: i64,
    /// How far ahead of the server clock a reading may be (clock skew allowance).
    pub max_future_ms: i64,
    /// Non-zero magnitudes below this would underflow DynamoDB's number type (1e-130).
    pub min_nonzero_magnitude: f64,
}

pub const BOUNDS: Bounds = Bounds {
    earliest_timestamp_ms: 946_684_800_000, // 2000-01-01T00:00:00Z
    max_future_ms: 24 * 3600 * 1000,
    min_nonzero_magnitude: 1e-100,
};

/// What a reading measured: one or more quantities of the catalogue, each
/// inside its range, and the room it was in. (The JSON route requires a room
/// with a climate quantity; line protocol cannot, see docs/line-protocol.md.)
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    room: Option<RoomId>,
    /// Sorted by quantity, each at most once, never empty.
    values: Vec<(Quantity, f64)>,
}

impl Measurement {
    /// Every problem at once: values out of range, no value at all. The
    /// vector becomes the measurement's own (ingest makes one per reading).
    pub fn new(
        room: Option<RoomId>,
        mut values: Vec<(Quantity, f64)>,
    ) -> Result<Self, Vec<FieldProblem>> {
        let mut problems = Vec::new();
        values.retain_mut(|(q, v)| match bounded(q.name(), *v, q.spec().range) {
            Ok(checked) => {
                *v = checked;
                true
            }
            Err(p) => {
                problems.push(p);
                false
            }
        });
        values.sort_by_key(|(q, _)| *q);
        values.dedup_by_key(|(q, _)| *q);
        if values.is_empty() && problems.is_empty() {
            problems.push(FieldProblem::new("", no_quantity_message()));
        }
        if problems.is_empty() {
            Ok(Self { room, values })
        } else {
            Err(problems)
        }
    }

    /// A stored reading's measurement (every store's reader: rows, blocks,
    /// the registry's latest reading), checked only for what the type relies
    /// on: some values, each quantity once. Its values passed `new` when they
    /// were written; a range narrowed in a later version must not make them
    /// unreadable, and a page of 10,000 decoded readings spent a twentieth of
    /// its time checking ranges again.
    pub fn from_stored(
        room: Option<RoomId>,
        mut values: Vec<(Quantity, f64)>,
    ) -> Result<Self, &'static str> {
        if values.is_empty() {
            return Err("no value");
        }
        values.sort_by_key(|(q, _)| *q);
        if !values.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err("a quantity twice");
        }
        Ok(Self { room, values })
    }

    /// A smart meter's reading: cumulative kWh bought and sold, and watts.
    pub fn power(kwh_bought: f64, kwh_sold: f64, watts: f64) -> Result<Self, Vec<FieldProblem>> {
        Self::new(
            None,
            vec![
                (Quantity::EnergyBought, kwh_bought),
                (Quantity::EnergySold, kwh_sold),
                (Quantity::Power, watts),
            ],
        )
    }

    /// A room sensor's reading: °C and %RH.
    pub fn climate(
        room: RoomId,
        temperature: f64,
        humidity: f64,
    ) -> Result<Self, Vec<FieldProblem>> {
        Self::new(
            Some(room),
            vec![
                (Quantity::Temperature, temperature),
                (Quantity::Humidity, humidity),
            ],
        )
    }

    /// The kind of its first quantity in catalogue order: a meter that also
    /// reports its battery is a power reading.
    pub fn kind(&self) -> ReadingKind {
        self.values[0].0.family()
    }

    pub fn room(&self) -> Option<&RoomId> {
        self.room.as_ref()
    }

    pub fn get(&self, q: Quantity) -> Option<f64> {
        self.values.iter().find(|(k, _)| *k == q).map(|(_, v)| *v)
    }

    /// Every value, in catalogue order.
    pub fn values(&self) -> &[(Quantity, f64)] {
        &self.values
    }
}

fn no_quantity_message() -> String {
    let names: Vec<&str> = Quantity::ALL.iter().map(|q| q.name()).collect();
    format!(
        "a reading needs at least one quantity: {}",
        names.join(", ")
    )
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub device_id: DeviceId,
    pub timestamp: Timestamp,
    pub measurement: Measurement,
}

impl Reading {
    pub fn kind(&self) -> ReadingKind {
        self.measurement.kind()
    }

    pub fn room(&self) -> Option<&RoomId> {
        self.measurement.room()
    }

    pub fn get(&self, q: Quantity) -> Option<f64> {
        self.measurement.get(q)
    }

    /// Parses one reading of a `POST /readings` body. `now` is the time of
    /// receipt (a reading without a time gets it) and bounds future times;
    /// `room_of` supplies the registered room of a device whose reading of a
    /// climate quantity omits `room`.
    pub fn from_json(
        value: &Value,
        now: Timestamp,
        room_of: impl Fn(&DeviceId) -> Option<RoomId>,
    ) -> Result<Reading, Vec<FieldProblem>> {
        Self::from_raw(&RawReading::of(value), now, room_of)
    }

    /// A reading as a store wrote it with `serde` (its registry's latest
    /// reading), read as it was (`Measurement::from_stored`): no bound on how
    /// recent, no range checked again, and a climate reading without a room
    /// (line protocol stores those) stays without one.
    pub fn from_stored_json(value: &Value) -> Result<Reading, Vec<FieldProblem>> {
        Self::from_raw_as(
            &RawReading::of(value),
            Timestamp::MAX,
            |_| None,
            Source::Stored,
            &mut RequestIds::default(),
        )
    }

    /// `from_json` of a reading as the body parser borrowed it.
    pub fn from_raw(
        raw: &RawReading<'_>,
        now: Timestamp,
        room_of: impl Fn(&DeviceId) -> Option<RoomId>,
    ) -> Result<Reading, Vec<FieldProblem>> {
        Self::from_raw_in(raw, now, room_of, &mut RequestIds::default())
    }

    /// `from_raw` of one reading of a batch: its device and room ids are
    /// shared with the batch's other readings that name them (`ids`).
    pub fn from_raw_in(
        raw: &RawReading<'_>,
        now: Timestamp,
        room_of: impl Fn(&DeviceId) -> Option<RoomId>,
        ids: &mut RequestIds,
    ) -> Result<Reading, Vec<FieldProblem>> {
        Self::from_raw_as(raw, now, room_of, Source::Request, ids)
    }

    fn from_raw_as(
        raw: &RawReading<'_>,
        now: Timestamp,
        room_of: impl Fn(&DeviceId) -> Option<RoomId>,
        source: Source,
        ids: &mut RequestIds,
    ) -> Result<Reading, Vec<FieldProblem>> {
        let obj = match raw {
            RawReading::Object(fields) => fields.as_slice(),
            RawReading::NotObject(what) => {
                return Err(vec![FieldProblem::new(
                    "",
                    format!("must be a JSON object, got {what}"),
                )])
            }
        };
        let mut problems = Vec::new();

        let device_id = required_str(obj, "device_id", &mut problems).and_then(|s| {
            ids.devices
                .get_or_parse(s, DeviceId::parse)
                .map_err(|e| problems.push(FieldProblem::new("device_id", e.to_string())))
                .ok()
        });
        let timestamp = reading_time(field(obj, "timestamp"), now)
            .map_err(|m| problems.push(FieldProblem::new("timestamp", m)))
            .ok();
        // `type` is optional; when given it must agree with the quantities.
        let kind = match field(obj, "type") {
            None | Some(RawValue::Null) => None,
            Some(RawValue::Str(s)) => {
                match ReadingKind::parse(s) {
                    Some(k) => Some(k),
                    None => {
                        problems.push(FieldProblem::new(
                        "type",
                        format!("must be \"power\", \"climate\", \"meter\" or \"device\", got {s:?}"),
                    ));
                        None
                    }
                }
            }
            Some(other) => {
                problems.push(FieldProblem::new(
                    "type",
                    format!("must be a string, got {}", other.json_type()),
                ));
                None
            }
        };

        // Unknown fields are rejected so that a typo ("temprature") is not silently
        // dropped. Problems of known quantities come after `room`, in catalogue order.
        let mut values = Vec::with_capacity(obj.len());
        let mut value_problems: Vec<(Quantity, FieldProblem)> = Vec::new();
        for (key, v) in obj {
            let key = key.as_ref();
            if matches!(key, "device_id" | "timestamp" | "type" | "room") {
                continue;
            }
            let Some(q) = Quantity::parse(key) else {
                problems.push(FieldProblem::new(
                    key,
                    "unknown field: not a quantity of the catalogue (docs/quantities.md)",
                ));
                continue;
            };
            match v {
                RawValue::Number(x) => values.push((q, *x)),
                _ => value_problems.push((
                    q,
                    FieldProblem::new(key, format!("must be a number, got {}", v.json_type())),
                )),
            }
        }
        values.sort_by_key(|(q, _)| *q);
        let climate = values
            .iter()
            .map(|(q, _)| q)
            .chain(value_problems.iter().map(|(q, _)| q))
            .any(|q| q.family() == ReadingKind::Climate);
        let room = match field(obj, "room") {
            None | Some(RawValue::Null) if climate && source == Source::Request => {
                match device_id.as_ref().map(&room_of) {
                    Some(Some(room)) => Some(room),
                    Some(None) => {
                        problems.push(FieldProblem::new(
                            "room",
                            "is required: this device is not registered in a room yet",
                        ));
                        None
                    }
                    None => None, // the device_id problem is already reported
                }
            }
            None | Some(RawValue::Null) => None,
            Some(RawValue::Str(s)) => ids
                .rooms
                .get_or_parse(s, RoomId::parse)
                .map_err(|e| problems.push(FieldProblem::new("room", e.to_string())))
                .ok(),
            Some(other) => {
                problems.push(FieldProblem::new(
                    "room",
                    format!("must be a string, got {}", other.json_type()),
                ));
                None
            }
        };
        // Range problems of the numbers that did parse, with the type problems, in catalogue order.
        for (q, v) in values.iter().filter(|_| source == Source::Request) {
            if let Err(p) = bounded(q.name(), *v, q.spec().range) {
                value_problems.push((*q, p));
            }
        }
        value_problems.sort_by_key(|(q, _)| *q);
        let quantities_ok = value_problems.is_empty();
        problems.extend(value_problems.into_iter().map(|(_, p)| p));
        let room_ok = room.is_some() || !climate || source == Source::Stored;
        let measurement = if quantities_ok && room_ok {
            let measured = match source {
                Source::Request => Measurement::new(room, values),
                Source::Stored => Measurement::from_stored(room, values)
                    .map_err(|m| vec![FieldProblem::new("", m)]),
            };
            match measured {
                Ok(m) => Some(m),
                Err(ps) => {
                    problems.extend(ps);
                    None
                }
            }
        } else {
            None
        };
        if let (Some(given), Some(m)) = (kind, &measurement) {
            if given != m.kind() {
                problems.push(FieldProblem::new(
                    "type",
                    format!(
                        "is {:?} but the quantities make it a {} reading ({})",
                        given.as_str(),
                        m.kind().as_str(),
                        m.values()[0].0.name()
                    ),
                ));
            }
        }

        match (device_id, timestamp, measurement) {
            (Some(device_id), Some(timestamp), Some(measurement)) if problems.is_empty() => {
                Ok(Reading {
                    device_id,
                    timestamp,
                    measurement,
                })
            }
            _ => Err(problems),
        }
    }
}

/// Where a reading's JSON comes from: a request (a climate reading needs a
/// room, the body's or its device's registered one, and every value its
/// range), or a store (the reading is read as it was written).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Request,
    Stored,
}

/// Epoch numbers below this are seconds, from it milliseconds. 1e11 s is the
/// year 5138 and 1e11 ms is 1973: inside the accepted window (2000 to 24 h from
/// now) a number is only ever one of the two, so the unit is never a guess.
const EPOCH_MILLIS_FROM: f64 = 1e11;
/// The largest epoch-seconds value taken as seconds: 2100-01-01T00:00:00Z.
const EPOCH_SECONDS_UNTIL: f64 = 4_102_444_800.0;

/// A reading's time: RFC 3339 text, epoch seconds or milliseconds (a number),
/// or, when absent, `now`: the time the server received it.
fn reading_time(value: Option<&RawValue>, now: Timestamp) -> Result<Timestamp, String> {
    let t = match value {
        None | Some(RawValue::Null) => return Ok(now),
        Some(RawValue::Str(s)) => Timestamp::parse(s).map_err(|e| e.to_string())?,
        Some(RawValue::Number(n)) => epoch_time(*n)?,
        Some(other) => {
            return Err(format!(
                "must be an RFC 3339 string or a number of epoch seconds or milliseconds, got {}",
                other.json_type()
            ))
        }
    };
    plausible_time(t, now)
}

/// Epoch seconds (a fraction keeps its milliseconds) or whole milliseconds,
/// told apart by size (see `EPOCH_MILLIS_FROM`).
fn epoch_time(v: f64) -> Result<Timestamp, String> {
    if !v.is_finite() {
        return Err("must be a finite number".into());
    }
    let ms = if v < EPOCH_MILLIS_FROM {
        if v > EPOCH_SECONDS_UNTIL {
            return Err(format!(
                "{v} is neither epoch seconds (up to {EPOCH_SECONDS_UNTIL}, the year 2100) nor epoch milliseconds (from {}, the year 2000)",
                BOUNDS.earliest_timestamp_ms
            ));
        }
        (v * 1000.0).floor()
    } else if v >= 1e14 {
        return Err(format!(
            "{v} looks like epoch microseconds or nanoseconds: send seconds or milliseconds"
        ));
    } else if v.fract() != 0.0 {
        return Err(format!(
            "{v} has a fraction of a millisecond: send whole milliseconds, or seconds"
        ));
    } else {
        v
    };
    // Below 1e14, so the conversion is exact; anything before 1970 is as
    // implausible as 1970 itself, which `plausible_time` refuses.
    Timestamp::from_millis(ms.max(0.0) as i64).map_err(|e| e.to_string())
}

/// A reading's time is from 2000 on (a device clock that was never set reads
/// 1970) and at most 24 h ahead of the server's `now`. Inlined: every line
/// of a write checks it, from the use cases' crate.
#[inline]
pub fn plausible_time(t: Timestamp, now: Timestamp) -> Result<Timestamp, String> {
    if t.millis() < BOUNDS.earliest_timestamp_ms {
        return Err("is before 2000-01-01T00:00:00Z: is the device clock set?".into());
    }
    if t > now.saturating_add_millis(BOUNDS.max_future_ms) {
        return Err(format!(
            "is more than 24 h ahead of the server clock ({now})"
        ));
    }
    Ok(t)
}

fn required_str<'f>(
    obj: &'f RawFields<'_>,
    name: &str,
    problems: &mut Vec<FieldProblem>,
) -> Option<&'f str> {
    match field(obj, name) {
        Some(RawValue::Str(s)) => Some(s),
        None | Some(RawValue::Null) => {
            problems.push(FieldProblem::new(name, "is required"));
            None
        }
        Some(other) => {
            problems.push(FieldProblem::new(
                name,
                format!("must be a string, got {}", other.json_type()),
            ));
            None
        }
    }
}

/// A finite number inside `[lo, hi]`; `-0` becomes `0` so that equal readings store equal text.
fn bounded(field: &str, v: f64, (lo, hi): (f64, f64)) -> Result<f64, FieldProblem> {
    if !v.is_finite() {
        return Err(FieldProblem::new(field, "must be a finite number"));
    }
    if v < lo || v > hi {
        return Err(FieldProblem::new(
            field,
            format!("{v} is outside the plausible range {lo}..={hi}"),
        ));
    }
    if v != 0.0 && v.abs() < BOUNDS.min_nonzero_magnitude {
        return Err(FieldProblem::new(
            field,
            format!("{v:e} is too close to zero to store; send 0"),
        ));
    }
    Ok(if v == 0.0 { 0.0 } else { v })
}

/// The JSON shape of a reading in every answer:
/// `{"device_id", "timestamp", "type", "room"?, ...its quantities in catalogue order}`.
impl Serialize for Reading {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = &self.measurement;
        let mut map = serializer.serialize_map(Some(4 + m.values.len()))?;
        map.serialize_entry("device_id", self.device_id.as_str())?;
        self.timestamp
            .with_text(|text| map.serialize_entry("timestamp", text))?;
        map.serialize_entry("type", self.kind().as_str())?;
        if let Some(room) = &m.room {
            map.serialize_entry("room", room.as_str())?;
        }
        for (q, v) in &m.values {
            map.serialize_entry(q.name(), v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap()
    }

    fn no_room(_: &DeviceId) -> Option<RoomId> {
        None
    }

    /// A stored reading reads back as it was written: a climate reading
    /// without a room, a value outside today's range (a range narrowed by a
    /// later version) are refused at the boundary, not when read back.
    #[test]
    fn a_stored_reading_reads_as_it_was_written() {
        let v =
            json!({"device_id": "s-1", "timestamp": "2026-11-21T01:00:00Z", "temperature": 200.0});
        let refused = Reading::from_json(&v, now(), no_room).unwrap_err();
        let fields: Vec<&str> = refused.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["room", "temperature"]);
        let r = Reading::from_stored_json(&v).unwrap();
        assert_eq!(
            (r.room(), r.get(Quantity::Temperature)),
            (None, Some(200.0))
        );
        let twice =
            Measurement::from_stored(None, vec![(Quantity::Power, 1.0), (Quantity::Power, 2.0)]);
        assert_eq!(twice.unwrap_err(), "a quantity twice");
        assert_eq!(
            Measurement::from_stored(None, vec![]).unwrap_err(),
            "no value"
        );
    }

    fn fields(problems: &[FieldProblem]) -> Vec<&str> {
        problems.iter().map(|p| p.field.as_str()).collect()
    }

    fn time_of(timestamp: Value) -> Result<String, String> {
        let mut v = json!({"device_id":"t-1","type":"climate","room":"hall","temperature":20.0,"humidity":50.0});
        if !timestamp.is_null() {
            v["timestamp"] = timestamp;
        }
        Reading::from_json(&v, now(), no_room)
            .map(|r| r.timestamp.to_string())
            .map_err(|ps| {
                assert_eq!(fields(&ps), ["timestamp"]);
                ps[0].message.clone()
            })
    }

    #[test]
    fn epoch_seconds_and_milliseconds_are_told_apart_by_size() {
        let t = "2026-11-21T01:02:03.000Z";
        assert_eq!(time_of(json!(1_795_222_923)).unwrap(), t);
        assert_eq!(time_of(json!(1_795_222_923_000i64)).unwrap(), t);
        assert_eq!(
            time_of(json!(1_795_222_923.25)).unwrap(),
            "2026-11-21T01:02:03.250Z"
        );
        // A float of seconds keeps its milliseconds and drops what is below them.
        assert_eq!(
            time_of(json!(1_795_222_923.250_9)).unwrap(),
            "2026-11-21T01:02:03.250Z"
        );
        assert_eq!(time_of(json!("2026-11-21T01:02:03Z")).unwrap(), t);
        // The earliest accepted time in either unit.
        assert_eq!(
            time_of(json!(946_684_800)).unwrap(),
            "2000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            time_of(json!(946_684_800_000i64)).unwrap(),
            "2000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn epoch_numbers_that_are_neither_unit_or_implausible_are_refused() {
        for (v, says) in [
            (json!(5_000_000_000i64), "neither epoch seconds"),
            (json!(50_000_000_000i64), "neither epoch seconds"),
            (
                json!(1_795_222_923_000_000i64),
                "microseconds or nanoseconds",
            ),
            (
                json!(1_795_222_923_000_000_000i64),
                "microseconds or nanoseconds",
            ),
            (json!(1_795_222_923_000.5), "fraction of a millisecond"),
            (json!(0), "before 2000"),
            (json!(946_684_799), "before 2000"),
            (json!(-1), "before 2000"),
            (json!(1_795_400_000), "ahead of the server clock"),
            (json!(true), "RFC 3339 string or a number"),
            (json!([1]), "RFC 3339 string or a number"),
        ] {
            let message = time_of(v.clone()).unwrap_err();
            assert!(message.contains(says), "{v}: {message}");
        }
    }

    #[test]
    fn a_reading_without_a_time_is_stamped_with_the_time_it_was_received() {
        assert_eq!(time_of(Value::Null).unwrap(), now().to_string());
        let mut v = json!({"device_id":"t-1","type":"power","cumulative_kwh_p":1.0,"cumulative_kwh_n":0.0,"current_w":5.0});
        v["timestamp"] = Value::Null;
        assert_eq!(
            Reading::from_json(&v, now(), no_room).unwrap().timestamp,
            now()
        );
    }

    fn parse(v: Value) -> Result<Reading, Vec<FieldProblem>> {
        Reading::from_json(&v, now(), no_room)
    }

    #[test]
    fn any_subset_of_the_catalogue_is_a_reading() {
        // A DS18B20 or a Zigbee sensor: temperature only.
        let r = parse(json!({"device_id":"ds18b20-1","timestamp":"2026-11-21T01:00:00Z","type":"climate","room":"garage","temperature":8.5})).unwrap();
        assert_eq!(
            (
                r.kind(),
                r.get(Quantity::Temperature),
                r.get(Quantity::Humidity)
            ),
            (ReadingKind::Climate, Some(8.5), None)
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"device_id":"ds18b20-1","timestamp":"2026-11-21T01:00:00.000Z","type":"climate","room":"garage","temperature":8.5})
        );
        // A smart plug: watts only; `type` may be left out.
        let r = parse(
            json!({"device_id":"plug-1","timestamp":"2026-11-21T01:00:00Z","current_w":35.5}),
        )
        .unwrap();
        assert_eq!((r.kind(), r.room()), (ReadingKind::Power, None));
        // A CO2 sensor with the rest of the air, and its battery.
        let r = parse(json!({"device_id":"co2-1","room":"office","co2_ppm":612,"temperature":21.0,"pressure_hpa":1013.2,"battery_pct":80})).unwrap();
        assert_eq!(r.kind(), ReadingKind::Climate);
        let names: Vec<&str> = r
            .measurement
            .values()
            .iter()
            .map(|(q, _)| q.name())
            .collect();
        assert_eq!(
            names,
            ["temperature", "pressure_hpa", "co2_ppm", "battery_pct"]
        );
        // Gas and water meters; a room is allowed on any reading and kept.
        let r = parse(json!({"device_id":"gas-1","room":"cellar","gas_m3":1234.567})).unwrap();
        assert_eq!(
            (r.kind().as_str(), r.room().map(|r| r.as_str())),
            ("meter", Some("cellar"))
        );
        let r = parse(json!({"device_id":"meter-1","room":"hall","cumulative_kwh_p":1.0,"cumulative_kwh_n":0.0,"current_w":5.0})).unwrap();
        assert_eq!(r.room().map(|r| r.as_str()), Some("hall"));
    }

    #[test]
    fn quantities_are_checked_against_the_catalogue() {
        let p = parse(
            json!({"device_id":"co2-1","room":"office","co2_ppm":-5,"battery_pct":101,"lux":3}),
        )
        .unwrap_err();
        assert_eq!(fields(&p), ["lux", "co2_ppm", "battery_pct"]);
        assert!(p[0].message.contains("unknown field"));
        // `type`, when given, must be what the quantities say.
        let p = parse(json!({"device_id":"plug-1","type":"climate","current_w":35.5})).unwrap_err();
        assert_eq!(fields(&p), ["type"]);
        assert!(p[0].message.contains("power reading"), "{}", p[0].message);
        // A climate quantity needs a room; other quantities do not.
        let p = parse(json!({"device_id":"t-1","temperature":20.0})).unwrap_err();
        assert_eq!(fields(&p), ["room"]);
        assert!(parse(json!({"device_id":"t-1","battery_pct":50})).is_ok());
    }

    #[test]
    fn a_power_reading_parses_and_serialises_back_to_the_same_shape() {
        let v = json!({"device_id":"meter-1","timestamp":"2026-11-21T10:00:00+09:00","type":"power",
                        "cumulative_kwh_p":1234.5,"cumulative_kwh_n":10.25,"current_w":-350.0});
        let r = Reading::from_json(&v, now(), no_room).unwrap();
        assert_eq!(r.timestamp.to_string(), "2026-11-21T01:00:00.000Z");
        let out = serde_json::to_value(&r).unwrap();
        assert_eq!(
            out,
            json!({"device_id":"meter-1","timestamp":"2026-11-21T01:00:00.000Z","type":"power",
                   "cumulative_kwh_p":1234.5,"cumulative_kwh_n":10.25,"current_w":-350.0})
        );
    }

    #[test]
    fn every_problem_of_a_reading_is_reported_by_field() {
        let v = json!({"device_id":"ROOM","timestamp":"yesterday","type":"climate",
                        "room":"a#b","temperature":"21","humidity":101, "temprature": 3});
        let p = Reading::from_json(&v, now(), no_room).unwrap_err();
        assert_eq!(
            fields(&p),
            vec![
                "device_id",
                "timestamp",
                "temprature",
                "room",
                "temperature",
                "humidity"
            ]
        );
    }

    #[test]
    fn numbers_must_be_finite_and_plausible() {
        for (field, bad) in [
            ("temperature", json!(150.5)),
            ("temperature", json!(-100.1)),
            ("humidity", json!(-1)),
            ("humidity", json!(1e-200)),
        ] {
            let mut v = json!({"device_id":"s1","timestamp":"2026-11-21T00:00:00Z","type":"climate",
                                "room":"bedroom","temperature":20,"humidity":50});
            v[field] = bad.clone();
            let p = Reading::from_json(&v, now(), no_room).unwrap_err();
            assert_eq!(fields(&p), vec![field], "{field}={bad}");
        }
        assert!(Measurement::power(f64::NAN, 0.0, 0.0).is_err());
        assert!(Measurement::power(0.0, f64::INFINITY, 0.0).is_err());
        let edge = Measurement::power(1e9, 0.0, -1e7).unwrap();
        assert_eq!(edge.get(Quantity::Power), Some(-1e7));
        assert!(Measurement::power(1e9 + 1.0, 0.0, 0.0).is_err());
        let z = Measurement::power(-0.0, 0.0, -0.0).unwrap();
        assert!(z.get(Quantity::EnergyBought).unwrap().is_sign_positive());
        assert!(z.get(Quantity::Power).unwrap().is_sign_positive());
    }

    #[test]
    fn implausible_timestamps_are_rejected() {
        for ts in ["1970-01-01T00:00:00Z", "2026-11-23T00:00:01Z", "2026-11-21"] {
            let v = json!({"device_id":"m","timestamp":ts,"type":"power",
                            "cumulative_kwh_p":1,"cumulative_kwh_n":0,"current_w":0});
            let p = Reading::from_json(&v, now(), no_room).unwrap_err();
            assert_eq!(fields(&p), vec!["timestamp"], "{ts}");
        }
    }

    #[test]
    fn a_climate_reading_without_room_uses_the_registered_room() {
        let v = json!({"device_id":"s1","timestamp":"2026-11-21T00:00:00Z","type":"climate",
                        "temperature":20.5,"humidity":40});
        let p = Reading::from_json(&v, now(), no_room).unwrap_err();
        assert_eq!(fields(&p), vec!["room"]);
        let r = Reading::from_json(&v, now(), |d| {
            (d.as_str() == "s1").then(|| RoomId::parse("bedroom").unwrap())
        })
        .unwrap();
        assert_eq!(r.room().unwrap().as_str(), "bedroom");
    }

    #[test]
    fn non_objects_readings_without_a_quantity_and_unknown_types_are_reported() {
        let p = Reading::from_json(&json!([1]), now(), no_room).unwrap_err();
        assert_eq!(p[0].message, "must be a JSON object, got an array");
        let p = Reading::from_json(
            &json!({"device_id":"m","timestamp":"2026-11-21T00:00:00Z"}),
            now(),
            no_room,
        )
        .unwrap_err();
        assert_eq!(fields(&p), vec![""], "no quantity at all");
        assert!(
            p[0].message.contains("at least one quantity"),
            "{}",
            p[0].message
        );
        let p = Reading::from_json(
            &json!({"device_id":"m","timestamp":"2026-11-21T00:00:00Z","type":"gas","current_w":1}),
            now(),
            no_room,
        )
        .unwrap_err();
        assert_eq!(fields(&p), vec!["type"]);
    }
}
