//! The size rule DynamoDB bills by (docs/cost.md), written once over our own
//! types: a number weighs one byte per two significant digits plus one, a
//! string its bytes, an item its attribute names and values; a read costs
//! 0.5 units per 4 KB. The embedded store meters its reads by it, so both
//! engines report the same `read_units`; the DynamoDB adapter sizes its SDK
//! items with the same number rule (`store::dynamodb::size`).

use crate::model::Reading;

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
pub fn rollup_size(
    device_id_len: usize,
    stored: &crate::domain::aggregate::rollup::Stored,
) -> usize {
    let body = match serde_json::to_value(stored) {
        Ok(serde_json::Value::Object(m)) => {
            m.iter().map(|(k, v)| k.len() + json_size(v)).sum::<usize>()
        }
        _ => 0,
    };
    body + "pk".len() + device_id_len + "sk".len() + 3 + crate::model::Timestamp::TEXT_LEN
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

    #[test]
    fn json_values_are_sized_as_their_dynamodb_attributes() {
        let v = serde_json::json!({"n": 350, "s": "abc", "l": [1.5, null], "z": null});
        // M: 3 + (1+1+2) + (1+1+3) + (1+1+(3 + (1+2) + (1+1))) + (1+1+1)
        assert_eq!(json_size(&v), 3 + 4 + 5 + 10 + 3);
    }
}
