//! What Home Assistant's InfluxDB integration means by a line's `value`: the
//! quantity its unit and device class name (docs/line-protocol.md).
//!
//! The integration writes an entity's state as `value`, with its attributes as
//! extra fields (strings with a `_str` suffix). Where the unit and the class
//! are depends on its `measurement_attr`:
//!
//! * `unit_of_measurement` (the default): the measurement is the unit, and
//!   the class is `device_class_str`;
//! * `domain__device_class`: the measurement is `sensor__<class>`, and the
//!   unit is `unit_of_measurement_str`;
//! * `entity_id`: the measurement is the entity's id, the unit
//!   `unit_of_measurement_str`, the class `device_class_str`.
//!
//! An energy counter (`kWh`) does not say which way it counts: that is read
//! from the entity's id and name ([`sold`]). A tariff's counter (a utility
//! meter's `sensor.energy_t1`, the DSMR integration's `..._tarif_2`) is
//! its meter's: the entity's id without the tariff is the device, and the
//! value that tariff's counter ([`tariff_entity`]).

use super::{Convert, LineView};
use domain::model::{Quantity, Unit};

/// The quantity of a Home Assistant line's `value`, and how to convert it to
/// the catalogue's unit; `None` when its unit and class do not say (a `%` of a
/// CPU, a `kWh` of a battery's charge).
pub(super) fn quantity(line: &impl LineView) -> Option<(Quantity, Convert)> {
    mapping(line).ok()
}

/// Why a line's `value` is no quantity ([`quantity`] found none), in words.
pub(super) fn why_not(line: &impl LineView) -> String {
    let Err(unmapped) = mapping(line) else {
        return "its value is a quantity".to_owned();
    };
    let (unit, class) = unit_and_class(line);
    let class = class.map_or("without a device_class_str".to_owned(), |c| {
        format!("with class {c}")
    });
    match unmapped {
        Unmapped::Class(wanted) => {
            format!("a value in {unit} is stored only with class {wanted}, here {class}")
        }
        Unmapped::StoredEnergy => format!(
            "a value in {unit} {class} and state class {} is stored energy, not a counter of \
             energy bought or sold",
            line.text_field("state_class_str").unwrap_or("none")
        ),
        Unmapped::Unit => format!(
            "the value's measurement {:?} (unit {unit:?}) names no quantity of the catalogue \
             (docs/line-protocol.md)",
            line.measurement()
        ),
    }
}

/// Why a unit and class map to no quantity: the one decision behind both
/// [`quantity`] and [`why_not`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmapped {
    /// A unit that is ours only with one of these classes.
    Class(&'static str),
    /// Energy that is stored (`energy_storage`, state class `measurement`),
    /// not counted.
    StoredEnergy,
    /// A unit that is none of ours.
    Unit,
}

fn mapping(line: &impl LineView) -> Result<(Quantity, Convert), Unmapped> {
    let measurement = line.measurement();
    let (unit, class) = unit_and_class(line);
    let same: Convert = |v| v;
    let lower = unit.to_ascii_lowercase();
    let q = match (lower.as_str(), class) {
        ("°f", _) => return Ok((Quantity::Temperature, |f| Unit::Fahrenheit.to_catalogue(f))),
        ("°c", _) => Quantity::Temperature,
        ("%", Some("humidity")) => Quantity::Humidity,
        ("%", Some("battery")) => Quantity::Battery,
        ("%", _) => return Err(Unmapped::Class("humidity or battery")),
        ("hpa", _) => Quantity::Pressure,
        ("ppm", None | Some("carbon_dioxide")) => Quantity::Co2,
        ("ppm", _) => return Err(Unmapped::Class("carbon_dioxide")),
        ("µg/m³", Some("pm25")) => Quantity::Pm25,
        ("µg/m³", _) => return Err(Unmapped::Class("pm25")),
        ("lx", _) => Quantity::Illuminance,
        ("w", _) => Quantity::Power,
        // DSMR meters and some inverters give kW.
        ("kw", _) => return Ok((Quantity::Power, |kw| Unit::Kilowatt.to_catalogue(kw))),
        ("v", _) => Quantity::Voltage,
        ("a", _) => Quantity::Current,
        ("m³", Some("gas")) => Quantity::Gas,
        ("m³", Some("water")) => Quantity::Water,
        ("m³", _) => return Err(Unmapped::Class("gas or water")),
        ("wh" | "kwh" | "mwh", None | Some("energy")) => {
            // A counter of energy, not a stored amount (state class `measurement`).
            if line.text_field("state_class_str") == Some("measurement") {
                return Err(Unmapped::StoredEnergy);
            }
            // The model's rule: in any case, but `mWh` is not `MWh`.
            let convert: Convert = match Unit::parse(unit) {
                Some(Unit::WattHour) => |wh| Unit::WattHour.to_catalogue(wh),
                Some(Unit::KilowattHour) => same,
                Some(Unit::MegawattHour) => |mwh| Unit::MegawattHour.to_catalogue(mwh),
                _ => return Err(Unmapped::Unit),
            };
            let names = [
                line.tag("entity_id"),
                line.text_field("friendly_name_str"),
                Some(measurement),
            ];
            let sold = sold(names.into_iter().flatten());
            let tariff = line
                .tag("entity_id")
                .and_then(tariff_entity)
                .map(|(_, t)| t);
            let q = match (sold, tariff) {
                (false, None) => Quantity::EnergyBought,
                (true, None) => Quantity::EnergySold,
                (false, Some(1)) => Quantity::EnergyBoughtT1,
                (false, Some(_)) => Quantity::EnergyBoughtT2,
                (true, Some(1)) => Quantity::EnergySoldT1,
                (true, Some(_)) => Quantity::EnergySoldT2,
            };
            return Ok((q, convert));
        }
        // Another class of energy: `energy_storage`, a battery's charge.
        ("wh" | "kwh" | "mwh", _) => return Err(Unmapped::StoredEnergy),
        _ => return Err(Unmapped::Unit),
    };
    Ok((q, same))
}

