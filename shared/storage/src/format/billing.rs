//! The size rule DynamoDB bills by (docs/cost.md), written once over our own
//! types: a number weighs one byte per two significant digits plus one, a
//! string its bytes, an item its attribute names and values; a read costs
//! 0.5 units per 4 KB. The embedded store meters its reads by it, so both
//! engines report the same `read_units`; the DynamoDB adapter sizes its SDK
//! items with the same number rule (`store::dynamodb::size`).

use domain::model::Reading;

/// Read units of one eventually consistent request that read `bytes` of
/// items: 0.5 per 4 KB, rounded up, at least 0.5.
pub fn read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64 * 0.5
}

/// The size DynamoDB gives a number: 1 byte per two significant digits, plus 1.
pub fn number_size(text: &str) -> usize {
    let digits = text.bytes().take_while(|b| *b != b'e' && *b != b'E');
    let mut significant = 0usize;
    let (mut started, mut trailing_zeros) = (false, 0usize);
    for d in digits.filter(u8::is_ascii_digit) {
        if d == b'0' && !started {
            continue;
        }
        started = true;
        significant += 1;
        trailing_zeros = if d == b'0' { trailing_zeros + 1 } else { 0 };
    }
    (significant - trailing_zeros).max(1).div_ceil(2) + 1
}

/// `number_size` of an `f64` as stored (its shortest text). A value of
/// whole thousandths, what sensors send, is sized from that integer's
/// digits without formatting it: metering a page formatted every value, a
/// sixth of a raw page's time (docs/BENCHMARKS.md).
pub fn f64_size(v: f64) -> usize {
    match domain::model::whole_thousandths(v) {
        Some(m) => integer_size(m.unsigned_abs()),
        None => number_size(ryu::Buffer::new().format(v)),
    }
}

/// `number_size` of an integer's digits, without formatting it.
fn integer_size(mut m: u64) -> usize {
    if m == 0 {
        return 2;
    }
    while m.is_multiple_of(10) {
        m /= 10;
    }
    let significant = m.ilog10() as usize + 1;
    significant.div_ceil(2) + 1
}

/// DynamoDB's size of a value in its JSON shape (a struct or map is `M`, a
/// sequence `L`, a number `N`, a string `S`, `null` `NULL`): what an item
/// serialized by `serde_dynamo` weighs, computed from our own types.
pub fn json_size(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::String(s) => s.len(),
        Value::Number(n) => number_size(&n.to_string()),
        Value::Bool(_) | Value::Null => 1,
        Value::Array(items) => 3 + items.iter().map(|i| 1 + json_size(i)).sum::<usize>(),
        Value::Object(m) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + json_size(v))
                .sum::<usize>()
        }
    }
}

/// The size of a rollup's item on DynamoDB: its stored body's attributes
/// (the top-level map's, not nested in an `M`), plus the keys `pk` (the
/// device id) and `sk` (`RH#` or `RD#` and a time).
pub fn rollup_size<S: AsRef<str>>(
    device_id_len: usize,
    stored: &crate::format::rollup::Stored<S>,
) -> usize {
    rollup_item_size(device_id_len, stored_size(stored))
}

/// `rollup_size` from its body's `stored_size`, kept with the body (the
/// embedded store's rollups table): what a read meters without sizing the
/// body again.
pub fn rollup_item_size(device_id_len: usize, body_size: usize) -> usize {
    body_size + "pk".len() + device_id_len + "sk".len() + 3 + domain::model::Timestamp::TEXT_LEN
}

