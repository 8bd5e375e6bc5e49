//! Readings: power (cumulative kWh bought/sold, instantaneous W) and climate
//! (room, temperature, humidity). `Reading::from_json` is the ingest boundary:
//! it reports every problem of a reading at once, by field.

use super::{DeviceId, RoomId, Timestamp};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

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

/// Plausibility bounds (inclusive) of DESIGN §3; values outside are rejected, not clamped.
pub struct Bounds {
    pub temperature: (f64, f64),
    pub humidity: (f64, f64),
    pub cumulative_kwh: (f64, f64),
    pub current_w: (f64, f64),
    /// Readings older than this are a device clock that was never set (epoch 0 and friends).
    pub earliest_timestamp_ms: i64,
    /// How far ahead of the server clock a reading may be (clock skew allowance).
    pub max_future_ms: i64,
    /// Non-zero magnitudes below this would underflow DynamoDB's number type (1e-130).
    pub min_nonzero_magnitude: f64,
}

pub const BOUNDS: Bounds = Bounds {
    temperature: (-100.0, 150.0),
    humidity: (0.0, 100.0),
    cumulative_kwh: (0.0, 1e9),
    current_w: (-1e7, 1e7),
    earliest_timestamp_ms: 946_684_800_000, // 2000-01-01T00:00:00Z
    max_future_ms: 24 * 3600 * 1000,
    min_nonzero_magnitude: 1e-100,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReadingKind {
    Power,
    Climate,
}

impl ReadingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReadingKind::Power => "power",
            ReadingKind::Climate => "climate",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "power" => Some(ReadingKind::Power),
            "climate" => Some(ReadingKind::Climate),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Power {
    cumulative_kwh_p: f64,
    cumulative_kwh_n: f64,
    current_w: f64,
}

impl Power {
    pub const FIELDS: [&'static str; 3] = ["cumulative_kwh_p", "cumulative_kwh_n", "current_w"];

    pub fn new(
        cumulative_kwh_p: f64,
        cumulative_kwh_n: f64,
        current_w: f64,
    ) -> Result<Self, Vec<FieldProblem>> {
        let p = bounded("cumulative_kwh_p", cumulative_kwh_p, BOUNDS.cumulative_kwh);
        let n = bounded("cumulative_kwh_n", cumulative_kwh_n, BOUNDS.cumulative_kwh);
        let w = bounded("current_w", current_w, BOUNDS.current_w);
        match (p, n, w) {
            (Ok(p), Ok(n), Ok(w)) => Ok(Self {
                cumulative_kwh_p: p,
                cumulative_kwh_n: n,
                current_w: w,
            }),
            (p, n, w) => Err([p.err(), n.err(), w.err()].into_iter().flatten().collect()),
        }
    }

    /// Cumulative kWh bought from the grid.
    pub fn cumulative_kwh_p(&self) -> f64 {
        self.cumulative_kwh_p
    }
    /// Cumulative kWh sold to the grid.
    pub fn cumulative_kwh_n(&self) -> f64 {
        self.cumulative_kwh_n
    }
    /// Instantaneous power in W (negative while exporting).
    pub fn current_w(&self) -> f64 {
        self.current_w
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Climate {
    room: RoomId,
    temperature: f64,
    humidity: f64,
}

impl Climate {
    pub const FIELDS: [&'static str; 3] = ["room", "temperature", "humidity"];

    pub fn new(room: RoomId, temperature: f64, humidity: f64) -> Result<Self, Vec<FieldProblem>> {
        let t = bounded("temperature", temperature, BOUNDS.temperature);
        let h = bounded("humidity", humidity, BOUNDS.humidity);
        match (t, h) {
            (Ok(temperature), Ok(humidity)) => Ok(Self {
                room,
                temperature,
                humidity,
            }),
            (t, h) => Err([t.err(), h.err()].into_iter().flatten().collect()),
        }
    }

    pub fn room(&self) -> &RoomId {
        &self.room
    }
    /// °C
    pub fn temperature(&self) -> f64 {
        self.temperature
    }
    /// Relative humidity, %
    pub fn humidity(&self) -> f64 {
        self.humidity
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Measurement {
    Power(Power),
    Climate(Climate),
}

impl Measurement {
    pub fn kind(&self) -> ReadingKind {
        match self {
            Measurement::Power(_) => ReadingKind::Power,
            Measurement::Climate(_) => ReadingKind::Climate,
        }
    }
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
        match &self.measurement {
            Measurement::Climate(c) => Some(c.room()),
            Measurement::Power(_) => None,
        }
    }

    /// Parses one reading of a `POST /readings` body. `now` bounds future timestamps;
    /// `room_of` supplies the registered room of a device whose climate reading omits `room`.
    pub fn from_json(
        value: &Value,
        now: Timestamp,
        room_of: impl Fn(&DeviceId) -> Option<RoomId>,
    ) -> Result<Reading, Vec<FieldProblem>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![FieldProblem::new(
                "",
                format!("must be a JSON object, got {}", json_type(value)),
            )]);
        };
        let mut problems = Vec::new();

        let device_id = required_str(obj, "device_id", &mut problems).and_then(|s| {
            DeviceId::parse(s)
                .map_err(|e| problems.push(FieldProblem::new("device_id", e.to_string())))
                .ok()
        });
        let timestamp = reading_time(obj.get("timestamp"), now)
            .map_err(|m| problems.push(FieldProblem::new("timestamp", m)))
            .ok();
        let kind = required_str(obj, "type", &mut problems).and_then(|s| {
            ReadingKind::parse(s)
                .ok_or_else(|| {
                    problems.push(FieldProblem::new(
                        "type",
                        format!("must be \"power\" or \"climate\", got {s:?}"),
                    ))
                })
                .ok()
        });

        // Unknown fields are rejected so that a typo ("temprature") is not silently dropped.
        let allowed: &[&str] = match kind {
            Some(ReadingKind::Power) => &Power::FIELDS,
            Some(ReadingKind::Climate) => &Climate::FIELDS,
            None => &[],
        };
        if kind.is_some() {
            for key in obj.keys() {
                if !matches!(key.as_str(), "device_id" | "timestamp" | "type")
                    && !allowed.contains(&key.as_str())
                {
                    problems.push(FieldProblem::new(
                        key.as_str(),
                        format!(
                            "unknown field for a {} reading",
                            kind.map_or("", |k| k.as_str())
                        ),
                    ));
                }
            }
        }

        let measurement = match kind {
            Some(ReadingKind::Power) => {
                let p = required_num(obj, "cumulative_kwh_p", &mut problems);
                let n = required_num(obj, "cumulative_kwh_n", &mut problems);
                let w = required_num(obj, "current_w", &mut problems);
                match (p, n, w) {
                    (Some(p), Some(n), Some(w)) => Power::new(p, n, w)
                        .map(Measurement::Power)
                        .map_err(|e| problems.extend(e))
                        .ok(),
                    _ => None,
                }
            }
            Some(ReadingKind::Climate) => {
                let room = match obj.get("room") {
                    None | Some(Value::Null) => match device_id.as_ref().map(&room_of) {
                        Some(Some(room)) => Some(room),
                        Some(None) => {
                            problems.push(FieldProblem::new(
                                "room",
                                "is required: this device is not registered in a room yet",
                            ));
                            None
                        }
                        None => None, // the device_id problem is already reported
                    },
                    Some(Value::String(s)) => RoomId::parse(s)
                        .map_err(|e| problems.push(FieldProblem::new("room", e.to_string())))
                        .ok(),
                    Some(other) => {
                        problems.push(FieldProblem::new(
                            "room",
                            format!("must be a string, got {}", json_type(other)),
                        ));
                        None
                    }
                };
                let t = required_num(obj, "temperature", &mut problems);
                let h = required_num(obj, "humidity", &mut problems);
                match (room, t, h) {
                    (Some(room), Some(t), Some(h)) => Climate::new(room, t, h)
                        .map(Measurement::Climate)
                        .map_err(|e| problems.extend(e))
                        .ok(),
                    (_, t, h) => {
                        // Still report range problems of the numbers that did parse.
                        if let Some(t) = t {
                            problems.extend(bounded("temperature", t, BOUNDS.temperature).err());
                        }
                        if let Some(h) = h {
                            problems.extend(bounded("humidity", h, BOUNDS.humidity).err());
                        }
                        None
                    }
                }
            }
            None => None,
        };

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

/// Epoch numbers below this are seconds, from it milliseconds. 1e11 s is the
/// year 5138 and 1e11 ms is 1973: inside the accepted window (2000 to 24 h from
/// now) a number is only ever one of the two, so the unit is never a guess.
const EPOCH_MILLIS_FROM: f64 = 1e11;
/// The largest epoch-seconds value taken as seconds: 2100-01-01T00:00:00Z.
const EPOCH_SECONDS_UNTIL: f64 = 4_102_444_800.0;

/// A reading's time: RFC 3339 text, epoch seconds or milliseconds (a number),
/// or, when absent, `now`: the time the server received it.
fn reading_time(value: Option<&Value>, now: Timestamp) -> Result<Timestamp, String> {
    let t = match value {
        None | Some(Value::Null) => return Ok(now),
        Some(Value::String(s)) => Timestamp::parse(s).map_err(|e| e.to_string())?,
        Some(Value::Number(n)) => epoch_time(n.as_f64().unwrap_or(f64::NAN))?,
        Some(other) => {
            return Err(format!(
                "must be an RFC 3339 string or a number of epoch seconds or milliseconds, got {}",
                json_type(other)
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

fn plausible_time(t: Timestamp, now: Timestamp) -> Result<Timestamp, String> {
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

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn required_str<'a>(
    obj: &'a Map<String, Value>,
    field: &str,
    problems: &mut Vec<FieldProblem>,
) -> Option<&'a str> {
    match obj.get(field) {
        Some(Value::String(s)) => Some(s),
        None | Some(Value::Null) => {
            problems.push(FieldProblem::new(field, "is required"));
            None
        }
        Some(other) => {
            problems.push(FieldProblem::new(
                field,
                format!("must be a string, got {}", json_type(other)),
            ));
            None
        }
    }
}

fn required_num(
    obj: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<FieldProblem>,
) -> Option<f64> {
    match obj.get(field) {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) => Some(v),
            None => {
                problems.push(FieldProblem::new(field, "is not a representable number"));
                None
            }
        },
        None | Some(Value::Null) => {
            problems.push(FieldProblem::new(field, "is required"));
            None
        }
        Some(other) => {
            problems.push(FieldProblem::new(
                field,
                format!("must be a number, got {}", json_type(other)),
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

/// The JSON shape of a reading in every answer: `{"device_id","timestamp","type", ...fields}`.
impl Serialize for Reading {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(6))?;
        m.serialize_entry("device_id", self.device_id.as_str())?;
        m.serialize_entry("timestamp", &self.timestamp.to_string())?;
        m.serialize_entry("type", self.kind().as_str())?;
        match &self.measurement {
            Measurement::Power(p) => {
                m.serialize_entry("cumulative_kwh_p", &p.cumulative_kwh_p)?;
                m.serialize_entry("cumulative_kwh_n", &p.cumulative_kwh_n)?;
                m.serialize_entry("current_w", &p.current_w)?;
            }
            Measurement::Climate(c) => {
                m.serialize_entry("room", c.room.as_str())?;
                m.serialize_entry("temperature", &c.temperature)?;
                m.serialize_entry("humidity", &c.humidity)?;
            }
        }
        m.end()
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
        assert!(Power::new(f64::NAN, 0.0, 0.0).is_err());
        assert!(Power::new(0.0, f64::INFINITY, 0.0).is_err());
        assert_eq!(Power::new(1e9, 0.0, -1e7).unwrap().current_w(), -1e7);
        assert!(Power::new(1e9 + 1.0, 0.0, 0.0).is_err());
        let z = Power::new(-0.0, 0.0, -0.0).unwrap();
        assert!(z.cumulative_kwh_p().is_sign_positive() && z.current_w().is_sign_positive());
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
    fn non_objects_and_missing_type_are_reported() {
        let p = Reading::from_json(&json!([1]), now(), no_room).unwrap_err();
        assert_eq!(p[0].message, "must be a JSON object, got an array");
        let p = Reading::from_json(
            &json!({"device_id":"m","timestamp":"2026-11-21T00:00:00Z"}),
            now(),
            no_room,
        )
        .unwrap_err();
        assert_eq!(fields(&p), vec!["type"]);
        let p = Reading::from_json(
            &json!({"device_id":"m","timestamp":"2026-11-21T00:00:00Z","type":"gas"}),
            now(),
            no_room,
        )
        .unwrap_err();
        assert_eq!(fields(&p), vec!["type"]);
    }
}
