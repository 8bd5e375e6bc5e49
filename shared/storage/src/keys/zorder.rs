//! Z-order addresses for climate search (seed 004): the bits of time,
//! temperature and humidity interleaved, so that one sort key orders readings
//! in all three at once and a box query reads close to only what it returns.
//!
//! Each dimension is first mapped to 32 bits whose unsigned order is the
//! value's order:
//! - time: epoch seconds as an unsigned integer (1970 to 2106; readings are
//!   later than 2000 anyway). Sub-second order is kept by the key's suffix;
//! - temperature and humidity: the value rounded to the nearest `f32` (24-bit
//!   mantissa: better than 0.001 °C or %RH over the accepted ranges), then
//!   [`encode_f32`]. Rounding to `f32` is monotone, so a box over the `f64`
//!   values never loses a reading; the exact comparison happens after reading;
//! - signed integers ([`encode_i32`]) are not used in the address today but
//!   are here, tested, for the next dimension that needs them.
//!
//! The address interleaves the three 32-bit values from their top bits down,
//! time first: 96 bits, written as 24 lowercase hex digits so that string
//! order is address order on every engine. The stored sort key appends the
//! millisecond and the device, which makes it unique within a room or device
//! and lets a page continue from it exactly: see [`ZKey`].

use domain::model::{DeviceId, Timestamp};

/// Maps an `i32` to a `u32` with the same order: flip the sign bit.
pub fn encode_i32(v: i32) -> u32 {
    (v as u32) ^ 0x8000_0000
}

/// Maps an `f32` to a `u32` with the same order (IEEE 754): negative values
/// flip all bits, others only the sign bit. `-0.0` is taken as `0.0`, since
/// they compare equal. NaN is never a reading (rejected at the boundary).
pub fn encode_f32(v: f32) -> u32 {
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Epoch seconds as an unsigned value (clamped to what 32 bits hold).
pub fn encode_time(t: Timestamp) -> u32 {
    t.millis().div_euclid(1000).clamp(0, u32::MAX as i64) as u32
}

/// How many dimensions are interleaved and how many bits each has, from the
/// most significant bit down, dimension 0 first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub dims: u32,
    pub bits: u32,
}

/// The climate layout: time, temperature, humidity; 32 bits each.
pub const CLIMATE: Layout = Layout { dims: 3, bits: 32 };

impl Layout {
    fn total(self) -> u32 {
        self.dims * self.bits
    }

    /// Every bit of dimension `d`.
    fn dim_mask(self, d: u32) -> u128 {
        let mut mask = 0u128;
        for k in 0..self.bits {
            mask |= 1u128 << (k * self.dims + (self.dims - 1 - d));
        }
        mask
    }

    /// Interleaves one value per dimension (each below `2^bits`).
    pub fn interleave(self, values: &[u32]) -> u128 {
        debug_assert_eq!(values.len(), self.dims as usize);
        let mut z = 0u128;
        for k in (0..self.bits).rev() {
            for v in values {
                z = (z << 1) | ((*v as u128 >> k) & 1);
            }
        }
        z
    }

    /// The value of dimension `d` in `z`.
    pub fn extract(self, z: u128, d: u32) -> u32 {
        let mut v = 0u32;
        for k in (0..self.bits).rev() {
            let pos = k * self.dims + (self.dims - 1 - d);
            v = (v << 1) | ((z >> pos) & 1) as u32;
        }
        v
    }

    /// Whether `z` lies in the box whose corners are `lo` and `hi`.
    pub fn in_box(self, z: u128, lo: u128, hi: u128) -> bool {
        (0..self.dims).all(|d| {
            let v = self.extract(z, d);
            self.extract(lo, d) <= v && v <= self.extract(hi, d)
        })
    }

    /// BIGMIN (Tropf & Herzog, 1981): the smallest address in the box `lo..=hi`
    /// that is greater than `z`, or `None` when there is none.
    pub fn bigmin(self, z: u128, lo: u128, hi: u128) -> Option<u128> {
        let top = if self.total() == 128 {
            u128::MAX
        } else {
            (1u128 << self.total()) - 1
        };
        if z >= hi || z >= top {
            return None;
        }
        let next = z + 1;
        if self.in_box(next, lo, hi) {
            return Some(next);
        }
        self.bigmin_outside(next, lo, hi)
    }