/// The top-level attributes of a stored rollup, sized field by field as
/// `json_size` sizes its JSON shape (a test holds the two equal), without
/// building that shape: a year's daily stats meter 365 of them.
pub fn stored_size<S: AsRef<str>>(s: &crate::format::rollup::Stored<S>) -> usize {
    /// In 64-bit arithmetic when it fits (128-bit division is several times
    /// slower); every stored integer does.
    fn int(v: i128) -> usize {
        u64::try_from(v.unsigned_abs())
            .map_or_else(|_| number_size(itoa::Buffer::new().format(v)), integer_size)
    }
    /// An `L` of already sized elements (an iterator: nothing is collected,
    /// a year of daily stats sizes 365 rollups).
    fn list(sizes: impl IntoIterator<Item = usize>) -> usize {
        3 + sizes.into_iter().map(|n| 1 + n).sum::<usize>()
    }
    fn field<S: AsRef<str>>(f: &crate::format::rollup::StoredField<S>) -> usize {
        list([
            f.0.as_ref().len(),
            int(f.1 as i128),
            f64_size(f.2),
            f64_size(f.3),
            f64_size(f.4),
        ])
    }
    fn fields<S: AsRef<str>>(fs: &[crate::format::rollup::StoredField<S>]) -> usize {
        list(fs.iter().map(field))
    }
    fn mark(m: &Option<(i64, f64)>) -> usize {
        match m {
            None => 1,
            Some((at, v)) => list([int(*at as i128), f64_size(*v)]),
        }
    }
    fn counter(c: &Option<crate::format::rollup::StoredCounter>) -> usize {
        let Some(c) = c else { return 1 };
        let growth = match &c.g {
            None => 1,
            Some((kwh, resets)) => list([f64_size(*kwh), int(*resets as i128)]),
        };
        let entries = [
            ("e", mark(&c.e)),
            ("g", growth),
            ("first", int(c.first as i128)),
            ("i", list([f64_size(c.i.0), int(c.i.1 as i128)])),
            ("l", mark(&Some(c.l))),
        ];
        3 + entries.iter().map(|(k, v)| 1 + k.len() + v).sum::<usize>()
    }
    let rooms = s.r.iter().map(|(name, tally)| {
        let tally = match tally {
            None => 1,
            Some((count, fs)) => list([int(*count as i128), fields(fs)]),
        };
        list([name.as_ref().len(), tally])
    });
    "v".len()
        + int(s.v as i128)
        + "n".len()
        + int(s.n as i128)
        + "f".len()
        + fields(&s.f)
        + "r".len()
        + list(rooms)
        + "b".len()
        + counter(&s.b)
        + "s".len()
        + counter(&s.s)
        + "k".len()
        + list([mark(&s.k.0), mark(&s.k.1)])
        + s.x.as_ref().map_or(0, |x| {
            // A nested map, left out where the span has no gas or water.
            let entries = [
                ("g", counter(&x.g)),
                ("w", counter(&x.w)),
                ("k", list([mark(&x.k.0), mark(&x.k.1)])),
            ];
            "x".len() + 3 + entries.iter().map(|(k, v)| 1 + k.len() + v).sum::<usize>()
        })
}

/// The size of a reading's item on DynamoDB with no optional index and no
/// expiry (what the embedded store meters reads by), without building it.
pub fn reading_size(r: &Reading) -> usize {
    reading_size_by(r, f64_size)
}

/// The sum of `reading_size` over readings (a page), each distinct value
/// sized once (`ValueMemo`): metering a raw day's page sized every value, a
/// seventh of its server time.
pub fn readings_size<'a>(readings: impl IntoIterator<Item = &'a Reading>) -> usize {
    let mut sizes = domain::model::ValueMemo::<u8>::new();
    readings
        .into_iter()
        .map(|r| {
            reading_size_by(r, |v| match sizes.get(v) {
                Some(size) => usize::from(size),
                None => {
                    let size = f64_size(v);
                    // At most 21 bytes (38 digits): a byte holds it.
                    sizes.put(v, size as u8);
                    size
                }
            })
        })
        .sum()
}

