//! Read units, as DynamoDB charges them (docs/cost.md): the range, stats and
//! search answers report what they consumed. DynamoDB says it in each
//! response (`ReturnConsumedCapacity`); the embedded store computes the same
//! from the size its items would have on DynamoDB.
//!
//! A request's reads add to a counter scoped to the request's task
//! (`metered`), so that the store methods keep their signatures and reads
//! outside a metered request cost nothing to count.

use crate::model::Reading;
use aws_sdk_dynamodb::types::AttributeValue;
use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static READ_UNITS: Cell<f64>;
}

/// Runs `f` and returns what it returned with the read units its reads consumed.
pub async fn metered<F: Future>(f: F) -> (F::Output, f64) {
    READ_UNITS
        .scope(Cell::new(0.0), async {
            let out = f.await;
            (out, READ_UNITS.with(Cell::get))
        })
        .await
}

/// Whether this runs inside a metered request (computing units is wasted otherwise).
pub fn metering() -> bool {
    READ_UNITS.try_with(|_| ()).is_ok()
}

/// Counts `units` against the metered request this runs in, if any.
pub fn add_read_units(units: f64) {
    let _ = READ_UNITS.try_with(|c| c.set(c.get() + units));
}

/// Read units of one eventually consistent request that read `bytes` of
/// items: 0.5 per 4 KB, rounded up, at least 0.5.
pub fn read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64 * 0.5
}

/// The size DynamoDB gives a number: 1 byte per two significant digits, plus 1.
fn number_size(text: &str) -> usize {
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

/// DynamoDB's size of an attribute value.
pub fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::L(items) => 3 + items.iter().map(|i| 1 + value_size(i)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// DynamoDB's size of an item: its attribute names and values.
pub fn item_size<'a>(item: impl IntoIterator<Item = (&'a String, &'a AttributeValue)>) -> usize {
    item.into_iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

/// The size of a reading's item on DynamoDB with no optional index and no
/// expiry (what the embedded store meters reads by), without building it.
pub fn reading_size(r: &Reading) -> usize {
    let mut buffer = ryu::Buffer::new();
    let mut size = "pk".len() + r.device_id.as_str().len();
    size += "sk".len() + crate::keys::READING_PREFIX.len() + crate::model::Timestamp::TEXT_LEN;
    size += "type".len() + r.kind().as_str().len();
    if let Some(room) = r.room() {
        size += "room".len() + room.as_str().len();
    }
    for (q, v) in r.measurement.values() {
        size += q.name().len() + number_size(buffer.format(*v));
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceId, Measurement, RoomId, Timestamp};
    use crate::store::dynamodb::reading_item;
    use crate::store::Indexes;

    #[test]
    fn a_reading_s_size_is_its_item_s() {
        let none = Indexes {
            box_search: false,
            all_devices: false,
        };
        for (i, m) in [
            Measurement::climate(RoomId::parse("bedroom").unwrap(), 21.37, 45.0).unwrap(),
            Measurement::power(5123.456, 0.0, -120.5).unwrap(),
            Measurement::power(1e-3, 100.0, 350.0).unwrap(),
        ]
        .into_iter()
        .enumerate()
        {
            let r = Reading {
                device_id: DeviceId::parse(&format!("device-{i}")).unwrap(),
                timestamp: Timestamp::from_millis(1_795_219_200_000).unwrap(),
                measurement: m,
            };
            let item = reading_item(&r, None, 11, none);
            assert_eq!(reading_size(&r), item_size(&item), "{r:?}");
        }
    }

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
}
