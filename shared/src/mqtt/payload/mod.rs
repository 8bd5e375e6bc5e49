//! MQTT payloads (issue 26; docs/mqtt.md): a message's topic and payload
//! become a write request body of ours, JSON or line protocol, which then
//! goes through the same ingest as HTTP (the same validation, limits and
//! idempotent keys). Shapes, by topic:
//!
//! - `readings/<device>`: our JSON reading or batch (a reading without
//!   `device_id` takes the topic's device), or InfluxDB line protocol
//!   (Telegraf's MQTT output), told apart by the first byte;
//! - `tele/<device>/SENSOR`: Tasmota's telemetry (`tasmota`);
//! - `zigbee2mqtt/<friendly name>`: Zigbee2MQTT's device state (`zigbee2mqtt`);
//! - `<id>/status/<component>`: a Shelly Gen2 device's status (`shelly`);
//! - `shellies/<id>/...`: a Shelly Gen1 device's values (`shelly_gen1`);
//! - `dsmr/json`: DSMR-reader's telegram of a P1 smart meter (`dsmr_reader`),
//!   at the meter's time.
//!
//! A payload without a time takes the receive time (Tasmota's `Time` is
//! local time without a zone, so it is not used either). Tasmota's,
//! Zigbee2MQTT's and Shelly's messages become line protocol, one line
//! named `mqtt` with the device as its tag: like line protocol, they cannot
//! name a room, so a climate reading takes the device's registered room,
//! or none until it has one (docs/line-protocol.md).

mod dsmr_reader;
mod shelly;
mod shelly_gen1;
mod tasmota;
mod zigbee2mqtt;

use domain::model::device_id_text;
use serde_json::{json, Map, Value};

/// A message, ready for the one ingest (`super::ingest_message`).
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A body of `POST /readings`.
    Json(Vec<u8>),
    /// A body of `POST /write` (nanosecond timestamps).
    LineProtocol(Vec<u8>),
    /// A message that carries no reading (Zigbee2MQTT's bridge topics, a
    /// Tasmota `SENSOR` with no quantity of the catalogue): acknowledged.
    Nothing(&'static str),
}

/// Why a message cannot be a reading (it never can: acknowledge and count it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MqttError {
    #[error("topic {0:?} is none of the shapes in docs/mqtt.md")]
    UnknownTopic(String),
    #[error("payload on {topic:?}: {reason}")]
    BadPayload { topic: String, reason: String },
}

/// Decodes one message (module comment).
pub fn decode(topic: &str, payload: &[u8]) -> Result<Decoded, MqttError> {
    let bad = |reason: String| MqttError::BadPayload {
        topic: topic.to_owned(),
        reason,
    };
    let levels: Vec<&str> = topic.split('/').collect();
    match levels.as_slice() {
        ["readings", device @ ..] if !device.is_empty() => {
            let device = device_id_text(&device.join("/"));
            readings(payload, &device).map_err(bad)
        }
        ["tele", device, "SENSOR"] => {
            tasmota::decode(&object(payload).map_err(bad)?, device).map_err(bad)
        }
        ["zigbee2mqtt", "bridge", ..] => Ok(Decoded::Nothing("a Zigbee2MQTT bridge topic")),
        ["zigbee2mqtt", rest @ ..] if !rest.is_empty() => {
            if matches!(rest.last(), Some(&("set" | "get" | "availability"))) {
                return Ok(Decoded::Nothing(
                    "a Zigbee2MQTT command or availability topic",
                ));
            }
            zigbee2mqtt::decode(
                &object(payload).map_err(bad)?,
                &device_id_text(&rest.join("/")),
            )
            .map_err(bad)
        }
        ["shellies", id, rest @ ..] => shelly_gen1::decode(id, rest, payload).map_err(bad),
        ["dsmr", "json"] => dsmr_reader::decode(&object(payload).map_err(bad)?).map_err(bad),
        ["dsmr", _, ..] => Ok(Decoded::Nothing(dsmr_reader::OTHER_TOPICS)),
        [id, "status", component] => shelly::decode(id, component, payload).map_err(bad),
        _ => Err(MqttError::UnknownTopic(topic.to_owned())),
    }
}

