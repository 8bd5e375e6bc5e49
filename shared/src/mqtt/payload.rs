//! MQTT payloads (issue 26; docs/mqtt.md): a message's topic and payload
//! become a write request body of ours, JSON or line protocol, which then
//! goes through the same ingest as HTTP (the same validation, limits and
//! idempotent keys). Shapes, by topic:
//!
//! - `readings/<device>`: our JSON reading or batch (a reading without
//!   `device_id` takes the topic's device), or InfluxDB line protocol
//!   (Telegraf's MQTT output), told apart by the first byte;
//! - `tele/<device>/SENSOR`: Tasmota's sensor telemetry, `ENERGY` and any
//!   sensor object with `Temperature`/`Humidity`/`Pressure` (`TempUnit` F
//!   is converted);
//! - `zigbee2mqtt/<friendly name>`: Zigbee2MQTT's device state;
//! - `<id>/status/switch:<n>`: a Shelly Gen2 switch's status.
//!
//! A payload without a time takes the receive time (Tasmota's `Time` is
//! local time without a zone, so it is not used either). Tasmota's,
//! Zigbee2MQTT's and Shelly's messages become line protocol, one line
//! named `mqtt` with the device as its tag: like line protocol, they cannot
//! name a room, so a climate reading takes the device's registered room,
//! or none until it has one (docs/line-protocol.md).

use crate::model::device_id_text;
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
        ["tele", device, "SENSOR"] => tasmota(&object(payload).map_err(bad)?, device).map_err(bad),
        ["zigbee2mqtt", "bridge", ..] => Ok(Decoded::Nothing("a Zigbee2MQTT bridge topic")),
        ["zigbee2mqtt", rest @ ..] if !rest.is_empty() => {
            if matches!(rest.last(), Some(&("set" | "get" | "availability"))) {
                return Ok(Decoded::Nothing(
                    "a Zigbee2MQTT command or availability topic",
                ));
            }
            zigbee2mqtt(
                &object(payload).map_err(bad)?,
                &device_id_text(&rest.join("/")),
            )
            .map_err(bad)
        }
        [id, "status", switch] if switch.starts_with("switch:") => {
            let n = &switch["switch:".len()..];
            let device = if n == "0" {
                device_id_text(id)
            } else {
                device_id_text(&format!("{id}-{n}"))
            };
            shelly(&object(payload).map_err(bad)?, &device).map_err(bad)
        }
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

/// Tasmota's `tele/<device>/SENSOR`.
fn tasmota(o: &Map<String, Value>, device: &str) -> Result<Decoded, String> {
    let mut r = Map::new();
    if let Some(Value::Object(e)) = o.get("ENERGY") {
        for (from, to) in [
            ("Total", "cumulative_kwh_p"),
            ("Power", "current_w"),
            ("Voltage", "voltage_v"),
            ("Current", "current_a"),
        ] {
            if let Some(v) = number(e, from) {
                r.insert(to.into(), json!(v));
            }
        }
    }
    let fahrenheit = o.get("TempUnit").and_then(Value::as_str) == Some("F");
    // The first sensor object that has each quantity (a device with two
    // temperature sensors is two devices in Tasmota's eyes too: `Sensor1`, ...).
    for (name, v) in o {
        let Value::Object(s) = v else { continue };
        if name == "ENERGY" {
            continue;
        }
        if let Some(t) = number(s, "Temperature") {
            let c = if fahrenheit {
                crate::model::celsius_from_fahrenheit(t)
            } else {
                t
            };
            r.entry("temperature").or_insert(json!(c));
        }
        if let Some(h) = number(s, "Humidity") {
            r.entry("humidity").or_insert(json!(h));
        }
        if let Some(p) = number(s, "Pressure") {
            r.entry("pressure_hpa").or_insert(json!(p));
        }
        if let Some(c) = number(s, "CarbonDioxide") {
            r.entry("co2_ppm").or_insert(json!(c));
        }
        if let Some(l) = number(s, "Illuminance") {
            r.entry("illuminance_lx").or_insert(json!(l));
        }
    }
    if r.is_empty() {
        return Ok(Decoded::Nothing(
            "a Tasmota SENSOR message with no quantity of the catalogue",
        ));
    }
    line(device, &r)
}

/// Zigbee2MQTT's `zigbee2mqtt/<friendly name>`: the quantities of the
/// catalogue it reports; `linkquality`, `voltage` (a battery's millivolts)
/// and the rest are left out.
fn zigbee2mqtt(o: &Map<String, Value>, device: &str) -> Result<Decoded, String> {
    let mut r = Map::new();
    for (from, to) in [
        ("temperature", "temperature"),
        ("humidity", "humidity"),
        ("pressure", "pressure_hpa"),
        ("co2", "co2_ppm"),
        ("pm25", "pm25_ugm3"),
        ("illuminance_lux", "illuminance_lx"),
        ("power", "current_w"),
        ("energy", "cumulative_kwh_p"),
        ("battery", "battery_pct"),
    ] {
        match o.get(from) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => {
                r.insert(to.into(), json!(n.as_f64()));
            }
            Some(other) => return Err(format!("{from} must be a number, got {}", kind(other))),
        }
    }
    if r.is_empty() {
        return Ok(Decoded::Nothing(
            "a Zigbee2MQTT state with no quantity of the catalogue",
        ));
    }
    line(device, &r)
}

