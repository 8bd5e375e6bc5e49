//! Shelly's first generation (a Plug S, a 1PM, an EM, a 3EM, an H&T), which
//! publishes each value on a topic of its own under `shellies/<id>/`, as
//! plain text:
//!
//! - `relay/<n>/power`, `light/<n>/power`, `roller/<n>/power` (W), and their
//!   `energy`: Watt-minutes since the device started (a restart is a reset,
//!   which energy answers count as such);
//! - `emeter/<n>/power` (W), `total` and `total_returned` (Wh, kept across
//!   restarts), `voltage`, `current`: an EM's or a 3EM's channel or phase;
//! - `sensor/temperature`, `sensor/humidity`, `sensor/battery`: an H&T's.
//!
//! A channel other than the first is its own device, `<id>-<n>`, as with
//! Shelly's later devices (`super::shelly`). The rest (`online`, `announce`,
//! `relay/0` on or off, a relay's own `temperature`) carry no reading.

use super::{kwh, line, Decoded};
use serde_json::{json, Map};

/// The reading of one message on `shellies/<id>/<rest>`.
pub(super) fn decode(id: &str, rest: &[&str], payload: &[u8]) -> Result<Decoded, String> {
    // The channel, our name, and how many of its units make a kWh, for
    // an energy counter.
    let (channel, quantity, per_kwh) = match rest {
        ["relay" | "light" | "roller", n, "power"] => (*n, "current_w", None),
        ["relay" | "light" | "roller", n, "energy"] => (*n, "cumulative_kwh_p", Some(60_000.0)),
        ["emeter", n, "power"] => (*n, "current_w", None),
        ["emeter", n, "total"] => (*n, "cumulative_kwh_p", Some(1000.0)),
        ["emeter", n, "total_returned"] => (*n, "cumulative_kwh_n", Some(1000.0)),
        ["emeter", n, "voltage"] => (*n, "voltage_v", None),
        ["emeter", n, "current"] => (*n, "current_a", None),
        ["sensor", "temperature"] => ("0", "temperature", None),
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
    let value = per_kwh.map_or(value, |per| kwh(value, per));
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
