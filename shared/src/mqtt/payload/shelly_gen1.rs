//! Shelly's first generation (a Plug S, a 1PM, an EM, a 3EM, an H&T), which
//! publishes each value on a topic of its own under `shellies/<id>/`, as
//! plain text:
//!
//! - `relay/<n>/power`, `light/<n>/power`, `roller/<n>/power` (W), and their
//!   `energy`: Watt-minutes since the device started (a restart is a reset,
//!   which energy answers count as such);
//! - `emeter/<n>/power` (W), `total` and `total_returned` (Wh, kept across
//!   restarts), `voltage`, `current`: an EM's or a 3EM's channel or phase;
//! - `sensor/temperature`, `sensor/humidity`, `sensor/battery`: an H&T's
//!   (a Flood's, a Door/Window's); the temperature in the unit the device is
//!   set to, which only its `info` message says (`tmp.units`, issue 79):
//!   `info` notes it, and the device's temperatures are converted by it
//!   from then on (°C until a device's first `info`: it publishes one each
//!   time it wakes).
//!
//! A channel other than the first is its own device, `<id>-<n>`, as with
//! Shelly's later devices (`super::shelly`). The rest (`online`, `announce`,
//! `relay/0` on or off, a relay's own `temperature`) carry no reading.

use super::{line, Decoded};
use domain::model::Unit;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The temperature unit each device's `info` said last, by device id.
fn temperature_units() -> &'static Mutex<HashMap<String, Unit>> {
    static UNITS: OnceLock<Mutex<HashMap<String, Unit>>> = OnceLock::new();
    UNITS.get_or_init(Default::default)
}

/// Notes the unit an `info` message gives its temperatures in.
fn note_units(id: &str, payload: &[u8]) -> Result<Decoded, String> {
    let info: Value =
        serde_json::from_slice(payload).map_err(|e| format!("info: not JSON: {e}"))?;
    if let Some(unit) = info["tmp"]["units"]
        .as_str()
        .and_then(Unit::parse)
        .filter(|u| u.is_temperature())
    {
        temperature_units()
            .lock()
            .expect("units")
            .insert(id.to_owned(), unit);
    }
    Ok(Decoded::Nothing(
        "a Shelly Gen1 info message: the unit of its temperatures is noted, its values come on their own topics",
    ))
}

/// The reading of one message on `shellies/<id>/<rest>`.
pub(super) fn decode(id: &str, rest: &[&str], payload: &[u8]) -> Result<Decoded, String> {
    if rest == ["info"] {
        return note_units(id, payload);
    }
    // The channel, our name, and the unit its value comes in (the
    // catalogue's where none is named).
    let (channel, quantity, unit) = match rest {
        ["relay" | "light" | "roller", n, "power"] => (*n, "current_w", None),
        ["relay" | "light" | "roller", n, "energy"] => {
            (*n, "cumulative_kwh_p", Some(Unit::WattMinute))
        }
        ["emeter", n, "power"] => (*n, "current_w", None),
        ["emeter", n, "total"] => (*n, "cumulative_kwh_p", Some(Unit::WattHour)),
        ["emeter", n, "total_returned"] => (*n, "cumulative_kwh_n", Some(Unit::WattHour)),
        ["emeter", n, "voltage"] => (*n, "voltage_v", None),
        ["emeter", n, "current"] => (*n, "current_a", None),
        ["sensor", "temperature"] => {
            let noted = temperature_units().lock().expect("units").get(id).copied();
            ("0", "temperature", noted)
        }
        ["sensor", "humidity"] => ("0", "humidity", None),
        ["sensor", "battery"] => ("0", "battery_pct", None),
        _ => {
            return Ok(Decoded::Nothing(
                "a Shelly Gen1 topic that carries no reading of ours",
            ))
        }
    };
    let text = std::str::from_utf8(payload)
        .map_err(|_| "not UTF-8 text".to_owned())?
        .trim();
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{quantity}: a number was expected, got {text:?}"))?;
    let value = unit.map_or(value, |u| u.to_catalogue(value));
    let device = if channel == "0" {
        domain::model::device_id_text(id)
    } else {
        domain::model::device_id_text(&format!("{id}-{channel}"))
    };
    let mut fields = Map::new();
    fields.insert(quantity.into(), json!(value));
    line(&device, &fields)
}

#[cfg(test)]
mod tests {
    use super::super::tests::fields;
    use super::super::{decode, Decoded};

