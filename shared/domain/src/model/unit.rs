//! Units as devices say them (issue 79): the one rule that turns a value in
//! a device's unit into the catalogue's (°C, W, kWh). Every edge that reads
//! a unit (Tasmota's `TempUnit`, a Shelly Gen1's `tmp.units`, Home
//! Assistant's `unit_of_measurement`, a Shelly Gen1 counter's Watt-minutes)
//! names it here and converts with [`Unit::to_catalogue`].

use super::quantity::{celsius_from_fahrenheit, watts_from_kilowatts};

/// A unit a device may report a value in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Celsius,
    Fahrenheit,
    Watt,
    Kilowatt,
    WattMinute,
    WattHour,
    KilowattHour,
    MegawattHour,
}

impl Unit {
    /// The unit a text names, as devices and Home Assistant write them, in
    /// any case (`KWh`, as some scripts write it): `°C`/`C`, `°F`/`F`, `W`,
    /// `kW`, `Wmin`, `Wh`, `kWh`, `MWh`; but `mWh` is no unit of ours (no
    /// meter counts milliwatt-hours), nor anything else.
    pub fn parse(text: &str) -> Option<Unit> {
        let text = text.trim();
        Some(match text.to_ascii_lowercase().as_str() {
            "°c" | "c" | "℃" => Unit::Celsius,
            "°f" | "f" | "℉" => Unit::Fahrenheit,
            "w" => Unit::Watt,
            "kw" => Unit::Kilowatt,
            "wmin" => Unit::WattMinute,
            "wh" => Unit::WattHour,
            "kwh" => Unit::KilowattHour,
            "mwh" if text.starts_with('M') => Unit::MegawattHour,
            _ => return None,
        })
    }

    /// Whether it measures energy (a counter's unit).
    pub fn is_energy(self) -> bool {
        matches!(
            self,
            Unit::WattMinute | Unit::WattHour | Unit::KilowattHour | Unit::MegawattHour
        )
    }

    /// Whether it measures temperature.
    pub fn is_temperature(self) -> bool {
        matches!(self, Unit::Celsius | Unit::Fahrenheit)
    }

    /// A value in this unit in the catalogue's: °C to thousandths, W to
    /// milliwatts, kWh to milliwatt-hours (what the block codec stores, and
    /// no float noise: 6532.1 Wh is 6.5321 kWh).
    pub fn to_catalogue(self, v: f64) -> f64 {
        let kwh = |kwh: f64| crate::aggregate::to_the_mwh(kwh);
        match self {
            Unit::Celsius | Unit::Watt | Unit::KilowattHour => v,
            Unit::Fahrenheit => celsius_from_fahrenheit(v),
            Unit::Kilowatt => watts_from_kilowatts(v),
            Unit::WattMinute => kwh(v / 60_000.0),
            Unit::WattHour => kwh(v / 1000.0),
            Unit::MegawattHour => kwh(v * 1000.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_as_devices_write_it_becomes_the_catalogue_s() {
        for (text, value, want) in [
            ("°F", 68.0, 20.0),
            ("F", 71.6, 22.0),
            ("°C", 21.5, 21.5),
            ("Wh", 6532.1, 6.5321),
            ("kWh", 1234.5, 1234.5),
            ("KWh", 3120.5, 3120.5),
            ("MWh", 1.5, 1500.0),
            ("Wmin", 123_456.0, 2.0576),
            ("kW", 0.35, 350.0),
            ("W", 41.5, 41.5),
        ] {
            let unit = Unit::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(unit.to_catalogue(value), want, "{text}");
        }
        assert_eq!(Unit::parse("mWh"), None, "no meter counts milliwatt-hours");
        assert_eq!(Unit::parse("K"), None);
        assert!(Unit::parse("MWh").unwrap().is_energy());
        assert!(Unit::parse("F").unwrap().is_temperature());
    }
}
