//! Noise models: readings of the shapes users have, each with the entropy
//! its generator puts into a reading (issue 44), so that bytes on disk can
//! be set against the limit as well as against a peer.
//!
//! A model's entropy is computed from the distributions the generator draws
//! from: a uniform step among `k` values is `log2 k` bits, a coin of
//! probability `p` is `H(p)`. Values the generator derives (a kWh counter
//! from the watts, a constant) and times on a fixed interval carry none.
//! The clamps at a walk's bounds are left out: they are rarely reached,
//! and leaving them out overstates the entropy by less than a percent.

use super::{walking_household, Meter, Sample, Walk, DAY_MS};

/// A model: its key (what `VERSUS_VM_MODEL` names it by), its name, its
/// readings over `days` from `start_ms`, and the bits of entropy a reading
/// carries on average.
pub struct Model {
    #[allow(dead_code)] // the VictoriaMetrics bench's
    pub key: &'static str,
    pub name: &'static str,
    pub make: fn(i64, i64) -> Vec<Sample>,
    pub bits_per_reading: f64,
}

/// Every model the bench compares.
pub fn models() -> Vec<Model> {
    vec![
        Model {
            key: "household",
            name: "the household, random walks (the bench's own)",
            make: walking_household,
            // Watts: 101 steps; each sensor: 3 steps of temperature, 3 of
            // humidity; four readings a minute.
            bits_per_reading: (log2(101.0) + 3.0 * 2.0 * log2(3.0)) / 4.0,
        },
        Model {
            key: "noisy",
            name: "a noisy meter (±250 W a minute, a 1.5 kW spike one minute in twenty) and sensors on ±0.1 °C / ±0.5 % walks",
            make: noisy_household,
            bits_per_reading: (log2(501.0) + h(SPIKE_P) + 3.0 * (log2(21.0) + log2(11.0))) / 4.0,
        },
        Model {
            key: "on-change",
            name: "four sensors that report on change",
            make: on_change_sensors,
            bits_per_reading: on_change_bits(),
        },
        Model {
            key: "slow",
            name: "four slow sensors (a reading in five minutes)",
            make: |days, start| walking_sensors(days, start, 300_000),
            bits_per_reading: 2.0 * log2(3.0),
        },
        Model {
            key: "fast",
            name: "four fast sensors (a reading every 10 s)",
            make: |days, start| walking_sensors(days, start, 10_000),
            bits_per_reading: 2.0 * log2(3.0),
        },
        Model {
            key: "smart-meter",
            name: "a smart meter (appliances' bursts on a base load, day and night, a reading every 5-20 s)",
            make: smart_meter,
            bits_per_reading: smart_meter_bits(),
        },
    ]
}

/// A reading's gap in whole seconds, 5 to 20 (what a P1 port or a Shelly
/// EM sends, as a telegram or an MQTT message arrives).
const GAP_SECONDS: std::ops::RangeInclusive<i64> = 5..=20;
/// The meter's noise: ±`NOISE_W` whole watts, uniform.
const NOISE_W: i64 = 5;

/// An appliance: its watts, how long it runs, and how likely it is to
/// start in a given second at night (before 06:00 and after 23:00) and by
/// day.
struct Appliance {
    watts: f64,
    seconds: i64,
    start_night: f64,
    start_day: f64,
}

/// A household's appliances: a fridge's compressor, a kettle, a washing
/// machine, an oven, a heat pump's defrost.
const APPLIANCES: [Appliance; 5] = [
    Appliance {
        watts: 110.0,
        seconds: 900,
        start_night: 1.0 / 1800.0,
        start_day: 1.0 / 1500.0,
    },
    Appliance {
        watts: 2200.0,
        seconds: 180,
        start_night: 0.0,
        start_day: 6.0 / 57_600.0,
    },
    Appliance {
        watts: 650.0,
        seconds: 5400,
        start_night: 0.0,
        start_day: 0.6 / 57_600.0,
    },
    Appliance {
        watts: 2400.0,
        seconds: 2700,
        start_night: 0.0,
        start_day: 0.8 / 57_600.0,
    },
    Appliance {
        watts: 1800.0,
        seconds: 600,
        start_night: 2.0 / 28_800.0,
        start_day: 1.0 / 57_600.0,
    },
];

