//! Shelly's Gen2 and later devices, which publish each component's status
//! on `<id>/status/<component>` ("generic status update over MQTT"):
//!
//! - `switch:<n>` and `pm1:<n>` (a Plus 1PM, a Pro 4PM, a PM Mini): watts,
//!   the energy counter (`aenergy`, Wh) and, where the device measures
//!   both ways, the returned one (`ret_aenergy`);
//! - `emdata:<n>` (a Pro 3EM: the three phases' totals) and `em1data:<n>`
//!   (a Pro EM or an EM Gen3: a channel's), energy bought and sold, Wh;
//!   `em:<n>` and `em1:<n>`, their watts;
//! - `temperature:<n>`, `humidity:<n>` and `devicepower:<n>` (an H&T, a
//!   Plus AddOn's probes): °C, % and the battery's %.
//!
//! A component other than the first (`switch:2`, `em1data:1`) is its own
//! device, `<id>-<n>`. A device's components come in messages of their own,
//! each a reading at the time it was received (`super::super::ReceiveClock`
//! keeps two of them from sharing a key). The rest of a device's components
//! (`sys`, `wifi`, `input:0`, ...) carry no reading.

use super::{line, number, numbers_into, object, Decoded};
use domain::model::Unit;
use serde_json::{json, Map, Value};

/// The reading of one status message of `component` of the device `id`.
pub(super) fn decode(id: &str, component: &str, payload: &[u8]) -> Result<Decoded, String> {
    let (kind, n) = component.split_once(':').unwrap_or((component, "0"));
    let device = if n == "0" {
        domain::model::device_id_text(id)
    } else {
        domain::model::device_id_text(&format!("{id}-{n}"))
    };
    let fields = match kind {
        "switch" | "pm1" => switch(&object(payload)?),
        "emdata" => counters(&object(payload)?, "total_act", "total_act_ret"),
        "em1data" => counters(
            &object(payload)?,
            "total_act_energy",
            "total_act_ret_energy",
        ),
        "em" => mapped(&object(payload)?, &[("total_act_power", "current_w")]),
        "em1" => mapped(
            &object(payload)?,
            &[
                ("act_power", "current_w"),
                ("voltage", "voltage_v"),
                ("current", "current_a"),
            ],
        ),
        "temperature" => mapped(&object(payload)?, &[("tC", "temperature")]),
        "humidity" => mapped(&object(payload)?, &[("rh", "humidity")]),
        "devicepower" => match object(payload)?.get("battery") {
            Some(Value::Object(b)) => mapped(b, &[("percent", "battery_pct")]),
            _ => Map::new(),
        },
        _ => {
            return Ok(Decoded::Nothing(
                "a Shelly component that carries no reading",
            ))
        }
    };
    if fields.is_empty() {
        return Ok(Decoded::Nothing(
            "a Shelly status with no quantity of the catalogue",
        ));
    }
    line(&device, &fields)
}

/// A switch's or a power meter's: `apower` (W), `aenergy.total` and
/// `ret_aenergy.total` (Wh), `voltage`, `current`.
fn switch(o: &Map<String, Value>) -> Map<String, Value> {
    let mut r = mapped(
        o,
        &[
            ("apower", "current_w"),
            ("voltage", "voltage_v"),
            ("current", "current_a"),
        ],
    );
    for (from, to) in [
        ("aenergy", "cumulative_kwh_p"),
        ("ret_aenergy", "cumulative_kwh_n"),
    ] {
        if let Some(Value::Object(e)) = o.get(from) {
            if let Some(wh) = number(e, "total") {
                r.insert(to.into(), json!(Unit::WattHour.to_catalogue(wh)));
            }
        }
    }
    r
}

/// The numbers of `o` under their names of ours.
fn mapped(o: &Map<String, Value>, names: &[(&str, &str)]) -> Map<String, Value> {
    let mut r = Map::new();
    numbers_into(&mut r, o, names);
    r
}

