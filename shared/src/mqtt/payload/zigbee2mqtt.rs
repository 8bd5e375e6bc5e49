//! Zigbee2MQTT's `zigbee2mqtt/<friendly name>`: the quantities of the
//! catalogue a device's state reports; `linkquality`, `voltage` (a
//! battery's millivolts) and the rest are left out.

use super::{kind, line, Decoded};
use serde_json::{json, Map, Value};

/// The reading of one device state: one line, or nothing where it carries
/// no quantity of the catalogue.
pub(super) fn decode(o: &Map<String, Value>, device: &str) -> Result<Decoded, String> {
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
        // A bidirectional meter's energy returned to the grid (Tuya's DIN
        // meters: "Sum of produced energy").
        ("produced_energy", "cumulative_kwh_n"),
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

#[cfg(test)]
mod tests {
    use super::super::tests::fields;
    use super::super::{decode, Decoded};

    #[test]
    fn states_and_names() {
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
        // A Tuya DIN meter that measures both ways.
        let p = br#"{"energy":1234.56,"produced_energy":78.9,"power":-640,"voltage":231.5,"current":2.9,"state":"ON"}"#;
        let r = &fields(decode("zigbee2mqtt/din-meter", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 1234.56);
        assert_eq!(r["cumulative_kwh_n"], 78.9);
        assert_eq!(r["current_w"], -640.0);
        let e = decode("zigbee2mqtt/s", br#"{"temperature":"warm"}"#).unwrap_err();
        assert!(
            e.to_string().contains("temperature must be a number"),
            "{e}"
        );
    }
}
