//! A strict reader for the plain JSON bodies that devices and scripts send by
//! the thousand: an array of flat reading objects (or one), whose values are
//! numbers, strings without escapes, `true`, `false` or `null`. It reads them
//! as serde_json reads them into `RawReading` (a property test checks both),
//! and a body it does not accept (escapes, nesting, anything else, and every
//! syntax error) is left to serde_json, which names where it fails. It exists
//! for speed: serde_json's visitor, a vector of fields per object and its
//! number parser were two thirds of JSON ingest (docs/BENCHMARKS.md, "JSON
//! ingest").

use super::{RawReading, RawValue};
use std::borrow::Cow;

/// Calls `each` with the index and fields of every reading object of
/// `body`, in order, and gives how many there were; `None` when the body is
/// not plain, or holds more than `most` objects (then serde_json reads it:
/// a syntax error anywhere must win over the count). The fields are one
/// vector, read into again for each object.
pub fn read_plain<'a>(
    body: &'a [u8],
    most: usize,
    mut each: impl FnMut(usize, &RawReading<'a>),
) -> Option<usize> {
    let text = std::str::from_utf8(body).ok()?;
    let mut r = Reader { text, at: 0 };
    let mut reading = RawReading::Object(Vec::with_capacity(8));
    let mut count = 0;
    r.skip_space();
    match r.peek()? {
        b'{' => {
            let RawReading::Object(fields) = &mut reading else {
                unreachable!("an object")
            };
            r.object(fields)?;
            each(0, &reading);
            count = 1;
        }
        b'[' => {
            r.at += 1;
            r.skip_space();
            if r.peek()? == b']' {
                r.at += 1;
            } else {
                loop {
                    if count == most {
                        return None;
                    }
                    r.skip_space();
                    let RawReading::Object(fields) = &mut reading else {
                        unreachable!("an object")
                    };
                    fields.clear();
                    r.object(fields)?;
                    each(count, &reading);
                    count += 1;
                    r.skip_space();
                    match r.next()? {
                        b',' => continue,
                        b']' => break,
                        _ => return None,
                    }
                }
            }
        }
        _ => return None,
    }
    r.skip_space();
    (r.at == text.len()).then_some(count)
}