fn object(payload: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(other) => Err(format!("a JSON object was expected, got {}", kind(&other))),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One line of line protocol: the device's quantities, no time.
fn line(device: &str, fields: &Map<String, Value>) -> Result<Decoded, String> {
    // A device id holds no character line protocol would need escaped.
    let mut text = format!("mqtt,device={device} ");
    for (i, (name, v)) in fields.iter().enumerate() {
        let v = v
            .as_f64()
            .ok_or_else(|| format!("{name} is not a number"))?;
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{name}={v}"));
    }
    text.push('\n');
    Ok(Decoded::LineProtocol(text.into_bytes()))
}

/// Ours on `readings/<device>`.
fn readings(payload: &[u8], device: &str) -> Result<Decoded, String> {
    let first = payload.iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(first, Some(b'{' | b'[')) {
        return Ok(Decoded::LineProtocol(payload.to_vec()));
    }
    let mut value: Value = serde_json::from_slice(payload).map_err(|e| format!("not JSON: {e}"))?;
    let with_device = |v: &mut Value| {
        if let Value::Object(o) = v {
            o.entry("device_id").or_insert_with(|| json!(device));
        }
    };
    match &mut value {
        Value::Array(items) => items.iter_mut().for_each(with_device),
        v => with_device(v),
    }
    serde_json::to_vec(&value)
        .map(Decoded::Json)
        .map_err(|e| e.to_string())
}

fn number(o: &Map<String, Value>, key: &str) -> Option<f64> {
    o.get(key).and_then(Value::as_f64)
}

/// The numbers of `o` named in `names` (theirs, ours) into `r`, under our
/// names; one `r` already has is kept (the first object that has it wins).
fn numbers_into(r: &mut Map<String, Value>, o: &Map<String, Value>, names: &[(&str, &str)]) {
    for (from, to) in names {
        if let Some(v) = number(o, from) {
            r.entry(*to).or_insert(json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn body(d: Decoded) -> Value {
        match d {
            Decoded::Json(b) => serde_json::from_slice(&b).unwrap(),
            other => panic!("not JSON: {other:?}"),
        }
    }

    /// A one-line body's device and fields, as a JSON object.
    pub(super) fn fields(d: Decoded) -> Value {
        let Decoded::LineProtocol(b) = d else {
            panic!("not line protocol: {d:?}")
        };
        let text = String::from_utf8(b).unwrap();
        let (head, rest) = text.trim_end().split_once(' ').unwrap();
        assert!(!rest.contains(' '), "no time: {text}");
        let mut o = Map::new();
        o.insert(
            "device_id".into(),
            json!(head.strip_prefix("mqtt,device=").unwrap()),
        );
        for kv in rest.split(',') {
            let (k, v) = kv.split_once('=').unwrap();
            o.insert(k.into(), json!(v.parse::<f64>().unwrap()));
        }
        Value::Object(o)
    }

    #[test]
    fn ours_json_or_line_protocol_on_readings() {
        let v = body(
            decode(
                "readings/meter-7",
                br#"[{"cumulative_kwh_p":1.5,"current_w":3},{"device_id":"other","current_w":4}]"#,
            )
            .unwrap(),
        );
        assert_eq!(v[0]["device_id"], "meter-7");
        assert_eq!(v[1]["device_id"], "other", "the body's device wins");
        let lp = b"energy,device_id=m-1 cumulative_kwh_p=2.5 1795219200000000000\n";
        assert_eq!(
            decode("readings/m-1", lp).unwrap(),
            Decoded::LineProtocol(lp.to_vec())
        );
        assert!(matches!(
            decode("readings/x", b"{nope").unwrap_err(),
            MqttError::BadPayload { .. }
        ));
        assert!(matches!(
            decode("somewhere/else", b"{}").unwrap_err(),
            MqttError::UnknownTopic(_)
        ));
        assert!(matches!(
            decode("tele/x/SENSOR", b"[1]").unwrap_err(),
            MqttError::BadPayload { .. }
        ));
    }
}