/// A line's unit and device class, wherever its layout puts them (module
/// comment).
fn unit_and_class(line: &impl LineView) -> (&str, Option<&str>) {
    let measurement = line.measurement();
    let unit = line
        .text_field("unit_of_measurement_str")
        .unwrap_or(measurement);
    let class = line
        .text_field("device_class_str")
        .or_else(|| measurement.split_once("__").map(|(_, class)| class));
    (unit, class)
}

/// How an entity's id ends when it counts one tariff of a meter: `_t1`,
/// `_tariff1`, `_tariff_1`, and the Dutch `_tarif_1` of Home Assistant's
/// DSMR integration.
const TARIFF_ENDINGS: [&str; 5] = ["_t", "_tariff", "_tariff_", "_tarif", "_tarif_"];

/// The meter and the tariff (1 or 2) of a tariff's entity id
/// (`energy_t2`: `energy`, 2); `None` for any other id.
pub fn tariff_entity(entity_id: &str) -> Option<(&str, u8)> {
    let tariff = match entity_id.as_bytes().last()? {
        b'1' => 1,
        b'2' => 2,
        _ => return None,
    };
    let head = &entity_id[..entity_id.len() - 1];
    TARIFF_ENDINGS
        .iter()
        .filter_map(|ending| head.strip_suffix(ending))
        .find(|meter| !meter.is_empty())
        .map(|meter| (meter, tariff))
}

/// Words that say energy went to the grid, said together (`to_grid`,
/// `feed_in`): they win over any other word.
const SOLD_PHRASES: [&str; 2] = ["togrid", "feedin"];
/// Parts of words that say energy came from the grid (English, German, Dutch).
const BOUGHT_STEMS: [&str; 7] = [
    "import",
    "consum",
    "verbrauch",
    "verbruik",
    "bezug",
    "afname",
    "fromgrid",
];
/// Parts of words that say energy went to the grid or was made here.
const SOLD_STEMS: [&str; 15] = [
    "return",
    "export",
    "produc",
    "produk",
    "inject",
    "sold",
    "sell",
    "einspeis",
    "terug",
    "yield",
    "generat",
    "solar",
    "photovolt",
    "opbrengst",
    "erzeug",
];

/// Whether an energy counter named `names` (its entity id, its friendly name)
/// counts energy sold: a phrase for the grid's side (`to_grid`, `feed_in`),
/// else no word for bought (`import`, `consumption`) and a word for sold or
/// made (`return`, `export`, `production`, `solar`, a word starting with `pv`).
/// Everything else counts energy bought, as most meters, plugs and appliances
/// do. `override_measurement: cumulative_kwh_n` (or `_p`) in Home Assistant
/// decides it for an entity whose name misleads.
pub fn sold<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let (mut bought, mut sold) = (false, false);
    for name in names {
        let name = name.to_lowercase();
        let words: Vec<&str> = name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let joined = words.concat();
        if SOLD_PHRASES.iter().any(|p| joined.contains(p)) {
            return true;
        }
        bought |= BOUGHT_STEMS.iter().any(|s| joined.contains(s));
        sold |= SOLD_STEMS
            .iter()
            .any(|s| words.iter().any(|w| w.contains(s)))
            || words.iter().any(|w| w.starts_with("pv"));
    }
    sold && !bought
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tariffs_entity_names_its_meter() {
        for (id, want) in [
            ("energy_t1", Some(("energy", 1))),
            ("grid_import_t2", Some(("grid_import", 2))),
            ("house_tariff1", Some(("house", 1))),
            ("house_tariff_2", Some(("house", 2))),
            (
                "electricity_meter_energy_consumption_tarif_1",
                Some(("electricity_meter_energy_consumption", 1)),
            ),
            ("p1_tarif2", Some(("p1", 2))),
            ("_t1", None),
            ("energy_t3", None),
            ("sensor_2", None),
            ("phase_l1", None),
            ("energy", None),
        ] {
            assert_eq!(tariff_entity(id), want, "{id}");
        }
    }

    #[test]
    fn counters_named_for_the_grid_or_for_making_energy_count_energy_sold() {
        for name in [
            "grid_export",
            "energy_returned",
            "electricity_meter_energy_production_tarif_1",
            "stromzahler_energieproduktion_tarif_2",
            "elektriciteitsmeter_energieproductie_tarief_1",
            "shelly_em_channel_1_energy_returned",
            "netzeinspeisung",
            "solar_total_yield",
            "pv_energy_today",
            "energy_delivered_to_grid",
            "Feed-in",
            "Teruglevering totaal",
            "inverter_total_generation",
        ] {
            assert!(sold([name].into_iter()), "{name}");
        }
        for name in [
            "electricity_meter_energy_consumption_tarif_1",
            "stromzahler_energieverbrauch_tarif_1",
            "grid_import",
            "fridge_plug_energy",
            "washing_machine_energy",
            "netzbezug",
            "house_consumption_from_pv",
            "solar_consumption",
            "energy_from_grid",
            "shelly_em_channel_1_energy",
            // "pv" only at a word's start; "sol" is not "solar".
            "tempvalue_kwh",
            "consolidated_energy",
        ] {
            assert!(!sold([name].into_iter()), "{name}");
        }
        assert!(
            sold(["meter_2", "Solar yield"].into_iter()),
            "the friendly name counts too"
        );
    }
}