fn reading_size_by(r: &Reading, mut value_size: impl FnMut(f64) -> usize) -> usize {
    let mut size = "pk".len() + r.device_id.as_str().len();
    size += "sk".len() + crate::keys::READING_PREFIX.len() + domain::model::Timestamp::TEXT_LEN;
    size += "type".len() + r.kind().as_str().len();
    if let Some(room) = r.room() {
        size += "room".len() + room.as_str().len();
    }
    for (q, v) in r.measurement.values() {
        size += q.name().len() + value_size(*v);
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_sized_by_significant_digits() {
        assert_eq!(number_size("0"), 2);
        assert_eq!(number_size("350"), 2); // "35": 1 byte, + 1
        assert_eq!(number_size("5123.456"), 5); // 7 digits: 4 bytes + 1
        assert_eq!(number_size("-0.001"), 2);
        assert_eq!(read_units(0), 0.5);
        assert_eq!(read_units(4096), 0.5);
        assert_eq!(read_units(4097), 1.0);
    }

    proptest::proptest! {
        /// The integer path sizes every value as its shortest text does.
        #[test]
        fn f64_sizes_equal_the_text_s(m in -999_999_999_999i64..999_999_999_999, bits in proptest::prelude::any::<u64>()) {
            for v in [m as f64 / 1000.0, m as f64 / 100.0, m as f64, f64::from_bits(bits)] {
                if v.is_finite() {
                    proptest::prop_assert_eq!(f64_size(v), number_size(ryu::Buffer::new().format(v)), "{}", v);
                }
            }
        }

        /// Integers are sized from their digits as their text is.
        #[test]
        fn integer_sizes_equal_the_text_s(n in proptest::prelude::any::<u64>(), tens in 0u32..12) {
            for v in [n, n / 10u64.pow(tens) * 10u64.pow(tens), 0] {
                proptest::prop_assert_eq!(integer_size(v), number_size(&v.to_string()), "{}", v);
            }
        }
    }

    /// The field-by-field size of stored rollups is their JSON shape's.
    #[test]
    fn stored_rollups_are_sized_as_their_json_shape() {
        use crate::format::rollup::Stored;
        use domain::aggregate::rollup::spans;
        use domain::model::{DeviceId, Measurement, RoomId, Span, Timestamp};
        let at = |m: i64| Timestamp::from_millis(1_795_219_200_000 + m * 60_000).unwrap();
        let mut readings = Vec::new();
        for m in 0..200i64 {
            let kwh = if m == 90 {
                3.5
            } else {
                100.0 + m as f64 * 0.137
            };
            readings.push(Reading {
                device_id: DeviceId::parse("meter-1").unwrap(),
                timestamp: at(m),
                measurement: Measurement::power(kwh, 0.25 * m as f64, -12.5).unwrap(),
            });
        }
        let mut sensor = Vec::new();
        for m in 0..200i64 {
            let room = if m % 50 < 20 { "den" } else { "lab" };
            sensor.push(Reading {
                device_id: DeviceId::parse("s-1").unwrap(),
                timestamp: at(m),
                measurement: Measurement::climate(
                    RoomId::parse(room).unwrap(),
                    0.1 + m as f64 / 7.0,
                    45.5,
                )
                .unwrap(),
            });
        }
        // A P1 meter's telegram with gas for its first 100 minutes (later
        // hours keep gas's mark), and a water meter.
        let mut volumes = Vec::new();
        for m in 0..200i64 {
            let mut values = vec![(
                domain::model::Quantity::EnergyBought,
                10.0 + m as f64 * 0.01,
            )];
            if m < 100 {
                values.push((domain::model::Quantity::Gas, 4021.117 + m as f64 * 0.003));
            }
            volumes.push(Reading {
                device_id: DeviceId::parse("dsmr").unwrap(),
                timestamp: at(m),
                measurement: Measurement::new(None, values).unwrap(),
            });
        }
        let water: Vec<Reading> = (0..200i64)
            .map(|m| Reading {
                device_id: DeviceId::parse("water-1").unwrap(),
                timestamp: at(m),
                measurement: Measurement::new(
                    None,
                    vec![(domain::model::Quantity::Water, 812.5 + m as f64 * 0.001)],
                )
                .unwrap(),
            })
            .collect();
        let mut checked = 0;
        for set in [&readings, &sensor, &volumes, &water] {
            for span in [Span::Hour, Span::Day] {
                for r in spans(span, Default::default(), set.iter()) {
                    let stored = Stored::from(&r);
                    let by_json = match serde_json::to_value(&stored).unwrap() {
                        serde_json::Value::Object(m) => {
                            m.iter().map(|(k, v)| k.len() + json_size(v)).sum::<usize>()
                        }
                        _ => unreachable!(),
                    };
                    assert_eq!(stored_size(&stored), by_json, "{stored:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 16);
    }

    /// A page sized at once (each distinct value sized once) weighs what
    /// its readings weigh one by one: values repeated or not, whole
    /// thousandths and values that are not (sevenths, 0.1 + 0.2).
    #[test]
    fn a_page_is_sized_as_its_readings_one_by_one() {
        use domain::model::{DeviceId, Measurement, RoomId, Timestamp};
        let room = RoomId::parse("attic").unwrap();
        let page: Vec<Reading> = (0..3000i64)
            .map(|i| Reading {
                device_id: DeviceId::parse(if i % 2 == 0 { "s-1" } else { "meter-22" }).unwrap(),
                timestamp: Timestamp::from_millis(1_795_219_200_000 + i * 60_000).unwrap(),
                measurement: if i % 2 == 0 {
                    Measurement::climate(room.clone(), 20.0 + (i % 37) as f64 / 100.0, 0.1 + 0.2)
                } else {
                    Measurement::power(5_210.125 + i as f64 / 7.0, 812.5, (i % 500) as f64 * 10.0)
                }
                .unwrap(),
            })
            .collect();
        let one_by_one: usize = page.iter().map(reading_size).sum();
        assert_eq!(readings_size(&page), one_by_one);
        assert_eq!(readings_size(&page[..0]), 0);
    }

    #[test]
    fn f64_sizes_at_the_edges() {
        for v in [
            0.0,
            -0.0,
            0.001,
            -0.001,
            350.0,
            5123.456,
            999_999_999.999,
            1e9,
            0.1 + 0.2,
            1e-7,
        ] {
            assert_eq!(
                f64_size(v),
                number_size(ryu::Buffer::new().format(v)),
                "{v}"
            );
        }
    }

    #[test]
    fn json_values_are_sized_as_their_dynamodb_attributes() {
        let v = serde_json::json!({"n": 350, "s": "abc", "l": [1.5, null], "z": null});
        // M: 3 + (1+1+2) + (1+1+3) + (1+1+(3 + (1+2) + (1+1))) + (1+1+1)
        assert_eq!(json_size(&v), 3 + 4 + 5 + 10 + 3);
    }
}