    /// Tropf & Herzog's walk for a point outside the box: bit by bit from the
    /// top, narrowing the box; the smallest in-box address `>= z`.
    fn bigmin_outside(self, z: u128, mut lo: u128, mut hi: u128) -> Option<u128> {
        let mut best = None;
        for pos in (0..self.total()).rev() {
            let bit = 1u128 << pos;
            let d = (self.dims - 1) - pos % self.dims;
            let below = self.dim_mask(d) & (bit - 1);
            // "1000…" and "0111…" in this dimension, from this bit down.
            let load_min = |v: u128| (v | bit) & !below;
            let load_max = |v: u128| (v & !bit) | below;
            match (z & bit != 0, lo & bit != 0, hi & bit != 0) {
                (false, false, false) | (true, true, true) => {}
                (false, false, true) => {
                    best = Some(load_min(lo));
                    hi = load_max(hi);
                }
                (false, true, true) => return Some(lo),
                (true, false, false) => return best,
                (true, false, true) => lo = load_min(lo),
                // lo above hi in this dimension: the box is empty from here.
                (_, true, false) => return best,
            }
        }
        // z itself is in the narrowed box.
        Some(z)
    }
}

/// The positions a 32-bit value's bits take when spread with two zero bits
/// between them, at each halving of the chunk size (the classic "part 1 by 2").
const fn spread_mask(chunk: u32) -> u128 {
    let mut m = 0u128;
    let mut i = 0;
    while i < 32 {
        m |= 1u128 << (3 * (i - i % chunk) + i % chunk);
        i += 1;
    }
    m
}

/// Bit `i` of `v` moved to bit `3i`, in five shift-and-mask steps.
fn spread3(v: u32) -> u128 {
    let mut x = v as u128;
    x = (x | x << 32) & spread_mask(16);
    x = (x | x << 16) & spread_mask(8);
    x = (x | x << 8) & spread_mask(4);
    x = (x | x << 4) & spread_mask(2);
    x = (x | x << 2) & spread_mask(1);
    x
}

/// A climate reading's address in the climate layout (the same as
/// `CLIMATE.interleave`, which the tests hold it to, without the bit loop:
/// it runs for every climate reading written).
pub fn address(t: Timestamp, temperature: f64, humidity: f64) -> u128 {
    spread3(encode_time(t)) << 2
        | spread3(encode_f32(temperature as f32)) << 1
        | spread3(encode_f32(humidity as f32))
}

const HEX: usize = 24;

/// The stored sort key of a reading in a Z-order index: the address (24 hex
/// digits), the millisecond (3 digits) and the device. Unique within a room
/// or device, ordered by address, and enough to rebuild the item's table key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ZKey(String);

impl ZKey {
    pub fn of(device: &DeviceId, t: Timestamp, temperature: f64, humidity: f64) -> Self {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let z = address(t, temperature, humidity);
        let ms = t.millis().rem_euclid(1000) as u32;
        let mut key = String::with_capacity(HEX + 3 + device.as_str().len());
        for nibble in (0..HEX).rev() {
            key.push(DIGITS[(z >> (4 * nibble) & 0xf) as usize] as char);
        }
        for digit in [ms / 100, ms / 10 % 10, ms % 10] {
            key.push((b'0' + digit as u8) as char);
        }
        key.push_str(device.as_str());
        ZKey(key)
    }

    /// The smallest key with this address.
    pub fn first_at(z: u128) -> Self {
        ZKey(format!("{z:0HEX$x}"))
    }

    /// Past every key with this address (`~` sorts after every id character).
    pub fn last_at(z: u128) -> Self {
        ZKey(format!("{z:0HEX$x}~"))
    }

