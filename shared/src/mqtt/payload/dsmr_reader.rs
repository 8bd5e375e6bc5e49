//! DSMR-reader's telegram as JSON on `dsmr/json`: a Dutch, Belgian or
//! Luxembourg smart meter read through its P1 port. The meter counts each
//! tariff on its own register (`electricity_delivered_1` and `_2`, kWh, bought;
//! `electricity_returned_1` and `_2`, sold; `energy_delivered_tariff1` and so
//! on as DSMR loggers name them): a household's bought energy is their sum,
//! so one message must carry both, and each is kept as its tariff's counter. Its other shapes (a topic a
//! field, on `dsmr/reading/...`; day totals; statistics) carry one register a
//! message, and are acknowledged with a reason.

use super::{kind, Decoded};
use domain::model::Unit;
use serde_json::{json, Map, Value};

/// The device a DSMR-reader's meter is (it publishes one meter, and its
/// topics name none).
const DEVICE: &str = "dsmr";

/// The reading of one JSON telegram (DSMR-reader's default field names), at
/// the meter's own time when it gives one.
pub(super) fn decode(o: &Map<String, Value>) -> Result<Decoded, String> {
    let number = |key: &str| -> Result<Option<f64>, String> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            // As DSMR-reader publishes its registers: Django's JSON encoder
            // writes a decimal as text ("4021.117"). A number is read too.
            Some(Value::String(s)) => s
                .parse::<f64>()
                .map(Some)
                .map_err(|_| format!("{key} must be a number, got {s:?}")),
            Some(other) => Err(format!("{key} must be a number, got {}", kind(other))),
        }
    };
    // A register by DSMR-reader's name or by the one DSMR loggers and
    // ESPHome's `dsmr` publish (`energy_delivered_tariff1`).
    let register = |reader: &str, logger: &str| -> Result<Option<f64>, String> {
        Ok(number(reader)?.or(number(logger)?))
    };
    let tariffs = |direction: &str| -> Result<[Option<f64>; 2], String> {
        Ok([
            register(
                &format!("electricity_{direction}_1"),
                &format!("energy_{direction}_tariff1"),
            )?,
            register(
                &format!("electricity_{direction}_2"),
                &format!("energy_{direction}_tariff2"),
            )?,
        ])
    };
    let mut r = Map::new();
    r.insert("device_id".into(), json!(DEVICE));
    match o.get("timestamp") {
        Some(Value::String(t)) => {
            r.insert("timestamp".into(), json!(t));
        }
        None | Some(Value::Null) => {}
        Some(other) => return Err(format!("timestamp must be a string, got {}", kind(other))),
    }
    // The meter's total is its registers' sum (a register it lacks counts
    // nothing), and each register is kept as its tariff's counter: one
    // meter, whose energy answer and dashboard keep the tariffs apart.
    for (total, direction, names) in [
        (
            "cumulative_kwh_p",
            "delivered",
            ["cumulative_kwh_p_t1", "cumulative_kwh_p_t2"],
        ),
        (
            "cumulative_kwh_n",
            "returned",
            ["cumulative_kwh_n_t1", "cumulative_kwh_n_t2"],
        ),
    ] {
        let registers = tariffs(direction)?;
        if registers.iter().all(Option::is_none) {
            continue;
        }
        let sum = registers.iter().flatten().sum::<f64>();
        r.insert(total.into(), json!(domain::aggregate::to_the_mwh(sum)));
        for (name, v) in names.iter().zip(registers) {
            if let Some(v) = v {
                r.insert((*name).into(), json!(v));
            }
        }
    }
    // kW, drawn and given back: one signed power (negative while exporting).
    let drawn = number("electricity_currently_delivered")?;
    let given = number("electricity_currently_returned")?;
    if drawn.is_some() || given.is_some() {
        let kw = drawn.unwrap_or(0.0) - given.unwrap_or(0.0);
        r.insert("current_w".into(), json!(Unit::Kilowatt.to_catalogue(kw)));
    }
    // The gas meter's counter, read by the electricity meter (hourly, or
    // every 5 minutes); it is stored at the telegram's time.
    if let Some(m3) = number("extra_device_delivered")? {
        r.insert("gas_m3".into(), json!(m3));
    }
    if r.len() == 1 + usize::from(r.contains_key("timestamp")) {
        return Ok(Decoded::Nothing(
            "a DSMR-reader JSON telegram with none of its meter fields",
        ));
    }
    serde_json::to_vec(&Value::Object(r))
        .map(Decoded::Json)
        .map_err(|e| e.to_string())
}

