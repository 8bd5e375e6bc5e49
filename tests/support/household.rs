//! A household's readings as its devices send them, for tests that need
//! data users have: a meter with two counters (three decimals, noisy watts),
//! a plug with one counter that resets, a room sensor that reports on change
//! and moves rooms (with its battery in the same reading), and a water
//! meter with a battery, hourly.

use shared::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Span, Timestamp, HOUR_MS};

fn id(s: &str) -> DeviceId {
    DeviceId::parse(s).unwrap()
}

fn room(s: &str) -> RoomId {
    RoomId::parse(s).unwrap()
}

/// Its devices, sorted.
pub const DEVICES: [&str; 4] = [
    "a4:c1:38:0b:5e:7f",
    "meter-main",
    "plug-washer",
    "water-meter",
];

/// `hours` of a household, ending an hour ago, with the values its
/// devices send: counters with three decimals that reset, noisy watts,
/// temperatures at a tenth, a sensor that only reports on change.
pub fn household(seed: u64, hours: i64) -> Vec<Reading> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let end = Span::Hour.start_of(Timestamp::now()).millis() - HOUR_MS;
    let start = end - hours * HOUR_MS;
    let at = |ms: i64| Timestamp::from_millis(ms).unwrap();
    let mut out = Vec::new();
    let (mut bought, mut sold, mut plug, mut water) = (12_345.678f64, 321.5f64, 0.0f64, 88.125f64);
    let mut temperature = 19.5f64;
    for minute in 0..hours * 60 {
        let t = start + minute * 60_000;
        bought = ((bought + rng.f64() * 0.05) * 1000.0).round() / 1000.0;
        sold = ((sold + rng.f64() * 0.01) * 1000.0).round() / 1000.0;
        out.push(Reading {
            device_id: id("meter-main"),
            timestamp: at(t + rng.i64(0..1000)),
            measurement: Measurement::power(bought, sold, rng.f64() * 4000.0).unwrap(),
        });
        if minute % 5 == 0 {
            plug = if rng.u8(0..50) == 0 {
                0.0
            } else {
                plug + rng.f64() / 3.0
            };
            out.push(Reading {
                device_id: id("plug-washer"),
                timestamp: at(t),
                measurement: Measurement::new(
                    None,
                    vec![(Quantity::EnergyBought, plug), (Quantity::Power, 0.1 + 0.2)],
                )
                .unwrap(),
            });
        }
        // On change only: a step of a tenth now and then.
        if rng.u8(0..7) == 0 {
            temperature = ((temperature + rng.f64() - 0.5) * 10.0).round() / 10.0;
            let place = if minute < hours * 60 / 2 {
                "living"
            } else {
                "study"
            };
            out.push(Reading {
                device_id: id("a4:c1:38:0b:5e:7f"),
                timestamp: at(t + 17),
                measurement: Measurement::new(
                    Some(room(place)),
                    vec![
                        (Quantity::Temperature, temperature),
                        (Quantity::Humidity, 40.0 + rng.f64() * 20.0),
                        // Flat at 1 % past a week, the battery left in.
                        (Quantity::Battery, (100.0 - minute as f64 / 100.0).max(1.0)),
                    ],
                )
                .unwrap(),
            });
        }
        if minute % 60 == 0 {
            water += 0.001 * rng.u32(0..400) as f64;
            out.push(Reading {
                device_id: id("water-meter"),
                timestamp: at(t),
                measurement: Measurement::new(
                    Some(room("cellar")),
                    vec![(Quantity::Water, water), (Quantity::Battery, 1e-3)],
                )
                .unwrap(),
            });
        }
    }
    out
}
