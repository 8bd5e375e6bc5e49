//! The catalogue of quantities a reading may carry, in one place: each has the
//! name it has in JSON bodies, stored items and answers, a unit, a plausible
//! range (values outside are rejected, not clamped) and a kind. Today's five
//! names (`cumulative_kwh_p`, `cumulative_kwh_n`, `current_w`, `temperature`,
//! `humidity`) are kept, so stored readings and answers do not change.

/// A gauge is a level at an instant; a counter only grows (kWh, m³) until the
/// meter is reset or replaced, so what matters is its increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityKind {
    Gauge,
    Counter,
}

/// What a quantity says about the reading it is in: the reading's `type` in
/// answers and items, and whether it needs a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReadingKind {
    /// Electricity: the smart meter, smart plugs. `type` "power".
    Power,
    /// The air of a room: temperature, humidity and the like. `type` "climate";
    /// a reading with one of these needs a room.
    Climate,
    /// Gas and water meters. `type` "meter".
    Meter,
    /// The device itself (its battery). `type` "device".
    Device,
}

impl ReadingKind {
    pub const ALL: [ReadingKind; 4] = [
        ReadingKind::Power,
        ReadingKind::Climate,
        ReadingKind::Meter,
        ReadingKind::Device,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReadingKind::Power => "power",
            ReadingKind::Climate => "climate",
            ReadingKind::Meter => "meter",
            ReadingKind::Device => "device",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// One entry of the catalogue.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    /// What the dashboard calls it, for people (`name` is for programs).
    pub label: &'static str,
    pub unit: &'static str,
    /// Inclusive plausibility bounds.
    pub range: (f64, f64),
    pub kind: QuantityKind,
    pub family: ReadingKind,
}

/// A temperature in °F as the catalogue's °C, to thousandths of a degree:
/// what a sensor resolves, and what the block codec stores as an integer.
/// `Unit::to_catalogue`, the one rule every edge converts units with,
/// takes °F with this.
pub fn celsius_from_fahrenheit(f: f64) -> f64 {
    ((f - 32.0) * 5.0 / 9.0 * 1000.0).round() / 1000.0
}

/// A power in kW as the catalogue's W, to the milliwatt (so that 0.35 kW is
/// 350 W, not 350.00000000000006). `Unit::to_catalogue` takes kW with this.
pub fn watts_from_kilowatts(kw: f64) -> f64 {
    (kw * 1e6).round() / 1e3
}

/// Every quantity, in the order answers list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quantity {
    EnergyBought,
    EnergySold,
    Power,
    Voltage,
    Current,
    Temperature,
    Humidity,
    Pressure,
    Co2,
    Pm25,
    Illuminance,
    Gas,
    Water,
    Battery,
    /// A two-tariff meter's counters, each tariff's own (issue 79): after
    /// the others, so that the positions blocks and bodies store stay.
    EnergyBoughtT1,
    EnergyBoughtT2,
    EnergySoldT1,
    EnergySoldT2,
}

use QuantityKind::{Counter, Gauge};
use ReadingKind as F;

const fn spec(
    (name, label): (&'static str, &'static str),
    unit: &'static str,
    range: (f64, f64),
    kind: QuantityKind,
    family: ReadingKind,
) -> Spec {
    Spec {
        name,
        label,
        unit,
        range,
        kind,
        family,
    }
}