    #[test]
    fn a_value_a_topic() {
        for (topic, payload, device, quantity, value) in [
            (
                "shellies/shellyplug-s-7e1d/relay/0/power",
                "41.5",
                "shellyplug-s-7e1d",
                "current_w",
                41.5,
            ),
            // Watt-minutes: 123,456 of them are 2.0576 kWh.
            (
                "shellies/shellyplug-s-7e1d/relay/0/energy",
                "123456",
                "shellyplug-s-7e1d",
                "cumulative_kwh_p",
                2.0576,
            ),
            (
                "shellies/shellyswitch25-1/relay/1/energy",
                "60000",
                "shellyswitch25-1-1",
                "cumulative_kwh_p",
                1.0,
            ),
            (
                "shellies/shellyem3-c45bbe/emeter/0/power",
                "-250.5",
                "shellyem3-c45bbe",
                "current_w",
                -250.5,
            ),
            (
                "shellies/shellyem3-c45bbe/emeter/2/total",
                "6000.75",
                "shellyem3-c45bbe-2",
                "cumulative_kwh_p",
                6.00075,
            ),
            (
                "shellies/shellyem-b1/emeter/0/total_returned",
                "60.5",
                "shellyem-b1",
                "cumulative_kwh_n",
                0.0605,
            ),
            (
                "shellies/shellyem-b1/emeter/1/voltage",
                "231.2",
                "shellyem-b1-1",
                "voltage_v",
                231.2,
            ),
            (
                "shellies/shellyht-a1/sensor/temperature",
                "21.5",
                "shellyht-a1",
                "temperature",
                21.5,
            ),
            (
                "shellies/shellyht-a1/sensor/humidity",
                " 48.5\n",
                "shellyht-a1",
                "humidity",
                48.5,
            ),
            (
                "shellies/shellyht-a1/sensor/battery",
                "87",
                "shellyht-a1",
                "battery_pct",
                87.0,
            ),
        ] {
            let r = &fields(decode(topic, payload.as_bytes()).unwrap());
            assert_eq!(r["device_id"], device, "{topic}");
            assert_eq!(r[quantity], value, "{topic}");
            assert_eq!(r.as_object().unwrap().len(), 2, "{topic}: {r}");
        }
    }

    /// An H&T set to °F says so in its `info` message alone (`tmp.units`):
    /// its temperatures are converted from then on; another H&T's stay °C.
    #[test]
    fn an_h_and_t_set_to_fahrenheit_is_read_in_celsius_once_its_info_says_so() {
        let info = br#"{"tmp":{"value":68.0,"units":"F","tC":20.0,"tF":68.0,"is_valid":true},"hum":{"value":45.5,"is_valid":true},"bat":{"value":87,"voltage":2.9}}"#;
        assert!(matches!(
            decode("shellies/shellyht-f1/info", info),
            Ok(Decoded::Nothing(_))
        ));
        let t = |id: &str| {
            fields(decode(&format!("shellies/{id}/sensor/temperature"), b"68").unwrap())
                ["temperature"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(t("shellyht-f1"), 20.0, "68 °F is a 20 °C bedroom");
        assert_eq!(t("shellyht-c9"), 68.0, "no info: °C");
        // Set back to °C, the next info says so.
        let celsius = br#"{"tmp":{"value":20.0,"units":"C","tC":20.0,"tF":68.0,"is_valid":true}}"#;
        decode("shellies/shellyht-f1/info", celsius).unwrap();
        assert_eq!(t("shellyht-f1"), 68.0);
        assert!(decode("shellies/shellyht-f1/info", b"not json").is_err());
    }

    #[test]
    fn the_rest_is_acknowledged_and_a_bad_value_is_an_error() {
        for (topic, payload) in [
            ("shellies/announce", r#"{"id":"shellyem-b1","mac":"B1"}"#),
            ("shellies/shellyem-b1/online", "true"),
            ("shellies/shellyplug-s-7e1d/relay/0", "on"),
            ("shellies/shellyplug-s-7e1d/temperature", "38.5"),
            ("shellies/shellyplug-s-7e1d/relay/0/command", "off"),
        ] {
            assert!(
                matches!(decode(topic, payload.as_bytes()), Ok(Decoded::Nothing(_))),
                "{topic}"
            );
        }
        let e = decode("shellies/shellyem-b1/emeter/0/total", b"lots").unwrap_err();
        assert!(e.to_string().contains("a number was expected"), "{e}");
    }
}
