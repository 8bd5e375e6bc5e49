//! The block codec (issue 24): one device's readings over a span as a few
//! bytes, and back, bit for bit. Both engines will store closed spans this
//! way; the rule is written once, here.
//!
//! A block is a header, readable alone (`header`), then a body:
//!
//! - header: a version byte; the reading count; the first time and the
//!   span to the last; per quantity present (in catalogue order) its
//!   position and mode in a byte, how many readings lack it, its least
//!   value and the span to its greatest, so a block answers counts and box
//!   tests without being decoded (version 6; version 5 kept the last time,
//!   a column's count and greatest value themselves, the mode in a byte of
//!   its own, and each column's sum, which nothing read: the day rollup
//!   keeps the sums. The household's day blocks are 19 bytes shorter on
//!   average, docs/BENCHMARKS.md);
//! - times: their step (the greatest common divisor of their deltas, a
//!   minute for a sensor that reports on the minute, however irregularly;
//!   version 4), then in steps the first delta and deltas of deltas (0 for
//!   a sensor that reports on a fixed interval);
//! - rooms: a dictionary, then runs of (length, room);
//! - which quantities each reading has: runs of (length, bit mask);
//! - one column per quantity: when every value is an exact number of
//!   thousandths (what sensors send), integers in units of the column's
//!   resolution (the greatest common divisor of its thousandths: 10 for a
//!   sensor that reports hundredths), as deltas or deltas of deltas,
//!   whichever is smaller for that column; otherwise the raw `f64` bits.
//!   A meter's counter (kWh bought or sold) whose every reading has exact
//!   watts may instead store its steps less those the watts predict
//!   (version 5): the energy of each reading's watts (drawn for the bought
//!   counter, fed in for the sold) over the time since the counter's last
//!   value, either rounded step by step or summed with what the counter has
//!   not counted yet, as a meter that integrates its own watts counts. A
//!   noisy meter's counter, 3 to 4 bits a reading in deltas of deltas,
//!   costs next to nothing then; the encoder keeps the prediction (the one
//!   of the two whose residuals are smaller) only where it is smaller than
//!   deltas and deltas of deltas, so a meter whose watts say little of its
//!   counter loses nothing. The decoder reads such a column before the watts (catalogue
//!   order) and resolves it after.
//!
//! The time and value streams are zigzag integers: their head (the first
//! delta of the times; a column's first value, and its first delta when it
//! stores deltas of deltas) as LEB128 varints, then the rest in whichever of
//! two modes is smaller, named by a varint `r`:
//!
//! - `r = 0`: bit-packed in frames of 32, each frame at the width of its
//!   widest value (a frame of zeros is one byte). Best where a rare jump
//!   would widen every value: it widens one frame.
//! - `r > 0`: (in version 4 the varint is `2r - 1`, or `2r` when
//!   exceptions follow, and then a varint count of them, the values at or
//!   above `r`); every value's digit in base `r` (`v % r`), in groups
//!   each written as one number in as few bytes as it needs (version 5: of
//!   the size, up to what fits in 64 bits, that takes the fewest bytes a
//!   value, `numbers::tight_group`; before, as many as fit); then
//!   two streams of their own (frames, or radix mode without exceptions):
//!   each exception's distance past the one before, and each one's
//!   `v / r - 1`. A sensor's steps of -1, 0 or +1 unit (zigzag 0 to 2) cost
//!   1.6 bits where frames spend 2.25; a stream of equal values (`r = 1`: a
//!   fixed interval's times) costs nothing; a meter's watts that move by up
//!   to 250 W a minute keep 9 bits when a spike one minute in twenty would
//!   set 12 for all (the encoder tries the radix above the largest value
//!   and above the largest of the narrowest width that holds seven eighths
//!   of them).
//!
//! Everything else is varints. (Version 4, still read, predicted no counter
//! from the watts and filled its radix groups; version 3 had no exceptions;
//! version 2 had frames only;
//! version 1 also packed the head into the first frame, where one large
//! value widened 31 small ones.) Decoding the thousandths
//! (`m as f64 / 1000.0`) is the same computation the encoder checked against
//! the value's bits, so the round trip is exact.

use crate::model::Quantity;

mod decode;
mod encode;
mod header;
pub mod numbers;
mod prediction;
pub use decode::{decode, decode_columns, decode_picked, Columns};
pub use encode::{encode, normalize};
pub use header::{count, header, BlockHeader, QuantityStats};

pub const VERSION: u8 = 6;
/// Version 5, still read: each column's header held its mode in a byte of
/// its own, its count, its greatest value itself and its sum.
const VERSION_5: u8 = 5;
// Version 6 writes a column's catalogue position and mode in one byte.
const _: () = assert!(Quantity::ALL.len() < 128);
/// Version 4, still read: no counter column predicted from the watts.
const VERSION_4: u8 = 4;
/// Version 3, still read: radix streams without exceptions.
const VERSION_3: u8 = 3;
/// Version 2, still read: every stream in frames.
const VERSION_2: u8 = 2;
/// The first version, still read: heads inside the first frame.
const VERSION_1: u8 = 1;

