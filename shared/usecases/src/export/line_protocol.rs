//! The export's line protocol: one line per reading family (`power`,
//! `climate`, `meter`, `device`, the measurements InfluxQL shows), tags
//! `device_id` and `room` (left out where a reading has none), each quantity
//! a float field under its catalogue name, the time in nanoseconds. That is
//! what InfluxDB and VictoriaMetrics take unchanged on `/write`, and what
//! `ingest::line_protocol` reads back into the same reading (the lines of
//! one reading are written together, so an import in chunks keeps them in
//! one chunk).
//!
//! Names are not readings: they travel as comment lines before the readings
//! (`# device ID {"name":..,"room":..}`, `# room ID {"name":..}`), as do
//! the alert rules of a whole export (`# alert-rule NAME {rule}`); every
//! line-protocol reader skips them and `ingester-local import` applies them.

use domain::model::{DeviceId, Name, Quantity, Reading, ReadingKind, RoomId};
use std::fmt::Write as _;

/// The first line of an export: says what the file is.
pub const HEADER: &str =
    "# ingester-local export: readings as InfluxDB line protocol (docs/backup.md)";

/// What a user gave a device or a room: carried in comment lines.
#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    Device {
        id: DeviceId,
        name: Option<Name>,
        room: Option<RoomId>,
    },
    Room {
        id: RoomId,
        name: Name,
    },
    /// An alert rule, its JSON as put (docs/alerts.md).
    AlertRule {
        name: String,
        json: String,
    },
}

impl Profile {
    /// Its comment line, without the line break.
    pub fn line(&self) -> String {
        match self {
            Profile::Device { id, name, room } => {
                let mut fields = serde_json::Map::new();
                if let Some(name) = name {
                    fields.insert("name".into(), name.as_str().into());
                }
                if let Some(room) = room {
                    fields.insert("room".into(), room.as_str().into());
                }
                format!("# device {id} {}", serde_json::Value::Object(fields))
            }
            Profile::Room { id, name } => {
                format!("# room {id} {}", serde_json::json!({"name": name.as_str()}))
            }
            Profile::AlertRule { name, json } => format!("# alert-rule {name} {json}"),
        }
    }

    /// A comment line's profile: `None` for any other line (a reading, a
    /// comment of another kind), an error for a profile line that is damaged.
    pub fn parse(line: &str) -> Option<Result<Profile, String>> {
        let rest = line.trim_end_matches(['\r', '\n']);
        let (kind, rest) = if let Some(r) = rest.strip_prefix("# device ") {
            ("device", r)
        } else if let Some(r) = rest.strip_prefix("# room ") {
            ("room", r)
        } else if let Some(r) = rest.strip_prefix("# alert-rule ") {
            return Some(Self::parse_rule(r));
        } else {
            return None;
        };
        Some(Self::parse_fields(kind, rest))
    }

    /// `NAME {json}`: a rule as `Rule::parse` takes it, kept as its text.
    fn parse_rule(rest: &str) -> Result<Profile, String> {
        let (name, json) = rest
            .split_once(' ')
            .ok_or("an alert-rule line needs a name and the rule")?;
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("alert rule {name}: {e}"))?;
        domain::alerts::Rule::parse(name, &value).map_err(|e| format!("alert rule {name}: {e}"))?;
        Ok(Profile::AlertRule {
            name: name.to_owned(),
            json: value.to_string(),
        })
    }

    fn parse_fields(kind: &str, rest: &str) -> Result<Profile, String> {
        let (id, json) = rest
            .split_once(' ')
            .ok_or_else(|| format!("a {kind} line needs an id and its fields"))?;
        let fields: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(json).map_err(|e| format!("{kind} {id}: {e}"))?;
        let text = |key: &str| -> Result<Option<&str>, String> {
            match fields.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(format!("{kind} {id}: {key} must be text, got {other}")),
            }
        };
        let name = text("name")?
            .map(Name::parse)
            .transpose()
            .map_err(|e| format!("{kind} {id}: name {e}"))?;
        match kind {
            "device" => Ok(Profile::Device {
                id: DeviceId::parse(id).map_err(|e| format!("device id {id:?}: {e}"))?,
                name,
                room: text("room")?
                    .map(RoomId::parse)
                    .transpose()
                    .map_err(|e| format!("device {id}: room {e}"))?,
            }),
            _ => Ok(Profile::Room {
                id: RoomId::parse(id).map_err(|e| format!("room id {id:?}: {e}"))?,
                name: name.ok_or_else(|| format!("room {id}: a room line needs a name"))?,
            }),
        }
    }
}