/// Bits per reading of `smart_meter`: the gap (16 values) and the noise
/// (11 values); the appliances' starts, a few a day among 7,000 readings,
/// add a few hundredths, and the base load's day and night none.
fn smart_meter_bits() -> f64 {
    let gaps = (*GAP_SECONDS.end() - *GAP_SECONDS.start() + 1) as f64;
    let starts: f64 = APPLIANCES
        .iter()
        .map(|a| {
            let p = (a.start_night * 7.0 + a.start_day * 17.0) / 24.0 * 12.5;
            h(p.min(0.5))
        })
        .sum();
    log2(gaps) + log2((2 * NOISE_W + 1) as f64) + starts
}

/// A smart meter as its readings arrive (issue 80): a base load that
/// follows the day (200 W at night, up to 450 W in the evening), the bursts
/// of appliances that start at random (more by day), ±5 W of noise, and a
/// reading every 5 to 20 seconds; its kWh counter grows by them in whole Wh.
pub fn smart_meter(days: i64, start_ms: i64) -> Vec<Sample> {
    let mut rng = fastrand::Rng::with_seed(80);
    let mut meter = Meter::default();
    let mut running = [0i64; APPLIANCES.len()];
    let end = start_ms + days * DAY_MS;
    let mut out = Vec::with_capacity((days * DAY_MS / 12_500) as usize);
    let mut ms = start_ms;
    loop {
        let gap_s = rng.i64(GAP_SECONDS);
        if ms + gap_s * 1000 >= end {
            break;
        }
        let hour = (ms.rem_euclid(DAY_MS) / 3_600_000) as f64;
        let night = !(6.0..23.0).contains(&hour);
        // 200 W at night, rising to 450 W at 19:00 and back.
        let base = if night {
            200.0
        } else {
            200.0 + 250.0 * (1.0 - ((hour - 19.0) / 13.0).abs()).max(0.0)
        };
        let mut watts = base;
        for (a, left) in APPLIANCES.iter().zip(running.iter_mut()) {
            if *left > 0 {
                *left -= gap_s;
                watts += a.watts;
            } else {
                let p = if night { a.start_night } else { a.start_day } * gap_s as f64;
                if rng.f64() < p {
                    *left = a.seconds;
                }
            }
        }
        watts += rng.i64(-NOISE_W..=NOISE_W) as f64;
        ms += gap_s * 1000;
        out.push(meter.reading_after(ms, watts.round(), gap_s * 1000));
    }
    out
}

fn log2(x: f64) -> f64 {
    x.log2()
}

/// The entropy of a coin of probability `p`, in bits.
fn h(p: f64) -> f64 {
    -(p * p.log2() + (1.0 - p) * (1.0 - p).log2())
}

/// One minute in twenty has a spike.
const SPIKE_P: f64 = 0.05;

/// The noisy household of issue 44: the meter's watts a walk of up to
/// ±250 W a minute in whole watts, with a 1.5 kW spike one minute in
/// twenty, its kWh counter growing by them in whole Wh; three room sensors
/// on walks of up to ±0.1 °C (hundredths) and ±0.5 %RH (tenths).
pub fn noisy_household(days: i64, start_ms: i64) -> Vec<Sample> {
    let n = days * 1440;
    let mut rng = fastrand::Rng::with_seed(44);
    let mut w = Walk {
        units: 1500,
        lo: 0,
        hi: 20_000,
        per_unit: 1.0,
    };
    let mut climate: Vec<(Walk, Walk)> = (0..3)
        .map(|_| {
            (
                Walk {
                    units: 2100,
                    lo: -1000,
                    hi: 5000,
                    per_unit: 100.0,
                },
                Walk {
                    units: 450,
                    lo: 0,
                    hi: 1000,
                    per_unit: 10.0,
                },
            )
        })
        .collect();
    let mut meter = Meter::default();
    let mut out = Vec::with_capacity(4 * n as usize);
    for i in 0..n {
        let ms = start_ms + i * 60_000;
        let spike = if rng.f64() < SPIKE_P { 1500.0 } else { 0.0 };
        out.push(meter.reading(ms, w.step(&mut rng, 250) + spike));
        for (d, (t, hum)) in climate.iter_mut().enumerate() {
            out.push(Sample {
                device: format!("sensor-{}", d + 2),
                room: Some(format!("room-{}", d + 2)),
                ms,
                values: vec![
                    ("temperature", t.step(&mut rng, 10)),
                    ("humidity", hum.step(&mut rng, 5)),
                ],
            });
        }
    }
    out
}

