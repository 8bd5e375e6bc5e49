//! Bytes of earlier versions and the readings they hold: what a file or a
//! table written by an earlier release looks like, for the tests of each
//! crate that reads them (the `fixtures` feature, for dev-dependencies).

use crate::aggregate::counter::Counter;
use crate::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp, DAY_MS, HOUR_MS};
use proptest::prelude::*;

/// Where a generated `history` starts: a UTC day's start.
pub const HISTORY_START: i64 = 1_795_000_000_000 - 1_795_000_000_000 % DAY_MS;

/// `n` minutes of a meter whose counter grows by its watts, in Wh.
pub fn meter_readings(n: i64) -> Vec<Reading> {
    let (mut wh, mut carry) = (5_210_125i64, 0.0f64);
    (0..n)
        .map(|m| {
            let watts = (1500 + (m * 37 % 11) * 41 - 200) as f64;
            carry += watts / 60.0;
            wh += carry.floor() as i64;
            carry -= carry.floor();
            Reading {
                device_id: DeviceId::parse("meter-1").unwrap(),
                timestamp: Timestamp::from_millis(1_795_219_200_000 + m * 60_000).unwrap(),
                measurement: Measurement::power(wh as f64 / 1000.0, 812.5, watts).unwrap(),
            }
        })
        .collect()
}

/// `meter_readings(12)` as version 4 wrote them: its counter in
/// deltas, before version 5 predicted it from the watts.
pub const VERSION_4_METER_BLOCK: &str = "040c80e0b8b6bf68c0a889b7bf6803000c01c480fc04ec84fc04b2a0d03b010c01a89763a89763e097a609020c01c0d89e01e0ded001b0c88311e0d4030201000c000c070101c480fc043213f6d186bd01d4cb31000201e80700a814fb084c931c85d4f87e3c9e4df2a038";

/// `meter_readings(12)` as version 5 wrote them.
pub const VERSION_5_METER_BLOCK: &str = "050c80e0b8b6bf68c0a889b7bf6803000c01c480fc04ec84fc04b2a0d03b010c01a89763a89763e097a609020c01c0d89e01e0ded001b0c88311e0d4030201000c000c070103c480fc0405020000d4cb31000201e80700a814fb084c931c85d4f87e3c9e4df2a038";

/// `meter_day()` as version 3 wrote it, a meter's day rollup body
/// (`rollup_body`'s tests build it).
pub const VERSION_3_METER: &str = "03a00b0300a00b9881f0139090f413f9f4e7e2df01d60101a00ba0dd8c03a0dd8c03808899ef2202a00b809f4980c78c02a1dcde9c0f05000303bfa907e880f013300000f88e0400c0c6ab529090f4130000f88e0400c0c6ab529090f41300";

pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// What a reading of the generated history is. `u8`s name the counters
/// a meter's reading carries: bit 0 bought, bit 1 sold, bit 2 gas, bit
/// 3 water, bits 4 to 7 the tariffs (`Counter::ALL`'s order).
#[derive(Debug, Clone)]
pub enum Kind {
    /// The counters move by these shares of their values: growth, or a dip.
    Meter(u8, [f64; 8]),
    Zero(u8),
    NewMeter(u8),
    Climate(u8, f64),
    /// Watts alone: a meter's reading without a counter.
    Watts,
}

/// A device's history, and the counters its meter readings may carry
/// (bought only, sold only, either and both, gas alone, all four as a P1
/// meter's telegram, two tariffs alone as Home Assistant's entities, or
/// every counter as a two-tariff P1 meter's telegram: any subset of them
/// in a reading, which makes a counter that appears, disappears and comes
/// back part way).
pub fn history() -> impl Strategy<Value = Vec<(i64, Kind)>> {
    let counters = prop_oneof![
        3 => Just(3u8),
        1 => Just(1u8),
        1 => Just(2u8),
        1 => Just(4u8),
        2 => Just(15u8),
        1 => Just(0b11_0000u8),
        1 => Just(0xffu8)
    ];
    let kind = |allowed: u8| {
        let which = prop_oneof![3 => Just(0xffu8), 2 => 1u8..=255].prop_map(move |w| {
            if w & allowed == 0 {
                allowed
            } else {
                w & allowed
            }
        });
        let grow = prop_oneof![8 => 0.0f64..0.01, 1 => -0.08f64..0.0];
        prop_oneof![
            9 => (which.clone(), prop::array::uniform8(grow))
                .prop_map(|(w, shares)| Kind::Meter(w, shares)),
            1 => which.clone().prop_map(Kind::Zero),
            1 => which.prop_map(Kind::NewMeter),
            1 => Just(Kind::Watts),
            6 => (0u8..2, 15.0f64..25.0).prop_map(|(room, t)| Kind::Climate(room, t)),
        ]
    };
    // Gaps from a second to five hours, and whole minutes as sensors
    // on the minute send, whose readings fall on hours' and days' bounds.
    let gap = prop_oneof![
        1_000i64..5 * HOUR_MS,
        (1i64..300).prop_map(|minutes| minutes * 60_000),
    ];
    counters
        .prop_flat_map(move |allowed| prop::collection::vec((gap.clone(), kind(allowed)), 1..120))
}

pub fn readings(h: &[(i64, Kind)]) -> Vec<Reading> {
    let device = DeviceId::parse("m-1").unwrap();
    let (mut t, mut kwh) = (
        HISTORY_START,
        [1000.0f64, 20.0, 4000.0, 300.0, 600.0, 400.0, 12.0, 8.0],
    );
    h.iter()
        .map(|(gap, kind)| {
            t += gap;
            let meter = |which: u8, values: [f64; 8]| {
                let mut v = vec![(Quantity::Power, 100.0)];
                for (i, q) in Counter::ALL.map(Counter::quantity).into_iter().enumerate() {
                    if which & (1 << i) != 0 {
                        v.push((q, values[i]));
                    }
                }
                Measurement::new(None, v)
            };
            let measurement = match kind {
                Kind::Climate(room, temp) => Measurement::climate(
                    RoomId::parse(["bedroom", "hall"][*room as usize]).unwrap(),
                    (temp * 100.0).round() / 100.0,
                    50.0,
                ),
                Kind::Meter(which, shares) => {
                    for (i, share) in shares.iter().enumerate() {
                        if which & (1 << i) != 0 {
                            kwh[i] = ((kwh[i] * (1.0 + share)) * 1000.0).round() / 1000.0;
                        }
                    }
                    meter(*which, kwh)
                }
                Kind::Zero(which) => meter(*which, [0.0; 8]),
                Kind::NewMeter(which) => {
                    for (i, v) in kwh.iter_mut().enumerate() {
                        if which & (1 << i) != 0 {
                            *v = 3.0;
                        }
                    }
                    meter(*which, kwh)
                }
                Kind::Watts => Measurement::new(None, vec![(Quantity::Power, 5.0)]),
            }
            .unwrap();
            Reading {
                device_id: device.clone(),
                timestamp: Timestamp::from_millis(t).unwrap(),
                measurement,
            }
        })
        .collect()
}
