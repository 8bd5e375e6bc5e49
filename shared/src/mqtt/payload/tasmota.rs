//! Tasmota's `tele/<device>/SENSOR` telemetry: its energy monitor
//! (`ENERGY`), a smart meter read through its Smart Meter Interface (an
//! object with `Total_in`, `Total_out` and `Power_cur`, as the meters of
//! Tasmota's docs name them, or `Power_curr`, as evcc asks: a Hichi or
//! bitShake reader on a German meter), and its sensors' objects
//! (`AM2301`, `BME280`, ...).

use super::{line, number, numbers_into, Decoded};
use domain::model::Unit;
use serde_json::{json, Map, Value};

/// A sensor object's names (Tasmota's, ours), `Temperature` aside (it may
/// be in °F). A meter's through the Smart Meter Interface: `Power_cur` as
/// the meters of Tasmota's docs name it, `Power_curr` as evcc asks.
const SENSOR_NAMES: &[(&str, &str)] = &[
    ("Total_in", "cumulative_kwh_p"),
    ("Total_out", "cumulative_kwh_n"),
    ("Power_cur", "current_w"),
    ("Power_curr", "current_w"),
    ("Humidity", "humidity"),
    ("Pressure", "pressure_hpa"),
    ("CarbonDioxide", "co2_ppm"),
    ("Illuminance", "illuminance_lx"),
];

/// The readings of one `SENSOR` message: one line, or nothing where it
/// carries no quantity of the catalogue.
pub(super) fn decode(o: &Map<String, Value>, device: &str) -> Result<Decoded, String> {
    let mut r = Map::new();
    if let Some(Value::Object(e)) = o.get("ENERGY") {
        // A device of several channels (a Shelly 2.5 under Tasmota) gives
        // `Power` per channel, and `Total` too with `SetOption129`: the
        // meter's are their sums.
        for (from, to) in [
            ("Total", "cumulative_kwh_p"),
            ("ExportActive", "cumulative_kwh_n"),
            ("Power", "current_w"),
        ] {
            if let Some(v) = number_or_sum(e, from) {
                r.insert(to.into(), json!(v));
            }
        }
        numbers_into(
            &mut r,
            e,
            &[("Voltage", "voltage_v"), ("Current", "current_a")],
        );
    }
    // `TempUnit` says the unit of every temperature in the message.
    let unit = o
        .get("TempUnit")
        .and_then(Value::as_str)
        .and_then(Unit::parse)
        .filter(|u| u.is_temperature())
        .unwrap_or(Unit::Celsius);
    // The first object that has each quantity (a device with two
    // temperature sensors is two devices in Tasmota's eyes too: `Sensor1`, ...).
    for (name, v) in o {
        let Value::Object(s) = v else { continue };
        if name == "ENERGY" {
            continue;
        }
        numbers_into(&mut r, s, SENSOR_NAMES);
        if let Some(t) = number(s, "Temperature") {
            r.entry("temperature")
                .or_insert(json!(unit.to_catalogue(t)));
        }
    }
    if r.is_empty() {
        return Ok(Decoded::Nothing(
            "a Tasmota SENSOR message with no quantity of ours (a meter script names its values Total_in, Total_out, Power_cur: docs/mqtt.md)",
        ));
    }
    line(device, &r)
}

/// A number, or the sum of an array of numbers (one per channel).
fn number_or_sum(o: &Map<String, Value>, key: &str) -> Option<f64> {
    match o.get(key)? {
        Value::Array(items) if !items.is_empty() => {
            items.iter().map(Value::as_f64).sum::<Option<f64>>()
        }
        v => v.as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fields;
    use super::super::{decode, Decoded};

    #[test]
    fn energy_monitor_and_sensors() {
        // As a Sonoff POW R2 with an AM2301 publishes it (Tasmota docs).
        let p = br#"{"Time":"2026-11-23T10:00:00","ENERGY":{"TotalStartTime":"2026-01-01T00:00:00","Total":123.456,"Yesterday":1.2,"Today":0.5,"Power":150,"ApparentPower":160,"ReactivePower":20,"Factor":0.94,"Voltage":231,"Current":0.652},"AM2301":{"Temperature":71.6,"Humidity":45.6,"DewPoint":49.1},"TempUnit":"F"}"#;
        let r = &fields(decode("tele/pow-1/SENSOR", p).unwrap());
        assert_eq!(r["device_id"], "pow-1");
        assert_eq!(r["cumulative_kwh_p"], 123.456);
        assert!(r.get("cumulative_kwh_n").is_none());
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
            Decoded::Nothing("a Tasmota SENSOR message with no quantity of ours (a meter script names its values Total_in, Total_out, Power_cur: docs/mqtt.md)")
        );
    }

    #[test]
    fn an_energy_monitor_that_exports_and_one_of_two_channels() {
        let p = br#"{"ENERGY":{"Total":10.5,"ExportActive":2.25,"Power":-320,"Voltage":230}}"#;
        let r = &fields(decode("tele/em-1/SENSOR", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 10.5);
        assert_eq!(r["cumulative_kwh_n"], 2.25);
        assert_eq!(r["current_w"], -320.0);
        // A Shelly 2.5 under Tasmota with `SetOption129 1`: a value per
        // channel; the voltage, one a channel too, is not summed.
        let p = br#"{"ENERGY":{"Total":[1.5,2.25],"Power":[40,60],"Voltage":[230,231]}}"#;
        let r = &fields(decode("tele/shelly25/SENSOR", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 3.75);
        assert_eq!(r["current_w"], 100.0);
        assert!(r.get("voltage_v").is_none());
    }

    #[test]
    fn a_smart_meter_through_the_smart_meter_interface() {
        // A Hichi reader's script as evcc asks for it: kWh to 4 decimals,
        // watts negative while exporting, and the meter's number.
        let p = br#"{"Time":"2026-11-23T10:00:00","SML":{"Total_in":12345.6789,"Total_out":4321.0987,"Power_curr":-512,"Meter_Id":"0a01454d4800009a1b2c"}}"#;
        let r = &fields(decode("tele/hichi/SENSOR", p).unwrap());
        assert_eq!(r["device_id"], "hichi");
        assert_eq!(r["cumulative_kwh_p"], 12345.6789);
        assert_eq!(r["cumulative_kwh_n"], 4321.0987);
        assert_eq!(r["current_w"], -512.0);
        assert_eq!(r.as_object().unwrap().len(), 4, "{r}");
        // Any name of the meter's group, and a meter that only imports,
        // its script as in Tasmota's docs (`Power_cur`, a meter number).
        let p = br#"{"MT681":{"Total_in":88.5,"Power_cur":230,"Meter_id":"0901454d48000034a1b2"}}"#;
        let r = &fields(decode("tele/hichi/SENSOR", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 88.5);
        assert_eq!(r["current_w"], 230.0);
        assert!(r.get("cumulative_kwh_n").is_none());
    }
}