/// Why DSMR-reader's other topics carry no reading.
pub(super) const OTHER_TOPICS: &str = "a DSMR-reader topic of one field: enable its \
     \"MQTT: Telegram (as JSON)\" (dsmr/json), which carries both tariffs in one message";

#[cfg(test)]
mod tests {
    use super::super::tests::body as json;
    use super::super::{decode, Decoded};

    #[test]
    fn a_telegram_is_one_reading_of_both_tariffs() {
        // DSMR-reader's default mapping, as it publishes it
        // (`json.dumps(..., cls=DjangoJSONEncoder)`: the registers are
        // decimals, written as text; a UTC time ends in Z).
        let p = br#"{"id": 4181, "timestamp": "2026-11-21T10:00:01Z",
            "electricity_delivered_1": "4021.117", "electricity_returned_1": "1102.500",
            "electricity_delivered_2": "3817.250", "electricity_returned_2": "2310.016",
            "electricity_currently_delivered": "0.000", "electricity_currently_returned": "1.212",
            "phase_currently_delivered_l1": "0.000", "phase_currently_delivered_l2": "0.000",
            "phase_currently_delivered_l3": "0.000",
            "extra_device_timestamp": "2026-11-21T10:00:00Z", "extra_device_delivered": "2210.371"}"#;
        let r = json(decode("dsmr/json", p).unwrap());
        assert_eq!(r["device_id"], "dsmr");
        assert_eq!(r["timestamp"], "2026-11-21T10:00:01Z");
        assert_eq!(r["cumulative_kwh_p"], 7838.367);
        assert_eq!(r["cumulative_kwh_n"], 3412.516);
        assert_eq!(r["current_w"], -1212.0, "exporting");
        assert_eq!(r["gas_m3"], 2210.371);
        // Each register as its tariff's counter (issue 79).
        assert_eq!(r["cumulative_kwh_p_t1"], 4021.117);
        assert_eq!(r["cumulative_kwh_p_t2"], 3817.25);
        assert_eq!(r["cumulative_kwh_n_t1"], 1102.5);
        assert_eq!(r["cumulative_kwh_n_t2"], 2310.016);
    }

    /// The registers as DSMR loggers and ESPHome's `dsmr` name them.
    #[test]
    fn a_loggers_telegram_names_its_tariffs_otherwise() {
        let p = br#"{"energy_delivered_tariff1": 4021.117, "energy_delivered_tariff2": 3817.25,
            "energy_returned_tariff1": 0.0, "energy_returned_tariff2": 0.0,
            "electricity_currently_delivered": 0.412}"#;
        let r = json(decode("dsmr/json", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 7838.367);
        assert_eq!(
            (&r["cumulative_kwh_p_t1"], &r["cumulative_kwh_p_t2"]),
            (&serde_json::json!(4021.117), &serde_json::json!(3817.25))
        );
        assert_eq!(r["cumulative_kwh_n"], 0.0);
        assert_eq!(r["current_w"], 412.0);
    }

    #[test]
    fn a_meter_without_gas_or_return_and_numbers_as_numbers() {
        // `use_local_timezone`, no gas meter, and numbers (a reading made in
        // memory, as DSMR-reader's own tests publish one).
        let p = br#"{"timestamp": "2026-11-21T11:00:01+01:00", "electricity_delivered_1": 12.5,
            "electricity_delivered_2": 7.25, "electricity_currently_delivered": 0.35,
            "extra_device_delivered": null}"#;
        let r = json(decode("dsmr/json", p).unwrap());
        assert_eq!(r["cumulative_kwh_p"], 19.75);
        assert_eq!(r["current_w"], 350.0);
        assert!(r.get("cumulative_kwh_n").is_none() && r.get("gas_m3").is_none());
        assert!(decode("dsmr/json", br#"{"electricity_delivered_1": true}"#).is_err());
        assert!(decode("dsmr/json", br#"{"electricity_delivered_1": "n/a"}"#).is_err());
        assert!(matches!(
            decode(
                "dsmr/json",
                br#"{"id": 3, "timestamp": "2026-11-21T10:00:01Z"}"#
            )
            .unwrap(),
            Decoded::Nothing(_)
        ));
    }

    #[test]
    fn its_topics_of_one_field_are_acknowledged_with_the_reason() {
        for topic in [
            "dsmr/reading/electricity_delivered_1",
            "dsmr/day-consumption/electricity_merged",
            "dsmr/meter-stats/dsmr_version",
        ] {
            let Decoded::Nothing(why) = decode(topic, b"1234.5").unwrap() else {
                panic!("{topic}")
            };
            assert!(why.contains("dsmr/json"), "{topic}: {why}");
        }
    }
}