/// Readings a block may claim whatever its length: radix mode writes a
/// stream of equal values in no bytes, so a short block can hold many
/// readings. Past this, a block has at least a byte per `FRAME` readings
/// (the encoder keeps the times in frames then), and a longer count is
/// damage, refused before anything is allocated for it.
const FREE_READINGS: usize = if cfg!(test) { 1 << 12 } else { 1 << 20 };

/// How a column's values are stored.
const RAW: u8 = 0;
const THOUSANDTHS: u8 = 1;

/// How a thousandths column's integers are stored.
const DELTA: u8 = 0;
const DELTA_OF_DELTA: u8 = 1;

/// Largest integer of thousandths kept as one: beyond 2^53 an `f64` is no
/// longer exact in its units.
const MAX_THOUSANDTHS: f64 = 9_007_199_254_740_992.0;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    #[error("a block holds at least one reading")]
    Empty,
    #[error("a block's readings must be of one device, in strictly increasing time (reading {0})")]
    NotInOrder(usize),
    #[error("block does not decode: {0}")]
    Corrupt(String),
}

fn corrupt(why: impl Into<String>) -> BlockError {
    BlockError::Corrupt(why.into())
}

#[cfg(test)]
pub mod tests {

    use super::encode::{thousandths, Column};

    use super::numbers::{stream_len, tail};
    use super::numbers::{zigzag, Reader, Writer, FRAME};
    use super::prediction::drivers;
    use super::*;
    use crate::fixtures::{meter_readings, unhex, VERSION_4_METER_BLOCK, VERSION_5_METER_BLOCK};
    use crate::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
    use proptest::prelude::*;