    pub fn parse(s: &str) -> Option<Self> {
        let key = ZKey(s.to_owned());
        key.parts()?;
        Some(key)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn address(&self) -> u128 {
        u128::from_str_radix(&self.0[..HEX], 16).expect("checked on construction")
    }

    /// The table key of the reading behind this index key: device and timestamp.
    pub fn parts(&self) -> Option<(DeviceId, Timestamp)> {
        let s = &self.0;
        if s.len() <= HEX + 3 || !s.is_char_boundary(HEX + 3) {
            return None;
        }
        let hex = &s[..HEX];
        if !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        let z = u128::from_str_radix(hex, 16).ok()?;
        let ms_text = &s[HEX..HEX + 3];
        if !ms_text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let ms: i64 = ms_text.parse().ok()?;
        let seconds = CLIMATE.extract(z, 0) as i64;
        let t = Timestamp::from_millis(seconds * 1000 + ms).ok()?;
        let device = DeviceId::parse(&s[HEX + 3..]).ok()?;
        Some((device, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SMALL: Layout = Layout { dims: 3, bits: 3 };

    fn brute_bigmin(l: Layout, z: u128, lo: u128, hi: u128) -> Option<u128> {
        ((z + 1)..(1u128 << l.total())).find(|&y| l.in_box(y, lo, hi))
    }

    proptest! {
        #[test]
        fn signed_integers_keep_their_order(a: i32, b: i32) {
            prop_assert_eq!(a.cmp(&b), encode_i32(a).cmp(&encode_i32(b)));
        }

        #[test]
        fn floats_keep_their_order(a in prop::num::f32::NORMAL | prop::num::f32::SUBNORMAL | prop::num::f32::ZERO | prop::num::f32::INFINITE,
                                   b in prop::num::f32::NORMAL | prop::num::f32::SUBNORMAL | prop::num::f32::ZERO | prop::num::f32::INFINITE) {
            prop_assert_eq!(a.partial_cmp(&b).unwrap(), encode_f32(a).cmp(&encode_f32(b)));
        }

        #[test]
        fn times_keep_their_order(a in 946_684_800_000i64..4_102_444_800_000, b in 946_684_800_000i64..4_102_444_800_000) {
            let (ta, tb) = (Timestamp::from_millis(a).unwrap(), Timestamp::from_millis(b).unwrap());
            // Seconds: equal within a second, otherwise in order.
            prop_assert_eq!((a / 1000).cmp(&(b / 1000)), encode_time(ta).cmp(&encode_time(tb)));
        }

        #[test]
        fn the_fast_address_is_the_interleaving(ms in 946_684_800_000i64..4_102_444_800_000, t in -100.0f64..150.0, h in 0.0f64..100.0) {
            let ts = Timestamp::from_millis(ms).unwrap();
            let slow = CLIMATE.interleave(&[encode_time(ts), encode_f32(t as f32), encode_f32(h as f32)]);
            prop_assert_eq!(address(ts, t, h), slow);
            let key = ZKey::of(&DeviceId::parse("d").unwrap(), ts, t, h);
            prop_assert_eq!(key.as_str(), format!("{slow:024x}{:03}d", ms % 1000));
        }

        #[test]
        fn spreading_any_value_is_the_interleaving(t: u32, x: u32, y: u32) {
            prop_assert_eq!(spread3(t) << 2 | spread3(x) << 1 | spread3(y), CLIMATE.interleave(&[t, x, y]));
        }

        #[test]
        fn addresses_interleave_and_extract(t: u32, x: u32, y: u32) {
            let z = CLIMATE.interleave(&[t, x, y]);
            prop_assert_eq!([CLIMATE.extract(z, 0), CLIMATE.extract(z, 1), CLIMATE.extract(z, 2)], [t, x, y]);
        }

        #[test]
        fn bigmin_is_the_smallest_address_in_the_box_above_the_input(
            z in 0u128..512, a in prop::array::uniform3(0u32..8), b in prop::array::uniform3(0u32..8)
        ) {
            let lo = SMALL.interleave(&[a[0].min(b[0]), a[1].min(b[1]), a[2].min(b[2])]);
            let hi = SMALL.interleave(&[a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])]);
            prop_assert_eq!(SMALL.bigmin(z, lo, hi), brute_bigmin(SMALL, z, lo, hi));
        }

        #[test]
        fn zkeys_order_by_address_and_give_back_the_table_key(
            ms in 946_684_800_000i64..4_102_444_800_000, t in -40.0f64..60.0, h in 0.0f64..100.0
        ) {
            let dev = DeviceId::parse("sensor-1").unwrap();
            let ts = Timestamp::from_millis(ms).unwrap();
            let key = ZKey::of(&dev, ts, t, h);
            prop_assert_eq!(key.address(), address(ts, t, h));
            prop_assert_eq!(key.parts(), Some((dev, ts)));
            prop_assert!(ZKey::first_at(key.address()) < key && key < ZKey::last_at(key.address()));
        }
    }

    #[test]
    fn minus_zero_is_zero_and_negatives_sort_first() {
        assert_eq!(encode_f32(-0.0), encode_f32(0.0));
        let ordered = [
            -40.5f32,
            -1.0,
            -f32::MIN_POSITIVE,
            0.0,
            f32::MIN_POSITIVE,
            0.5,
            28.0,
            1e9,
        ];
        for w in ordered.windows(2) {
            assert!(encode_f32(w[0]) < encode_f32(w[1]), "{} < {}", w[0], w[1]);
        }
        assert!(encode_i32(-1) < encode_i32(0) && encode_i32(i32::MIN) == 0);
    }

    #[test]
    fn bigmin_over_every_point_of_a_small_space() {
        let l = Layout { dims: 2, bits: 3 };
        for lo_a in 0..8 {
            for hi_a in lo_a..8 {
                let (lo, hi) = (l.interleave(&[lo_a, 2]), l.interleave(&[hi_a, 5]));
                for z in 0..64 {
                    assert_eq!(
                        l.bigmin(z, lo, hi),
                        brute_bigmin(l, z, lo, hi),
                        "z={z} lo={lo} hi={hi}"
                    );
                }
            }
        }
    }
}