/// Whether `a` sorts before `b`, byte by byte (`str`'s order, at compile
/// time).
const fn name_before(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// Each quantity's place in the order of the names, by its index.
const NAME_RANK: [u8; 18] = {
    let mut rank = [0u8; 18];
    let mut i = 0;
    while i < CATALOGUE.len() {
        let mut j = 0;
        while j < CATALOGUE.len() {
            if name_before(CATALOGUE[j].name, CATALOGUE[i].name) {
                rank[i] += 1;
            }
            j += 1;
        }
        i += 1;
    }
    rank
};

/// In the order of `Quantity`'s variants.
const CATALOGUE: [Spec; 18] = [
    spec(
        ("cumulative_kwh_p", "Energy bought, meter total"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
    spec(
        ("cumulative_kwh_n", "Energy sold, meter total"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
    spec(("current_w", "Power"), "W", (-1e7, 1e7), Gauge, F::Power),
    spec(("voltage_v", "Voltage"), "V", (0.0, 1e4), Gauge, F::Power),
    spec(("current_a", "Current"), "A", (-1e4, 1e4), Gauge, F::Power),
    spec(
        ("temperature", "Temperature"),
        "°C",
        (-100.0, 150.0),
        Gauge,
        F::Climate,
    ),
    spec(
        ("humidity", "Humidity"),
        "%",
        (0.0, 100.0),
        Gauge,
        F::Climate,
    ),
    spec(
        ("pressure_hpa", "Air pressure"),
        "hPa",
        (300.0, 1100.0),
        Gauge,
        F::Climate,
    ),
    spec(("co2_ppm", "CO₂"), "ppm", (0.0, 1e5), Gauge, F::Climate),
    spec(
        ("pm25_ugm3", "PM2.5"),
        "µg/m³",
        (0.0, 1e4),
        Gauge,
        F::Climate,
    ),
    spec(
        ("illuminance_lx", "Light"),
        "lx",
        (0.0, 2e5),
        Gauge,
        F::Climate,
    ),
    spec(
        ("gas_m3", "Gas, meter total"),
        "m³",
        (0.0, 1e9),
        Counter,
        F::Meter,
    ),
    spec(
        ("water_m3", "Water, meter total"),
        "m³",
        (0.0, 1e9),
        Counter,
        F::Meter,
    ),
    spec(
        ("battery_pct", "Battery"),
        "%",
        (0.0, 100.0),
        Gauge,
        F::Device,
    ),
    spec(
        ("cumulative_kwh_p_t1", "Energy bought, tariff 1"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
    spec(
        ("cumulative_kwh_p_t2", "Energy bought, tariff 2"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
    spec(
        ("cumulative_kwh_n_t1", "Energy sold, tariff 1"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
    spec(
        ("cumulative_kwh_n_t2", "Energy sold, tariff 2"),
        "kWh",
        (0.0, 1e9),
        Counter,
        F::Power,
    ),
];

impl Quantity {
    pub const ALL: [Quantity; 18] = [
        Quantity::EnergyBought,
        Quantity::EnergySold,
        Quantity::Power,
        Quantity::Voltage,
        Quantity::Current,
        Quantity::Temperature,
        Quantity::Humidity,
        Quantity::Pressure,
        Quantity::Co2,
        Quantity::Pm25,
        Quantity::Illuminance,
        Quantity::Gas,
        Quantity::Water,
        Quantity::Battery,
        Quantity::EnergyBoughtT1,
        Quantity::EnergyBoughtT2,
        Quantity::EnergySoldT1,
        Quantity::EnergySoldT2,
    ];

    /// Its place in `ALL` (the catalogue's order, the variants' own: a test
    /// holds it).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn spec(self) -> &'static Spec {
        &CATALOGUE[self.index()]
    }

    /// The name in bodies, items and answers.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Its place among the quantities in the order of their names (the
    /// order answers list fields in).
    pub fn name_rank(self) -> u8 {
        NAME_RANK[self.index()]
    }

    pub fn family(self) -> ReadingKind {
        self.spec().family
    }

    pub fn kind(self) -> QuantityKind {
        self.spec().kind
    }

    /// By name. A `match` rather than a scan of the catalogue: it runs for every
    /// field of every reading (the test below keeps the two in step).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "cumulative_kwh_p" => Quantity::EnergyBought,
            "cumulative_kwh_n" => Quantity::EnergySold,
            "current_w" => Quantity::Power,
            "voltage_v" => Quantity::Voltage,
            "current_a" => Quantity::Current,
            "temperature" => Quantity::Temperature,
            "humidity" => Quantity::Humidity,
            "pressure_hpa" => Quantity::Pressure,
            "co2_ppm" => Quantity::Co2,
            "pm25_ugm3" => Quantity::Pm25,
            "illuminance_lx" => Quantity::Illuminance,
            "gas_m3" => Quantity::Gas,
            "water_m3" => Quantity::Water,
            "battery_pct" => Quantity::Battery,
            "cumulative_kwh_p_t1" => Quantity::EnergyBoughtT1,
            "cumulative_kwh_p_t2" => Quantity::EnergyBoughtT2,
            "cumulative_kwh_n_t1" => Quantity::EnergySoldT1,
            "cumulative_kwh_n_t2" => Quantity::EnergySoldT2,
            _ => return None,
        })
    }
}

/// A value as whole thousandths, when it is exactly that and below 10^9
/// in magnitude: what sensors send. Such a value's shortest text is that
/// decimal with its trailing zeros dropped (any shorter text is at least
/// 0.001 away, and below 10^9 an `f64` resolves far finer), so answers can
/// write it, and billing size it, from the integer without formatting it.
pub fn whole_thousandths(v: f64) -> Option<i64> {
    // Rounded half away from zero by hand (`f64::round` is a libm call);
    // whatever the candidate, the check decides.
    let x = v * 1000.0;
    let m = if x >= 0.0 { x + 0.5 } else { x - 0.5 } as i64;
    (m.unsigned_abs() < 1_000_000_000_000 && (m as f64 / 1000.0).to_bits() == v.to_bits())
        .then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fahrenheit_becomes_celsius_to_thousandths() {
        assert_eq!(celsius_from_fahrenheit(32.0), 0.0);
        assert_eq!(celsius_from_fahrenheit(212.0), 100.0);
        assert_eq!(celsius_from_fahrenheit(71.6), 22.0);
        assert_eq!(celsius_from_fahrenheit(68.9), 20.5);
        assert_eq!(celsius_from_fahrenheit(70.0), 21.111);
        assert_eq!(celsius_from_fahrenheit(-40.0), -40.0);
    }

    #[test]
    fn the_catalogue_is_in_the_order_of_the_variants_and_names_are_unique() {
        for (i, q) in Quantity::ALL.iter().enumerate() {
            assert_eq!(q.index(), i);
            assert_eq!(Quantity::parse(q.name()), Some(*q));
            let (lo, hi) = q.spec().range;
            assert!(lo < hi, "{}", q.name());
        }
        let mut names: Vec<&str> = Quantity::ALL.iter().map(|q| q.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Quantity::ALL.len());
        let mut labels: Vec<&str> = Quantity::ALL.iter().map(|q| q.spec().label).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(
            labels.len(),
            Quantity::ALL.len(),
            "a label names one quantity"
        );
        // Today's names stay.
        for name in [
            "cumulative_kwh_p",
            "cumulative_kwh_n",
            "current_w",
            "temperature",
            "humidity",
        ] {
            assert!(Quantity::parse(name).is_some(), "{name}");
        }
        assert_eq!(Quantity::Power.kind(), QuantityKind::Gauge);
        assert_eq!(Quantity::Gas.kind(), QuantityKind::Counter);
    }

    #[test]
    fn every_reading_kind_is_listed_once_in_the_order_of_the_variants() {
        for (i, k) in ReadingKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
            assert_eq!(ReadingKind::parse(k.as_str()), Some(*k));
        }
        // Every quantity's family is one of them.
        for q in Quantity::ALL {
            assert!(ReadingKind::ALL.contains(&q.family()), "{}", q.name());
        }
    }
}
