//! Bytes of earlier versions and the readings they hold: what a file or a
//! table written by an earlier release looks like, for the tests of each
//! crate that reads them (the `fixtures` feature, for dev-dependencies).

use crate::model::{DeviceId, Measurement, Reading, Timestamp};

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