/// Appends a reading's lines to `out`.
pub fn write_reading(out: &mut String, reading: &Reading) {
    let nanos = i128::from(reading.timestamp.millis()) * 1_000_000;
    let values = reading.measurement.values();
    for family in ReadingKind::ALL {
        let mut fields = values.iter().filter(|(q, _)| q.family() == family);
        let Some(first) = fields.next() else {
            continue;
        };
        out.push_str(family.as_str());
        out.push_str(",device_id=");
        out.push_str(reading.device_id.as_str());
        if let Some(room) = reading.room() {
            out.push_str(",room=");
            out.push_str(room.as_str());
        }
        out.push(' ');
        push_field(out, *first);
        for field in fields {
            out.push(',');
            push_field(out, *field);
        }
        let _ = writeln!(out, " {nanos}");
    }
}

/// `name=value`: Rust's shortest text that reads back as the same `f64`,
/// never in exponent form, always a float to InfluxDB (no `i` suffix).
fn push_field(out: &mut String, (q, v): (Quantity, f64)) {
    let _ = write!(out, "{}={v}", q.name());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::line_protocol::{parse, Precision};
    use domain::model::{Measurement, Timestamp};

    fn reading(room: Option<&str>, values: Vec<(Quantity, f64)>) -> Reading {
        Reading {
            device_id: DeviceId::parse("aa:bb-1").unwrap(),
            timestamp: Timestamp::parse("2025-03-01T10:00:00.123Z").unwrap(),
            measurement: Measurement::new(room.map(|r| RoomId::parse(r).unwrap()), values).unwrap(),
        }
    }

    #[test]
    fn a_reading_of_two_families_is_two_lines_that_read_back_as_one_reading() {
        let r = reading(
            Some("hall"),
            vec![
                (Quantity::Temperature, 0.1 + 0.2),
                (Quantity::Battery, 87.0),
                (Quantity::Humidity, 45.25),
            ],
        );
        let mut text = String::new();
        write_reading(&mut text, &r);
        assert_eq!(
            text,
            "climate,device_id=aa:bb-1,room=hall temperature=0.30000000000000004,humidity=45.25 1740823200123000000\n\
             device,device_id=aa:bb-1,room=hall battery_pct=87 1740823200123000000\n"
        );
        let back = parse(&text, Precision::Nanoseconds, Timestamp::now(), |_| None).unwrap();
        assert_eq!(back.readings, vec![r]);
    }

    #[test]
    fn a_reading_without_a_room_has_no_room_tag() {
        let r = reading(None, vec![(Quantity::EnergyBought, 12345.678)]);
        let mut text = String::new();
        write_reading(&mut text, &r);
        assert!(!text.contains("room"), "{text}");
        let back = parse(&text, Precision::Nanoseconds, Timestamp::now(), |_| None).unwrap();
        assert_eq!(back.readings, vec![r]);
    }

    #[test]
    fn profiles_read_back_and_damaged_ones_are_named() {
        let device = Profile::Device {
            id: DeviceId::parse("meter-1").unwrap(),
            name: Some(Name::parse("Zähler \"Keller\" # 1").unwrap()),
            room: Some(RoomId::parse("cellar").unwrap()),
        };
        let room = Profile::Room {
            id: RoomId::parse("cellar").unwrap(),
            name: Name::parse("Cellar").unwrap(),
        };
        let rule = Profile::AlertRule {
            name: "fuse".into(),
            json: r#"{"above":9000,"kind":"threshold","quantity":"current_w","scope":{"device":"meter-1"}}"#.into(),
        };
        for p in [&device, &room, &rule] {
            assert_eq!(Profile::parse(&p.line()).unwrap().unwrap(), *p);
        }
        let bad_rule =
            Profile::parse("# alert-rule fuse {\"kind\":\"alarm\",\"scope\":{\"device\":\"m\"}}")
                .unwrap();
        assert!(bad_rule.unwrap_err().starts_with("alert rule fuse: kind"));
        assert!(Profile::parse(HEADER).is_none());
        assert!(Profile::parse("power,device_id=x current_w=1 1").is_none());
        let damaged = Profile::parse("# device meter-1 {\"name\":").unwrap();
        assert!(damaged.unwrap_err().starts_with("device meter-1"));
        let bad_id = Profile::parse("# room ROOM {\"name\":\"x\"}").unwrap();
        assert!(bad_id.unwrap_err().contains("reserved"));
    }
}