/// A Shelly Gen2 switch's status: `apower` (W), `aenergy.total` (Wh),
/// `voltage`, `current`.
fn shelly(o: &Map<String, Value>, device: &str) -> Result<Decoded, String> {
    let mut r = Map::new();
    if let Some(w) = number(o, "apower") {
        r.insert("current_w".into(), json!(w));
    }
    if let Some(Value::Object(e)) = o.get("aenergy") {
        if let Some(wh) = number(e, "total") {
            // In milliwatt-hours, so that 6532.1 Wh reads as 6.5321 kWh.
            r.insert(
                "cumulative_kwh_p".into(),
                json!((wh * 1000.0).round() / 1_000_000.0),
            );
        }
    }
    if let Some(v) = number(o, "voltage") {
        r.insert("voltage_v".into(), json!(v));
    }
    if let Some(a) = number(o, "current") {
        r.insert("current_a".into(), json!(a));
    }
    if r.is_empty() {
        return Ok(Decoded::Nothing(
            "a Shelly status with no quantity of the catalogue",
        ));
    }
    line(device, &r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(d: Decoded) -> Value {
        match d {
            Decoded::Json(b) => serde_json::from_slice(&b).unwrap(),
            other => panic!("not JSON: {other:?}"),
        }
    }

    /// A one-line body's device and fields, as a JSON object.
    fn fields(d: Decoded) -> Value {
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
    fn tasmota_energy_and_sensors() {
        // As a Sonoff POW R2 with an AM2301 publishes it (Tasmota docs).
        let p = br#"{"Time":"2026-11-23T10:00:00","ENERGY":{"TotalStartTime":"2026-01-01T00:00:00","Total":123.456,"Yesterday":1.2,"Today":0.5,"Power":150,"ApparentPower":160,"ReactivePower":20,"Factor":0.94,"Voltage":231,"Current":0.652},"AM2301":{"Temperature":71.6,"Humidity":45.6,"DewPoint":49.1},"TempUnit":"F"}"#;
        let r = &fields(decode("tele/pow-1/SENSOR", p).unwrap());
        assert_eq!(r["device_id"], "pow-1");
        assert_eq!(r["cumulative_kwh_p"], 123.456);
        assert_eq!(r["current_w"], 150.0);
        assert_eq!(r["voltage_v"], 231.0);
        assert_eq!(r["temperature"], 22.0);
        assert_eq!(r["humidity"], 45.6);
        assert_eq!(
            decode(
                "tele/x/SENSOR",
                br#"{"Time":"2026-11-23T10:00:00","Switch1":"ON"}"#
            )
            .unwrap(),
            Decoded::Nothing("a Tasmota SENSOR message with no quantity of the catalogue")
        );
    }

    #[test]
    fn zigbee2mqtt_states_and_names() {
        let p = br#"{"battery":87,"humidity":48.3,"linkquality":102,"pressure":1012.4,"temperature":21.37,"voltage":2985}"#;
        let r = &fields(decode("zigbee2mqtt/Living room/sensor", p).unwrap());
        assert_eq!(r["device_id"], "Living-room-sensor");
        assert_eq!(r["temperature"], 21.37);
        assert_eq!(r["pressure_hpa"], 1012.4);
        assert_eq!(r["battery_pct"], 87.0);
        assert!(r.get("voltage_v").is_none() && r.get("linkquality").is_none());
        assert!(matches!(
            decode("zigbee2mqtt/bridge/state", b"online").unwrap(),
            Decoded::Nothing(_)
        ));
        assert!(matches!(
            decode("zigbee2mqtt/plug/set", br#"{"state":"ON"}"#).unwrap(),
            Decoded::Nothing(_)
        ));
        let e = decode("zigbee2mqtt/s", br#"{"temperature":"warm"}"#).unwrap_err();
        assert!(
            e.to_string().contains("temperature must be a number"),
            "{e}"
        );
    }

    #[test]
    fn shelly_gen2_switch_status() {
        // A Shelly Plus 1PM's status (Shelly's Gen2 API docs): energy in Wh.
        let p = br#"{"id":0,"source":"timer","output":true,"apower":8.9,"voltage":237.5,"current":0.068,"aenergy":{"total":6532.1,"by_minute":[45.3,45.3,45.3],"minute_ts":1654511700},"temperature":{"tC":35.5,"tF":95.9}}"#;
        let r = &fields(decode("shellyplus1pm-a8032ab1c2d3/status/switch:0", p).unwrap());
        assert_eq!(r["device_id"], "shellyplus1pm-a8032ab1c2d3");
        assert_eq!(r["cumulative_kwh_p"], 6.5321);
        assert_eq!(r["current_w"], 8.9);
        let r = &fields(decode("shellypro4pm-1/status/switch:2", p).unwrap());
        assert_eq!(r["device_id"], "shellypro4pm-1-2");
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