/// An energy meter's totals: `bought` and `sold` (Wh).
fn counters(o: &Map<String, Value>, bought: &str, sold: &str) -> Map<String, Value> {
    let mut r = Map::new();
    for (from, to) in [(bought, "cumulative_kwh_p"), (sold, "cumulative_kwh_n")] {
        if let Some(wh) = number(o, from) {
            r.insert(to.into(), json!(Unit::WattHour.to_catalogue(wh)));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::super::tests::fields;
    use super::super::{decode, Decoded};

    #[test]
    fn a_switch_and_a_power_meter() {
        // A Shelly Plus 1PM's status (Shelly's Gen2 API docs): energy in Wh.
        let p = br#"{"id":0,"source":"timer","output":true,"apower":8.9,"voltage":237.5,"current":0.068,"aenergy":{"total":6532.1,"by_minute":[45.3,45.3,45.3],"minute_ts":1654511700},"temperature":{"tC":35.5,"tF":95.9}}"#;
        let r = &fields(decode("shellyplus1pm-a8032ab1c2d3/status/switch:0", p).unwrap());
        assert_eq!(r["device_id"], "shellyplus1pm-a8032ab1c2d3");
        assert_eq!(r["cumulative_kwh_p"], 6.5321);
        assert!(r.get("cumulative_kwh_n").is_none());
        assert_eq!(r["current_w"], 8.9);
        let r = &fields(decode("shellypro4pm-1/status/switch:2", p).unwrap());
        assert_eq!(r["device_id"], "shellypro4pm-1-2");
        // A PM Mini behind a balcony inverter: it returns energy too.
        let p = br#"{"id":0,"voltage":231.2,"current":1.71,"apower":-381.4,"freq":50.0,"aenergy":{"total":120.25,"by_minute":[0,0,0],"minute_ts":1795226400},"ret_aenergy":{"total":98765.4,"by_minute":[0,0,0],"minute_ts":1795226400}}"#;
        let r = &fields(decode("shellypmmini-b1/status/pm1:0", p).unwrap());
        assert_eq!(r["device_id"], "shellypmmini-b1");
        assert_eq!(r["cumulative_kwh_p"], 0.12025);
        assert_eq!(r["cumulative_kwh_n"], 98.7654);
        assert_eq!(r["current_w"], -381.4);
    }

    #[test]
    fn energy_meters_counters() {
        // A Pro 3EM's totals over its three phases (EMData's status).
        let p = br#"{"id":0,"a_total_act_energy":1000.5,"a_total_act_ret_energy":10.0,"b_total_act_energy":2000.25,"b_total_act_ret_energy":20.0,"c_total_act_energy":3000.0,"c_total_act_ret_energy":30.5,"total_act":6000.75,"total_act_ret":60.5}"#;
        let r = &fields(decode("shellypro3em-c8f09e/status/emdata:0", p).unwrap());
        assert_eq!(r["device_id"], "shellypro3em-c8f09e");
        assert_eq!(r["cumulative_kwh_p"], 6.00075);
        assert_eq!(r["cumulative_kwh_n"], 0.0605);
        assert_eq!(r.as_object().unwrap().len(), 3, "{r}");
        // A Pro EM's second channel (EM1Data's status) is a device of its own.
        let p = br#"{"id":1,"total_act_energy":6644.90,"total_act_ret_energy":2595.26}"#;
        let r = &fields(decode("shellyproem50-08f9e0/status/em1data:1", p).unwrap());
        assert_eq!(r["device_id"], "shellyproem50-08f9e0-1");
        assert_eq!(r["cumulative_kwh_p"], 6.6449);
        assert_eq!(r["cumulative_kwh_n"], 2.59526);
    }

    #[test]
    fn meters_watts_and_a_thermometers_parts() {
        // A Pro 3EM's watts over its phases (EM's status), negative while
        // exporting.
        let p = br#"{"id":0,"a_current":1.2,"a_voltage":231.1,"a_act_power":-250.5,"b_act_power":100.0,"c_act_power":50.25,"total_current":2.5,"total_act_power":-100.25,"total_aprt_power":600.0}"#;
        let r = &fields(decode("shellypro3em-c8f09e/status/em:0", p).unwrap());
        assert_eq!(r["device_id"], "shellypro3em-c8f09e");
        assert_eq!(r["current_w"], -100.25);
        assert_eq!(r.as_object().unwrap().len(), 2, "{r}");
        // A Pro EM's second channel (EM1's status).
        let p = br#"{"id":1,"current":22.78,"voltage":224.6,"act_power":5080.3,"aprt_power":5142.4,"pf":0.99,"freq":50.0}"#;
        let r = &fields(decode("shellyproem50-08f9e0/status/em1:1", p).unwrap());
        assert_eq!(r["device_id"], "shellyproem50-08f9e0-1");
        assert_eq!(r["current_w"], 5080.3);
        assert_eq!(r["voltage_v"], 224.6);
        assert_eq!(r["current_a"], 22.78);
        // An H&T Gen3's parts, and a Plus AddOn's second probe.
        for (topic, payload, quantity, value) in [
            (
                "shellyhtg3-1/status/temperature:0",
                r#"{"id":0,"tC":21.6,"tF":70.9}"#,
                "temperature",
                21.6,
            ),
            (
                "shellyhtg3-1/status/humidity:0",
                r#"{"id":0,"rh":51.2}"#,
                "humidity",
                51.2,
            ),
            (
                "shellyhtg3-1/status/devicepower:0",
                r#"{"id":0,"battery":{"V":5.98,"percent":85},"external":{"present":false}}"#,
                "battery_pct",
                85.0,
            ),
        ] {
            let r = &fields(decode(topic, payload.as_bytes()).unwrap());
            assert_eq!(r["device_id"], "shellyhtg3-1", "{topic}");
            assert_eq!(r[quantity], value, "{topic}");
        }
        let p = br#"{"id":101,"tC":8.25,"tF":46.8}"#;
        let r = &fields(decode("shellyplus1-addon/status/temperature:101", p).unwrap());
        assert_eq!(r["device_id"], "shellyplus1-addon-101");
        assert_eq!(r["temperature"], 8.25);
    }

    #[test]
    fn components_without_a_reading_are_acknowledged() {
        for (topic, payload) in [
            ("shellyplus1pm-a1/status/sys", r#"{"uptime":28980}"#),
            ("shellyplus1pm-a1/status/wifi", r#"{"rssi":-60}"#),
            (
                "shellyhtg3-1/status/devicepower:0",
                r#"{"id":0,"external":{"present":true}}"#,
            ),
            (
                "shellyplus1pm-a1/status/input:0",
                r#"{"id":0,"state":false}"#,
            ),
            (
                "shellyplus1pm-a1/status/switch:0",
                r#"{"id":0,"output":true}"#,
            ),
        ] {
            assert!(
                matches!(decode(topic, payload.as_bytes()), Ok(Decoded::Nothing(_))),
                "{topic}"
            );
        }
        assert!(decode("shellypro3em-1/status/emdata:0", b"{nope").is_err());
    }
}