/// Four room sensors on walks of one unit (0.01 °C, 0.1 %RH), a reading
/// every `every_ms`.
pub fn walking_sensors(days: i64, start_ms: i64, every_ms: i64) -> Vec<Sample> {
    let n = days * DAY_MS / every_ms;
    let mut rng = fastrand::Rng::with_seed(every_ms as u64);
    let mut walks: Vec<(Walk, Walk)> = (0..4)
        .map(|_| {
            (
                Walk {
                    units: 2100,
                    lo: 1500,
                    hi: 3000,
                    per_unit: 100.0,
                },
                Walk {
                    units: 450,
                    lo: 200,
                    hi: 800,
                    per_unit: 10.0,
                },
            )
        })
        .collect();
    let mut out = Vec::with_capacity(4 * n as usize);
    for i in 0..n {
        for (d, (t, h)) in walks.iter_mut().enumerate() {
            out.push(Sample {
                device: format!("sensor-{}", d + 1),
                room: Some(format!("room-{}", d + 1)),
                ms: start_ms + i * every_ms,
                values: vec![
                    ("temperature", t.step(&mut rng, 1)),
                    ("humidity", h.step(&mut rng, 1)),
                ],
            });
        }
    }
    out
}

/// How often a sensor that reports on change sees each value move in a
/// minute (by one unit, up or down alike).
const TEMPERATURE_MOVES: f64 = 0.15;
const HUMIDITY_MOVES: f64 = 0.10;

/// Bits per reading of `on_change_sensors`: a minute's entropy (whether
/// each value moved, and which way) over the chance that it sends a reading.
fn on_change_bits() -> f64 {
    let minute = h(TEMPERATURE_MOVES) + TEMPERATURE_MOVES + h(HUMIDITY_MOVES) + HUMIDITY_MOVES;
    let sends = 1.0 - (1.0 - TEMPERATURE_MOVES) * (1.0 - HUMIDITY_MOVES);
    minute / sends
}

/// Four room sensors that send a reading only in a minute where their
/// temperature or humidity moved (what Zigbee sensors do): irregular times,
/// and a value that often repeats.
pub fn on_change_sensors(days: i64, start_ms: i64) -> Vec<Sample> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut out = Vec::new();
    let mut state: Vec<(i64, i64)> = vec![(2100, 450); 4];
    for i in 0..days * 1440 {
        for (d, (t, h)) in state.iter_mut().enumerate() {
            let mut moved = false;
            if rng.f64() < TEMPERATURE_MOVES {
                *t += if rng.bool() { 1 } else { -1 };
                moved = true;
            }
            if rng.f64() < HUMIDITY_MOVES {
                *h += if rng.bool() { 1 } else { -1 };
                moved = true;
            }
            if moved {
                out.push(Sample {
                    device: format!("sensor-{}", d + 1),
                    room: Some(format!("room-{}", d + 1)),
                    ms: start_ms + i * 60_000,
                    values: vec![
                        ("temperature", *t as f64 / 100.0),
                        ("humidity", *h as f64 / 10.0),
                    ],
                });
            }
        }
    }
    out
}