/// Where the first `"`, `\` or control character of `bytes` is, eight
/// bytes at a time (a word's bytes tested at once, as memchr does for one
/// byte): keys and ids are a few bytes long, where memchr's set-up and a
/// byte loop were each a tenth of JSON ingest.
fn string_end(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let splat = |b: u8| u64::from_ne_bytes([b; 8]);
    // The high bit of each byte that is zero (or, after a byte that is, any
    // byte: only the first flagged byte is read).
    let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // Bytes under 0x20: `w - 0x20` borrows into their high bit (bytes
        // from 0x80 have it set in `w`, so `!w` clears them).
        let found = zeros(w ^ splat(b'"'))
            | zeros(w ^ splat(b'\\'))
            | (w.wrapping_sub(splat(0x20)) & !w & HIGH);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

/// 10^0 to 10^22: the powers of ten an `f64` holds exactly.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A position in a body's text.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// JSON's whitespace: space, tab, newline, carriage return.
    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// `{` onwards: the object's fields into `fields` (a repeated key keeps
    /// its first place and its last value, as `raw_reading::object` does).
    fn object(&mut self, fields: &mut Vec<(Cow<'a, str>, RawValue<'a>)>) -> Option<()> {
        if self.next()? != b'{' {
            return None;
        }
        self.skip_space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_space();
            let key = self.string()?;
            self.skip_space();
            if self.next()? != b':' {
                return None;
            }
            self.skip_space();
            let value = self.value()?;
            match fields.iter_mut().find(|(seen, _)| seen == key) {
                Some((_, earlier)) => *earlier = value,
                None => fields.push((Cow::Borrowed(key), value)),
            }
            self.skip_space();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// A scalar: nested arrays and objects are not plain.
    fn value(&mut self) -> Option<RawValue<'a>> {
        Some(match self.peek()? {
            b'"' => RawValue::Str(Cow::Borrowed(self.string()?)),
            b'-' | b'0'..=b'9' => RawValue::Number(self.number()?),
            b't' => self.word("true", RawValue::Bool)?,
            b'f' => self.word("false", RawValue::Bool)?,
            b'n' => self.word("null", RawValue::Null)?,
            _ => return None,
        })
    }

    fn word(&mut self, word: &str, value: RawValue<'a>) -> Option<RawValue<'a>> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    /// `"` onwards: a string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        if self.next()? != b'"' {
            return None;
        }
        let rest = &self.text.as_bytes()[self.at..];
        let end = string_end(rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let s = &self.text[self.at..self.at + end];
        self.at += end + 1;
        Some(s)
    }

    /// JSON's number grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`,
    /// as the nearest `f64`: what serde_json (with `float_roundtrip`) gives for
    /// every such text, integers included (`-0` is -0.0). A number too large
    /// for an `f64` is serde_json's error to name.
    fn number(&mut self) -> Option<f64> {
        let b = self.text.as_bytes();
        let start = self.at;
        let mut i = start;
        // The digits as one integer while they fit (`significand`, `scale`
        // of them after the point), for the exact case below.
        let mut significand: u64 = 0;
        let mut counted = 0u32;
        let mut digits = |i: &mut usize, after_point: bool, scale: &mut i32| {
            let from = *i;
            while let Some(d) = b.get(*i).filter(|d| d.is_ascii_digit()) {
                if counted < 19 {
                    significand = significand * 10 + u64::from(d - b'0');
                    counted += u32::from(significand != 0);
                    *scale += i32::from(after_point);
                } else {
                    counted = u32::MAX;
                }
                *i += 1;
            }
            *i > from
        };
        let mut scale = 0i32;
        let negative = b.get(i) == Some(&b'-');
        i += usize::from(negative);
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                digits(&mut i, false, &mut scale);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i, true, &mut scale) {
                return None;
            }
        }
        let mut exponent = false;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            exponent = true;
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !b.get(i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        self.at = i;
        // Clinger's fast path: a significand of at most 2^53 and a power of
        // ten of at most 10^22 are both exact in an `f64`, so one division
        // rounds once, as the full parser would. Else the full parser.
        if !exponent && counted != u32::MAX && significand < 1 << 53 && scale <= 22 {
            let v = significand as f64 / POWERS_OF_TEN[scale as usize];
            return Some(if negative { -v } else { v });
        }
        let v: f64 = self.text[start..i].parse().ok()?;
        v.is_finite().then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RawBody;
    use proptest::prelude::*;

    /// What serde_json reads, as the readings `read_plain` would give.
    fn by_serde(body: &str) -> Option<Vec<RawReading<'_>>> {
        match serde_json::from_str::<RawBody>(body).ok()? {
            RawBody::One(r) => Some(vec![r]),
            RawBody::Many(rs) => Some(rs),
            RawBody::Neither => None,
        }
    }

    fn plain(body: &str, most: usize) -> Option<Vec<RawReading<'static>>> {
        let mut got = Vec::new();
        let n = read_plain(body.as_bytes(), most, |i, r| {
            assert_eq!(i, got.len());
            got.push(owned(r));
        })?;
        assert_eq!(n, got.len());
        Some(got)
    }

    fn owned(r: &RawReading<'_>) -> RawReading<'static> {
        let own = |v: &RawValue<'_>| match v {
            RawValue::Str(s) => RawValue::Str(Cow::Owned(s.to_string())),
            RawValue::Null => RawValue::Null,
            RawValue::Bool => RawValue::Bool,
            RawValue::Number(n) => RawValue::Number(*n),
            RawValue::Array => RawValue::Array,
            RawValue::Object => RawValue::Object,
        };
        match r {
            RawReading::Object(fs) => RawReading::Object(
                fs.iter()
                    .map(|(k, v)| (Cow::Owned(k.to_string()), own(v)))
                    .collect(),
            ),
            RawReading::NotObject(w) => RawReading::NotObject(w),
        }
    }

    /// Bit for bit: `PartialEq` of `f64` would take -0.0 for 0.0.
    fn same(a: &[RawReading<'_>], b: &[RawReading<'_>]) -> bool {
        format!("{a:?}") == format!("{b:?}")
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (RawReading::Object(x), RawReading::Object(y)) => {
                    x.iter().zip(y).all(|((_, v), (_, w))| match (v, w) {
                        (RawValue::Number(v), RawValue::Number(w)) => v.to_bits() == w.to_bits(),
                        _ => true,
                    })
                }
                _ => true,
            })
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for n in [
            "0",
            "-0",
            "-0.0",
            "21.5",
            "1e-400",
            "-1e-400",
            "1E+2",
            "0.1e1",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "43.019999999999996",
            "1700000000000",
            "2.2250738585072011e-308",
            "9007199254740993",
            "9007199254740992.5",
            "0.000000000000000000000001",
            "1234567890123456789",
            "12345678901234567890",
            "0.1",
            "-123.456",
            "4503599627370497.5",
        ] {
            let body = format!(r#"[{{"x":{n}}}]"#);
            let plain = plain(&body, 1000).unwrap_or_else(|| panic!("{n} is plain"));
            assert!(same(&plain, &by_serde(&body).unwrap()), "{n}: {plain:?}");
        }
        // serde_json's errors, not ours to word: the body is left to it.
        for n in [
            "1e400", "01", "1.", ".5", "+1", "-", "1e", "0x10", "NaN", "Infinity",
        ] {
            assert_eq!(plain(&format!(r#"[{{"x":{n}}}]"#), 1000), None, "{n}");
        }
    }

    #[test]
    fn a_string_ends_at_its_first_quote_backslash_or_control_character() {
        let first = |bytes: &[u8]| {
            bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        };
        for text in [
            "\"",
            "a\"",
            "device_id\"",
            "sensor-22\",",
            "äöü-éé\"",
            "1234567\"",
            "12345678\"",
            "123456789abcdef\"",
            "abc\\\"",
            "abcdefghij\\",
            "abcdefghij\u{1f}\"",
            "ab\u{7f}\u{80}\"",
            " !#[]\u{ff}xyz\"",
            "no end at all",
        ] {
            assert_eq!(
                string_end(text.as_bytes()),
                first(text.as_bytes()),
                "{text:?}"
            );
        }
        // Every byte value at every place of two words, after any other.
        for at in 0..16 {
            for b in 0..=255u8 {
                for before in [b'a', 0x7f, 0x80, 0xff, 0x21] {
                    let mut bytes = vec![before; 18];
                    bytes[at] = b;
                    assert_eq!(
                        string_end(&bytes),
                        first(&bytes),
                        "{b} at {at} after {before}"
                    );
                }
            }
        }
    }

    #[test]
    fn what_is_not_plain_is_left_to_serde_json() {
        for body in [
            "",
            "  ",
            "3",
            "\"s\"",
            "null",
            "[1]",
            "[[]]",
            r#"[{"a":[1]}]"#,
            r#"[{"a":{}}]"#,
            r#"[{"a":"\u0041"}]"#,
            r#"[{"a\"":1}]"#,
            "[{\"a\":\"x\ty\"}]",
            r#"[{"a":1},]"#,
            r#"[{"a":1,}]"#,
            r#"[{"a":1}"#,
            r#"[{"a":1}] x"#,
            r#"[{"a" 1}]"#,
            r#"[{"a":tru}]"#,
            r#"{"a":1}{"b":2}"#,
        ] {
            assert_eq!(plain(body, 1000), None, "{body:?}");
        }
        // More objects than asked for: serde_json reads it, and the count is
        // the caller's error once the syntax is known to be right.
        assert_eq!(plain(r#"[{"a":1},{"a":2}]"#, 1), None);
        assert_eq!(plain(r#"[{"a":1}]"#, 1).map(|r| r.len()), Some(1));
    }

    #[test]
    fn one_object_an_empty_array_whitespace_and_repeated_keys() {
        let body =
            " \n{ \"b\" : 1 ,\r\n\t\"a\":\"x\", \"b\":2, \"c\":null, \"d\":true, \"e\":false } \n";
        let got = plain(body, 1000).unwrap();
        assert!(same(&got, &by_serde(body).unwrap()), "{got:?}");
        assert_eq!(plain("[ ]", 1000), Some(vec![]));
        assert_eq!(plain("[{}]", 1000), Some(vec![RawReading::Object(vec![])]));
        let utf8 = r#"[{"device_id":"zähler","room":"küche"}]"#;
        assert!(same(&plain(utf8, 1000).unwrap(), &by_serde(utf8).unwrap()));
        assert_eq!(read_plain(b"[{\"a\":\"\xff\"}]", 1000, |_, _| {}), None);
    }

    /// A flat value as a body might hold it, with the texts that could trip a
    /// reader: signs, exponents, zeros, escapes, multi-byte characters.
    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<f64>().prop_map(|x| serde_json::to_string(&x).unwrap()),
            any::<i64>().prop_map(|x| x.to_string()),
            any::<u64>().prop_map(|x| x.to_string()),
            "-?(0|[1-9][0-9]{0,22})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?",
            // Around the exact case's edges: 2^53, nineteen digits, 10^22.
            (0u64..1 << 54, 0usize..25, any::<bool>()).prop_map(|(m, point, minus)| {
                let digits = format!("{m:0>width$}", width = point + 1);
                let (int, frac) = digits.split_at(digits.len() - point);
                let sign = if minus { "-" } else { "" };
                if frac.is_empty() {
                    format!("{sign}{int}")
                } else {
                    format!("{sign}{int}.{frac}")
                }
            }),
            "\"[a-zé_ -]{0,6}\"",
            Just("\"a\\\"b\"".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("null".to_owned()),
            Just("[1,2]".to_owned()),
            Just("{\"x\":1}".to_owned()),
        ]
    }

    fn object() -> impl Strategy<Value = String> {
        prop::collection::vec(("[a-d]{1,2}", scalar(), "[ \n]{0,2}"), 0..6).prop_map(|fields| {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v, space)| format!("{space}\"{k}\"{space}:{space}{v}{space}"))
                .collect();
            format!("{{{}}}", inner.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A body the reader accepts reads as serde_json reads it, number
        /// for number, bit for bit; a body it does not accept is one serde_json
        /// rejects or one that is not plain.
        #[test]
        fn a_plain_body_reads_as_serde_json_reads_it(
            objects in prop::collection::vec(object(), 0..4),
            one in any::<bool>(),
        ) {
            let body = if one && objects.len() == 1 {
                objects[0].clone()
            } else {
                format!("[{}]", objects.join(","))
            };
            match plain(&body, 1000) {
                Some(got) => {
                    let want = by_serde(&body);
                    prop_assert!(want.is_some(), "serde_json rejects {body}");
                    prop_assert!(same(&got, &want.unwrap()), "{body}");
                }
                None => prop_assert!(
                    body.contains('\\') || body.contains("[1,2]") || body.contains("{\"x\"")
                        || by_serde(&body).is_none(),
                    "plain, yet refused: {body}"
                ),
            }
        }
    }
}