    fn device() -> DeviceId {
        DeviceId::parse("sensor-1").unwrap()
    }

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms).unwrap()
    }

    fn climate(ms: i64, room: &str, t: f64, h: f64) -> Reading {
        Reading {
            device_id: device(),
            timestamp: at(ms),
            measurement: Measurement::climate(RoomId::parse(room).unwrap(), t, h).unwrap(),
        }
    }

    /// Equal bit for bit: `f64`'s `==` would take 0.0 for -0.0.
    fn same(a: &[Reading], b: &[Reading]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.device_id == y.device_id
                    && x.timestamp == y.timestamp
                    && x.room() == y.room()
                    && x.measurement.values().len() == y.measurement.values().len()
                    && x.measurement
                        .values()
                        .iter()
                        .zip(y.measurement.values())
                        .all(|((q1, v1), (q2, v2))| q1 == q2 && v1.to_bits() == v2.to_bits())
            })
    }

    /// 40 readings of a room sensor that moves rooms, with jittered times.
    fn forty_readings() -> Vec<Reading> {
        (0..40i64)
            .map(|m| {
                let room = if m < 30 { "bedroom" } else { "hall" };
                let t = (2137 + (m * 7 % 5) - 2) as f64 / 100.0;
                let h = (452 + m % 3) as f64 / 10.0;
                climate(1_795_219_200_000 + m * 60_000 + (m % 4), room, t, h)
            })
            .collect()
    }

    /// `forty_readings` as version 1 wrote them (a file sealed by the
    /// release before version 2 holds such blocks).
    const VERSION_1_BLOCK: &str = "012880e0b8b6bf68c6b2d6b8bf6802052801cccd029cce02a0ac68062801a0c205b0c505f896dd0111c2d401000000380080000000000080030008000000000038008000000000008003000800000000003800800000000000800300080000000000380080000000000080030004087008000207626564726f6f6d0468616c6c1e010a0228600a000dae900010800240000a0001200005800014000240000a000128000480001400025000080001280004a00010000250000840012000032c4b9664000a880b20c0000208308000020c208000030820c0000208308000020c208000030820c000020830800002aeeb";

    /// The same as version 3 wrote them (radix mode without exceptions).
    const VERSION_3_BLOCK: &str = "032880e0b8b6bf68c6b2d6b8bf6802052801cccd029cce02a0ac68062801a0c205b0c505f896dd01c2a90709bbd4e242b8a394a43c7ae630f36b06000207626564726f6f6d0468616c6c1e010a0228600a00ae2106802da6f218217136059159a25a6400880704baaeebbaaeebbaaeeb3a";

    /// The same as version 2 wrote them (frames only).
    const VERSION_2_BLOCK: &str = "022880e0b8b6bf68c6b2d6b8bf6802052801cccd029cce02a0ac68062801a0c205b0c505f896dd01c2a9070400870087008700870087008700870087040087000207626564726f6f6d0468616c6c1e010a0228600a00ae21036459b22c59962c4b9625cb920365c9126400880702baaeebbaaeebbaae02eb3a";

    /// The same as version 4 wrote them.
    const VERSION_4_BLOCK: &str = "042880e0b8b6bf68c6b2d6b8bf6802052801cccd029cce02a0ac68062801a0c205b0c505f896dd0101c2a90711bbd4e242b8a394a43c7ae630f36b06000207626564726f6f6d0468616c6c1e010a0228600a00ae210b802da6f218217136059159a25a6400880707baaeebbaaeebbaaeeb3a";

    /// `forty_readings` and `meter_readings(12)` as version 5 wrote them:
    /// each column's header with its count, greatest value and sum.
    const VERSION_5_BLOCK: &str = "052880e0b8b6bf68c6b2d6b8bf6802052801cccd029cce02a0ac68062801a0c205b0c505f896dd0101c2a90711bbd4e242b8a394a43c7ae630f36b06000207626564726f6f6d0468616c6c1e010a0228600a00ae210b802da6f218217136059159a25a6400880707baaeebbaaeebbaaeeb3a";

    #[test]
    fn blocks_of_earlier_versions_still_decode() {
        let readings = forty_readings();
        let (v1, v2, v3) = (
            unhex(VERSION_1_BLOCK),
            unhex(VERSION_2_BLOCK),
            unhex(VERSION_3_BLOCK),
        );
        for old in [&v1, &v2, &v3] {
            assert!(same(&decode(&device(), old).unwrap(), &readings));
            assert_eq!(header(old).unwrap().count, 40);
            assert_eq!(count(old), Ok(40));
        }
        let (v4, v5, v6) = (
            unhex(VERSION_4_BLOCK),
            unhex(VERSION_5_BLOCK),
            encode(&readings).unwrap(),
        );
        for block in [&v4, &v5, &v6] {
            assert!(same(&decode(&device(), block).unwrap(), &readings));
            assert_eq!(header(block).unwrap(), header(&v1).unwrap());
            assert_eq!(count(block), Ok(40));
        }
        // Version 5's radix groups are never longer a value; version 6's
        // header drops the sums and the bytes the block says elsewhere.
        assert_eq!(v6[0], VERSION);
        assert!(v5.len() <= v4.len(), "{} against {}", v5.len(), v4.len());
        assert!(
            v6.len() + 10 <= v5.len(),
            "{} against {}",
            v6.len(),
            v5.len()
        );
        let meter = meter_readings(12);
        let (meter_v4, meter_v5, meter_v6) = (
            unhex(VERSION_4_METER_BLOCK),
            unhex(VERSION_5_METER_BLOCK),
            encode(&meter).unwrap(),
        );
        let meter_device = DeviceId::parse("meter-1").unwrap();
        for block in [&meter_v4, &meter_v5, &meter_v6] {
            assert!(same(&decode(&meter_device, block).unwrap(), &meter));
            assert_eq!(header(block).unwrap(), header(&meter_v4).unwrap());
        }
        assert!(
            meter_v5.len() < meter_v4.len(),
            "{} against {}",
            meter_v5.len(),
            meter_v4.len()
        );
        assert!(
            meter_v6.len() + 10 <= meter_v5.len(),
            "{} against {}",
            meter_v6.len(),
            meter_v5.len()
        );
        // Version 2: the heads no longer widen the first frame of each
        // stream. Version 3: small steps in radix mode.
        assert!(
            v2.len() * 10 < v1.len() * 7,
            "{} against {}",
            v2.len(),
            v1.len()
        );
        assert!(v3.len() < v2.len(), "{} against {}", v3.len(), v2.len());
        // Version 4: the times' step (a millisecond: these times are not
        // on the second) is one byte more, and a stream without exceptions
        // costs what it did in version 3.
        assert_eq!(v4.len(), v3.len() + 1);
    }

    #[test]
    fn each_mode_wins_where_it_should() {
        // Steps of -1, 0, +1: 40 values of radix 3 in eight bytes.
        let steps: Vec<u64> = (0..400u64).map(|i| i * 7 % 3).collect();
        assert_eq!(tail(&steps), (1 + 80, 3));
        // Zeros (a fixed interval's deltas of deltas): nothing past the
        // mode; other equal values are a radix above them.
        assert_eq!(tail(&[0; 1000]), (1, 1));
        assert_eq!(tail(&[5; 1000]).1, 6);
        // One jump among zeros: zeros of radix 1, and the jump an
        // exception (the mode, its count, then its distance and value as
        // streams of one value each).
        let mut jumpy = vec![0u64; 320];
        jumpy[100] = 60_000;
        assert_eq!(tail(&jumpy), (1 + 1 + 3 + 4, 1));
        // Steps of up to 250 with a spike one in twenty: the radix of the
        // steps, the spikes exceptions; smaller than either mode without.
        let spiky = spiky_steps(1440);
        let (len, radix) = tail(&spiky);
        assert!((400..=501).contains(&radix), "{radix}");
        let largest = spiky.iter().max().unwrap() + 1;
        let plain = numbers::varint_len(largest) + numbers::radix_len(largest, spiky.len()) + 1;
        let frames = 1 + numbers::packed_len(&spiky);
        assert!(
            len * 100 < plain.min(frames) * 90,
            "{len} against {plain} and {frames}"
        );
        // Wide values with no common width: frames.
        let wide: Vec<u64> = (0..320u64)
            .map(|i| (i * 2_654_435_761) % (1 << 24))
            .collect();
        assert_eq!(tail(&wide).1, 0);
        for values in [
            steps,
            vec![0; 1000],
            vec![5; 1000],
            jumpy,
            spiky,
            wide,
            vec![],
            vec![u64::MAX, 0],
        ] {
            let mut w = Writer::default();
            w.stream(&values, 1);
            assert_eq!(w.bytes.len(), stream_len(&values, 1));
            assert_eq!(read_stream(&w.bytes, values.len(), 1), values);
        }
    }

    /// Zigzag steps of a walk of up to ±250 with a spike of 1500 one value
    /// in twenty (up, then down again).
    fn spiky_steps(n: usize) -> Vec<u64> {
        let mut rng = fastrand::Rng::with_seed(44);
        let mut spiking = false;
        (0..n)
            .map(|_| {
                let spike = !spiking && rng.f64() < 0.05;
                let step = rng.i64(-250..=250)
                    + if spike { 1500 } else { 0 }
                    + if spiking { -1500 } else { 0 };
                spiking = spike;
                zigzag(step)
            })
            .collect()
    }

    /// A version 4 stream of `n` values with a head of `head`, all of it.
    fn read_stream(bytes: &[u8], n: usize, head: usize) -> Vec<u64> {
        let mut r = Reader::new(bytes);
        r.radix = true;
        r.patched = true;
        r.tight = true;
        let values = r.stream(n, head).unwrap();
        assert!(r.done());
        values
    }

    #[test]
    fn irregular_times_on_the_minute_cost_their_steps_not_their_milliseconds() {
        // A sensor that sends only when a value moves: gaps of 1 to 20
        // minutes, always on the minute.
        let mut rng = fastrand::Rng::with_seed(3);
        let mut at = 1_795_219_200_000i64;
        let readings: Vec<Reading> = (0..300)
            .map(|_| {
                at += 60_000 * rng.i64(1..=20);
                climate(at, "hall", 21.5, 40.0)
            })
            .collect();
        let bytes = encode(&readings).unwrap();
        assert!(same(&decode(&device(), &bytes).unwrap(), &readings));
        // Deltas of deltas within ±19 minutes: under 6 bits a reading in
        // steps of a minute, where milliseconds took over 20.
        assert!(bytes.len() < 300 * 6 / 8 + 80, "{}", bytes.len());
        // A millisecond off the minute, and the step is a millisecond again.
        let mut off = readings.clone();
        off[150].timestamp = Timestamp::from_millis(off[150].timestamp.millis() + 1).unwrap();
        let bytes = encode(&off).unwrap();
        assert!(same(&decode(&device(), &bytes).unwrap(), &off));
    }

    #[test]
    fn radix_groups_take_the_fewest_bytes_a_value() {
        // Radix 101 (a ±5 W walk in tenths): 6 values in 5 bytes, not 9 in
        // 8; radix 21 and 11 (the noisy sensors' steps): 9 in 5 and 16 in
        // 7; radix 3 keeps its 40 in 8.
        for (r, k, bytes) in [
            (101, 6, 5),
            (21, 9, 5),
            (11, 16, 7),
            (3, 40, 8),
            (501, 7, 8),
        ] {
            assert_eq!(numbers::tight_group(r), k, "radix {r}");
            assert_eq!(numbers::group_bytes(r, k), bytes, "radix {r}");
        }
        for r in (2..=numbers::MAX_RADIX).step_by(97) {
            let (tight, whole) = (numbers::tight_group(r), numbers::group_size(r));
            assert!(tight <= whole);
            // Never more bytes a value than the whole group.
            assert!(
                numbers::group_bytes(r, tight) * whole <= numbers::group_bytes(r, whole) * tight,
                "radix {r}"
            );
        }
    }

    #[test]
    fn the_encoder_picks_the_smallest_of_its_codings() {
        for values in [
            spiky_steps(1440),
            spiky_steps(31),
            (0..1440u64).map(|i| i * 7 % 3).collect(),
            (0..500u64)
                .map(|i| if i % 50 == 0 { 9000 } else { i % 2 })
                .collect(),
            (0..300u64)
                .map(|i| (i * 2_654_435_761) % (1 << 24))
                .collect(),
        ] {
            let sizes: Vec<(usize, u64)> = std::iter::once(0)
                .chain(
                    numbers::radix_candidates(&values)
                        .into_iter()
                        .map(|(r, _)| r),
                )
                .map(|radix| {
                    let mut w = Writer::default();
                    w.tail_in(&values, radix);
                    (w.bytes.len(), radix)
                })
                .collect();
            let smallest = sizes.iter().map(|(len, _)| *len).min().unwrap();
            assert_eq!(tail(&values).0, smallest, "{sizes:?}");
            let mut w = Writer::default();
            w.stream(&values, 0);
            assert_eq!(w.bytes.len(), smallest, "{sizes:?}");
        }
    }

    #[test]
    fn a_long_block_of_equal_readings_still_decodes() {
        // Radix mode would write its streams in no bytes: the encoder keeps
        // the times in frames, so the count stays within the decoder's bound.
        let n = FREE_READINGS as i64 + 100;
        let readings: Vec<Reading> = (0..n)
            .map(|i| climate(1_795_219_200_000 + i * 1000, "hall", 21.5, 40.0))
            .collect();
        let bytes = encode(&readings).unwrap();
        assert!(bytes.len() * FRAME >= readings.len(), "{}", bytes.len());
        assert!(same(&decode(&device(), &bytes).unwrap(), &readings));
        // Below the bound, radix mode: fewer bytes than frames would allow.
        let short = encode(&readings[..4000]).unwrap();
        assert!(short.len() * FRAME < 4000, "{}", short.len());
        assert!(same(&decode(&device(), &short).unwrap(), &readings[..4000]));
    }

    /// A random walk at sensor resolution, one reading a minute for a day.
    fn day_of_a_room_sensor() -> Vec<Reading> {
        let (mut t, mut h) = (21.0f64, 45.0f64);
        let mut rng = fastrand::Rng::with_seed(7);
        (0..1440)
            .map(|m| {
                t = ((t + (rng.f64() - 0.5) * 0.2) * 100.0).round() / 100.0;
                h = ((h + (rng.f64() - 0.5) * 0.4) * 10.0).round() / 10.0;
                climate(
                    1_795_219_200_000 + m * 60_000,
                    "bedroom",
                    t,
                    h.clamp(0.0, 100.0),
                )
            })
            .collect()
    }

    #[test]
    fn a_day_of_a_room_sensor_round_trips_in_a_few_bytes_a_reading() {
        let readings = day_of_a_room_sensor();
        let bytes = encode(&readings).unwrap();
        assert!(same(&decode(&device(), &bytes).unwrap(), &readings));
        let per_reading = bytes.len() as f64 / readings.len() as f64;
        println!(
            "a day of a room sensor: {} bytes, {per_reading:.3} a reading",
            bytes.len()
        );
        // Times cost nothing past a frame's width byte; each value's delta
        // a few bits at the sensor's resolution.
        assert!(per_reading < 1.7, "{per_reading} bytes a reading");
    }

    /// A meter's day at one reading a minute: a counter that grows by the
    /// watts it reports (to the thousandth of a kWh), watts as a noisy walk.
    #[test]
    fn a_day_of_a_meter_round_trips_in_a_few_bytes_a_reading() {
        let mut rng = fastrand::Rng::with_seed(11);
        let (mut kwh, mut w) = (5123.456f64, 350.0f64);
        let readings: Vec<Reading> = (0..1440)
            .map(|m| {
                w = (w + (rng.f64() - 0.5) * 40.0).clamp(0.0, 5000.0).round();
                kwh = ((kwh + w / 60_000.0) * 1000.0).round() / 1000.0;
                Reading {
                    device_id: device(),
                    timestamp: at(1_795_219_200_000 + m * 60_000),
                    measurement: Measurement::power(kwh, 10.25, w).unwrap(),
                }
            })
            .collect();
        let bytes = encode(&readings).unwrap();
        assert!(same(&decode(&device(), &bytes).unwrap(), &readings));
        // This meter rounds each minute's energy: the rounded prediction
        // leaves it a step of at most a unit either way.
        let (predicted, deltas) = column_lengths(&readings, Quantity::EnergyBought);
        assert!(predicted * 2 < deltas, "{predicted} against {deltas}");
        let per_reading = bytes.len() as f64 / readings.len() as f64;
        println!(
            "a day of a meter: {} bytes, {per_reading:.3} a reading",
            bytes.len()
        );
        assert!(per_reading < 2.5, "{per_reading} bytes a reading");
    }

    /// The bytes of `readings`' column of `q` with its counter predicted
    /// from the watts where that is smaller, and without.
    fn column_lengths(readings: &[Reading], q: Quantity) -> (usize, usize) {
        let values: Vec<f64> = readings.iter().filter_map(|r| r.get(q)).collect();
        let mut column = Column::of(q, values).unwrap();
        let without = {
            let mut w = Writer::default();
            column.write_body(&mut w);
            w.bytes.len()
        };
        let watts: Vec<i64> = readings
            .iter()
            .filter_map(|r| r.get(Quantity::Power))
            .map(|w| thousandths(w).unwrap())
            .collect();
        column.drivers = drivers(q, readings.iter(), column.values.len(), &watts);
        let mut w = Writer::default();
        column.write_body(&mut w);
        (w.bytes.len(), without)
    }

    #[test]
    fn a_counter_that_sums_its_watts_costs_next_to_nothing() {
        let day = meter_readings(1440);
        let (predicted, deltas) = column_lengths(&day, Quantity::EnergyBought);
        println!("a day's counter: {predicted} bytes predicted from the watts, {deltas} without");
        // Steps of 25 Wh give or take one, left to the carry, which the
        // summed prediction keeps as the meter does.
        assert!(predicted < 32, "{predicted} against {deltas}");
        let bytes = encode(&day).unwrap();
        let meter = DeviceId::parse("meter-1").unwrap();
        assert!(same(&decode(&meter, &bytes).unwrap(), &day));
        // A page out of the middle, and the last reading alone, decode the
        // same values.
        let page = decode_picked(&meter, &bytes, |_| 700..760).unwrap();
        assert!(same(&page, &day[700..760]));
        let last = decode_picked(&meter, &bytes, |t| t.len() - 1..t.len()).unwrap();
        assert!(same(&last, &day[1439..]));
    }

    #[test]
    fn a_noisy_meter_s_hour_block_is_smaller_by_its_counter() {
        // The DynamoDB hour item of issue 44's noisy meter: watts on a walk
        // of up to 250 W a minute, a 1.5 kW spike one minute in twenty, the
        // counter summing them in whole Wh.
        let mut rng = fastrand::Rng::with_seed(44);
        let (mut w, mut wh, mut carry) = (1500i64, 5_210_125i64, 0.0f64);
        let hour: Vec<Reading> = (0..60)
            .map(|m| {
                w = (w + rng.i64(-250..=250)).clamp(0, 20_000);
                let watts = (w + if rng.f64() < 0.05 { 1500 } else { 0 }) as f64;
                carry += watts / 60.0;
                wh += carry.floor() as i64;
                carry -= carry.floor();
                power_reading(m * 60_000, wh as f64 / 1000.0, 812.5, watts)
            })
            .collect();
        let (predicted, deltas) = column_lengths(&hour, Quantity::EnergyBought);
        let block = encode(&hour).unwrap();
        println!(
            "a noisy meter's hour: {} bytes; its counter {predicted} bytes, {deltas} in deltas",
            block.len()
        );
        assert!(predicted * 3 < deltas, "{predicted} against {deltas}");
        let meter = DeviceId::parse("meter-1").unwrap();
        assert!(same(&decode(&meter, &block).unwrap(), &hour));
    }

    #[test]
    fn a_counter_the_watts_do_not_predict_keeps_its_deltas() {
        // A sensor's walk as "watts": the prediction costs more than the
        // deltas and is not chosen; the block is what version 4 wrote.
        let mut rng = fastrand::Rng::with_seed(5);
        let mut kwh = 100_000i64;
        let unrelated: Vec<Reading> = (0..1440)
            .map(|m| {
                kwh += rng.i64(0..3);
                power_reading(
                    m * 60_000,
                    kwh as f64 / 1000.0,
                    0.0,
                    rng.i64(0..20_000) as f64,
                )
            })
            .collect();
        let (chosen, deltas) = column_lengths(&unrelated, Quantity::EnergyBought);
        assert_eq!(chosen, deltas);
        // A counter with readings that lack the watts has no drivers.
        let mut gappy = meter_readings(100);
        gappy[50].measurement = Measurement::new(
            None,
            vec![(
                Quantity::EnergyBought,
                gappy[50].get(Quantity::EnergyBought).unwrap(),
            )],
        )
        .unwrap();
        let watts: Vec<i64> = gappy
            .iter()
            .filter_map(|r| Some(thousandths(r.get(Quantity::Power)?).unwrap()))
            .collect();
        assert!(drivers(Quantity::EnergyBought, gappy.iter(), gappy.len(), &watts).is_none());
        let meter = DeviceId::parse("meter-1").unwrap();
        for readings in [&unrelated, &gappy] {
            let bytes = encode(readings).unwrap();
            assert!(same(&decode(&meter, &bytes).unwrap(), readings));
        }
    }

    #[test]
    fn a_counter_of_energy_sold_follows_the_watts_fed_in() {
        // Feeding in 1.2 to 3 kW by day, drawing at night: the sold counter
        // grows by the negative watts, the bought one by the positive.
        let (mut bought, mut sold, mut carry) = (1_000_000i64, 2_000_000i64, (0.0f64, 0.0f64));
        let day: Vec<Reading> = (0..1440)
            .map(|m| {
                let w = if (420..1140).contains(&m) {
                    -1200.0 - (m % 90) as f64 * 20.0
                } else {
                    300.0 + (m % 7) as f64
                };
                carry.0 += w.max(0.0) / 60.0;
                carry.1 += (-w).max(0.0) / 60.0;
                bought += carry.0.floor() as i64;
                sold += carry.1.floor() as i64;
                carry = (carry.0.fract(), carry.1.fract());
                power_reading(m * 60_000, bought as f64 / 1000.0, sold as f64 / 1000.0, w)
            })
            .collect();
        let (predicted, deltas) = column_lengths(&day, Quantity::EnergySold);
        assert!(predicted < deltas, "{predicted} against {deltas}");
        let meter = DeviceId::parse("meter-1").unwrap();
        let bytes = encode(&day).unwrap();
        assert!(same(&decode(&meter, &bytes).unwrap(), &day));
    }

    fn power_reading(ms: i64, bought: f64, sold: f64, watts: f64) -> Reading {
        Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: at(1_795_219_200_000 + ms),
            measurement: Measurement::power(bought, sold, watts).unwrap(),
        }
    }

    #[test]
    fn the_header_answers_without_decoding() {
        let readings = day_of_a_room_sensor();
        let bytes = encode(&readings).unwrap();
        let h = header(&bytes).unwrap();
        assert_eq!(h.count, 1440);
        assert_eq!(count(&bytes), Ok(1440));
        assert_eq!(count(&encode(&readings[..7]).unwrap()), Ok(7));
        assert_eq!(
            (h.first, h.last),
            (readings[0].timestamp, readings[1439].timestamp)
        );
        let temps: Vec<f64> = readings
            .iter()
            .map(|r| r.get(Quantity::Temperature).unwrap())
            .collect();
        let t = h.quantities[0];
        assert_eq!(t.quantity, Quantity::Temperature);
        assert_eq!(t.count, 1440);
        assert_eq!(t.min, temps.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(
            t.max,
            temps.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        );
        assert_eq!(h.quantities[1].quantity, Quantity::Humidity);
    }

    #[test]
    fn bad_input_is_refused_and_damaged_blocks_are_errors_not_panics() {
        assert_eq!(encode::<Reading>(&[]), Err(BlockError::Empty));
        let r = day_of_a_room_sensor();
        assert_eq!(
            encode(&[r[1].clone(), r[0].clone()]),
            Err(BlockError::NotInOrder(1))
        );
        assert_eq!(
            encode(&[r[0].clone(), r[0].clone()]),
            Err(BlockError::NotInOrder(1))
        );
        let bytes = encode(&r[..50]).unwrap();
        for cut in 0..bytes.len() {
            assert!(decode(&device(), &bytes[..cut]).is_err(), "cut at {cut}");
        }
        // A damaged count does not allocate what it claims.
        let mut huge = bytes.clone();
        huge[1..6].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(header(&huge).is_err());
        assert!(count(&huge).is_err());
        assert!(count(&[]).is_err());
        let mut unknown = bytes.clone();
        unknown[0] = 0xee;
        assert!(count(&unknown).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&device(), &longer).is_err());
        let mut rng = fastrand::Rng::with_seed(3);
        // And a block of version 4's codings: a time step of a minute and
        // exceptions (a temperature with rare spikes).
        let mut at = 1_795_219_200_000i64;
        let spiky: Vec<Reading> = (0..300)
            .map(|_| {
                at += 60_000 * rng.i64(1..=3);
                let spike = if rng.f64() < 0.05 { 15.0 } else { 0.0 };
                climate(at, "hall", 20.0 + rng.f64().round() / 10.0 + spike, 40.0)
            })
            .collect();
        let spiky = encode(&spiky).unwrap();
        for cut in 0..spiky.len() {
            assert!(decode(&device(), &spiky[..cut]).is_err(), "cut at {cut}");
        }
        // And a meter's, its counter predicted from the watts.
        let meter = encode(&meter_readings(300)).unwrap();
        for cut in 0..meter.len() {
            assert!(decode(&device(), &meter[..cut]).is_err(), "cut at {cut}");
        }
        for block in [&bytes, &spiky, &meter] {
            for _ in 0..2000 {
                let mut flipped = block.clone();
                let i = rng.usize(..flipped.len());
                flipped[i] ^= 1 << rng.u8(..8);
                // Either an error or readings: never a panic.
                let _ = decode(&device(), &flipped);
            }
        }
    }

    fn quantity_value(q: Quantity) -> impl Strategy<Value = f64> {
        let (lo, hi) = q.spec().range;
        let lo_k = (lo * 1000.0).ceil() as i64;
        let hi_k = (hi * 1000.0).floor() as i64;
        prop_oneof![
            // Sensor resolution: whole thousandths.
            (lo_k..=hi_k).prop_map(|k| k as f64 / 1000.0),
            // Any double in range: 17 significant digits.
            (lo..=hi).prop_filter("storable", |v| *v == 0.0 || v.abs() >= 1e-100),
            Just(lo),
            Just(hi),
        ]
    }

    fn reading_strategy() -> impl Strategy<Value = (i64, Option<u8>, Vec<(Quantity, f64)>)> {
        let time = prop_oneof![
            0i64..=3_000_000,
            Just(Timestamp::MIN.millis()),
            Just(Timestamp::MAX.millis()),
            (Timestamp::MIN.millis()..=Timestamp::MAX.millis()),
        ];
        let quantities = proptest::sample::subsequence(Quantity::ALL.to_vec(), 1..=4)
            .prop_flat_map(|qs| {
                qs.into_iter()
                    .map(|q| quantity_value(q).prop_map(move |v| (q, v)))
                    .collect::<Vec<_>>()
            });
        (time, proptest::option::of(0u8..3), quantities)
    }

    /// Values of the shapes streams hold: small steps, wide ones, zeros
    /// with rare jumps, and any.
    fn stream_values() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            proptest::collection::vec(0u64..5, 0..200),
            proptest::collection::vec(0u64..600, 0..200),
            proptest::collection::vec(prop_oneof![9 => Just(0u64), 1 => any::<u64>()], 0..200),
            proptest::collection::vec(any::<u64>(), 0..50),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn every_coding_of_a_stream_round_trips(values in stream_values(), head in 0usize..3) {
            let head = head.min(values.len());
            let rest = &values[head..];
            let largest = rest.iter().max().map_or(Some(1), |m| m.checked_add(1));
            let radixes = std::iter::once(0)
                .chain(numbers::radix_candidates(rest).into_iter().map(|(r, _)| r))
                .chain(largest.filter(|r| *r <= numbers::MAX_RADIX))
                .chain([1, 2, 3, 255, 256, 1000])
                // As the encoder writes them: at most a quarter exceptions.
                .filter(|r| *r == 0 || rest.iter().filter(|v| *v >= r).count() * 4 <= rest.len());
            for radix in radixes {
                let mut w = Writer::default();
                for v in &values[..head] {
                    w.unsigned(*v);
                }
                w.tail_in(rest, radix);
                prop_assert_eq!(read_stream(&w.bytes, values.len(), head), values.clone(), "radix {}", radix);
            }
            // And the encoder's own choice, its length as `stream_len` says.
            let mut w = Writer::default();
            w.stream(&values, head);
            prop_assert_eq!(w.bytes.len(), stream_len(&values, head));
            prop_assert_eq!(read_stream(&w.bytes, values.len(), head), values.clone());
        }

        /// Any batch (gaps, the same time twice, missing quantities, any
        /// values, the first and last representable times) round-trips bit
        /// for bit once normalized, and its header agrees with it.
        #[test]
        fn any_batch_round_trips(batch in proptest::collection::vec(reading_strategy(), 1..60)) {
            let readings: Vec<Reading> = batch
                .into_iter()
                .map(|(ms, room, values)| Reading {
                    device_id: device(),
                    timestamp: at(ms),
                    measurement: Measurement::new(
                        room.map(|k| RoomId::parse(&format!("room-{k}")).unwrap()),
                        values,
                    )
                    .unwrap(),
                })
                .collect();
            // Borrowed readings normalize and encode as the owned do.
            let borrowed = normalize(readings.iter().collect::<Vec<&Reading>>());
            let readings = normalize(readings.clone());
            let bytes = encode(&readings).unwrap();
            prop_assert_eq!(&encode(&borrowed).unwrap(), &bytes);
            let back = decode(&device(), &bytes).unwrap();
            prop_assert!(same(&back, &readings));
            let h = header(&bytes).unwrap();
            prop_assert_eq!(h.count as usize, readings.len());
            for s in &h.quantities {
                let vs: Vec<f64> = readings.iter().filter_map(|r| r.get(s.quantity)).collect();
                prop_assert_eq!(s.count as usize, vs.len());
                prop_assert_eq!(s.min, vs.iter().copied().fold(f64::INFINITY, f64::min));
                prop_assert_eq!(s.max, vs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            }
        }
    }

    proptest! {
        /// A meter's readings, its counter growing by its watts give or
        /// take some noise, at irregular times, some without watts, round
        /// trip bit for bit whichever coding the counter takes.
        #[test]
        fn any_meter_round_trips(
            steps in proptest::collection::vec(
                (1i64..600_000, -20_000i64..20_000, -3i64..4, proptest::bool::weighted(0.9), 0u32..3),
                1..200,
            ),
            every_one_with_watts in proptest::bool::ANY,
        ) {
            let (mut ms, mut wh) = (1_795_219_200_000i64, 5_000_000i64);
            let readings: Vec<Reading> = steps
                .into_iter()
                .map(|(dt, watts, noise, with_watts, decimals)| {
                    ms += dt;
                    let watts = watts as f64 / 10f64.powi(decimals as i32);
                    wh = (wh + (watts.max(0.0) * dt as f64 / 3.6e6) as i64 + noise).max(0);
                    let mut values = vec![(Quantity::EnergyBought, wh as f64 / 1000.0)];
                    if with_watts || every_one_with_watts {
                        values.push((Quantity::Power, watts));
                    }
                    Reading {
                        device_id: device(),
                        timestamp: at(ms),
                        measurement: Measurement::new(None, values).unwrap(),
                    }
                })
                .collect();
            let bytes = encode(&readings).unwrap();
            prop_assert!(same(&decode(&device(), &bytes).unwrap(), &readings));
            // The prediction is taken only where it is smaller.
            let (chosen, deltas) = column_lengths(&readings, Quantity::EnergyBought);
            prop_assert!(chosen <= deltas, "{} against {}", chosen, deltas);
        }
    }

    #[test]
    fn normalizing_keeps_the_last_reading_of_a_time() {
        let a = climate(1000, "a", 20.0, 50.0);
        let b = climate(1000, "b", 21.0, 51.0);
        let c = climate(500, "c", 22.0, 52.0);
        let n = normalize(vec![a, b.clone(), c.clone()]);
        assert!(same(&n, &[c, b]));
    }
}
