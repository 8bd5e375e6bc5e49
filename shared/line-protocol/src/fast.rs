//! A strict parser for the plain lines that Telegraf and the client libraries
//! send by the thousand: no escapes, no quoted strings, one space between the
//! parts. It accepts a subset of what `influxdb_line_protocol` accepts and reads
//! it the same way (a property test and the `line_protocol` fuzz target check
//! both); a body it does not accept is read by the crate's parser. It exists for
//! speed: it does not allocate, reads each line once, and does not try every
//! value type in turn as the crate's parser does (docs/BENCHMARKS.md, "Ingest CPU").

use crate::{Field, LineView};

/// More tags or fields than this, and a line is left to the crate's parser.
const MAX_TAGS: usize = 8;
const MAX_FIELDS: usize = 16;

/// Distinct series (measurement and tags) a body's memo keeps; the lines
/// of further series are read in full.
const MAX_SERIES: usize = 64;

/// One plain line, split and checked once.
pub struct PlainLine<'a> {
    measurement: &'a str,
    tags: [(&'a str, &'a str); MAX_TAGS],
    tag_count: usize,
    fields: [(&'a str, Field<'a>); MAX_FIELDS],
    field_count: usize,
    timestamp: Option<i64>,
    /// Which of the body's distinct series texts this line's is (the same
    /// number, the same text), for a caller's memo; `None` past `MAX_SERIES`.
    series: Option<usize>,
}

/// A series text (measurement and tags, up to the first space) already
/// read and checked in this body, with what it was read into.
struct Series<'a> {
    text: &'a str,
    measurement: &'a str,
    tags: [(&'a str, &'a str); MAX_TAGS],
    tag_count: usize,
}

/// The series of a body, in the order first seen. A batch repeats a few
/// series line after line (a device's measurement and tags): a line whose
/// series text was read before takes what it was read into, and is not
/// split and checked again.
#[derive(Default)]
struct SeriesMemo<'a>(Vec<Series<'a>>);

impl<'a> SeriesMemo<'a> {
    /// The number of `text` when it was seen before. The last eight bytes
    /// are compared first: the series of a batch often differ only there
    /// (`device=sensor-2,room=room-2`).
    fn find(&self, text: &str) -> Option<usize> {
        let tail = |t: &str| -> u64 {
            let b = t.as_bytes();
            match b.len().checked_sub(8) {
                Some(at) => u64::from_le_bytes(b[at..].try_into().expect("eight bytes")),
                None => 0,
            }
        };
        let end = tail(text);
        self.0
            .iter()
            .position(|s| s.text.len() == text.len() && tail(s.text) == end && s.text == text)
    }
}

/// Calls `each` with every line of a body, in order, blank lines and
/// comments skipped. `None` when the body has what only the crate's grammar
/// handles, or a line that is not plain: then the crate's parser reads the
/// whole body. Each line is parsed into a value on this stack and lent to
/// `each`, so nothing is allocated or moved per line (an iterator of lines
/// moved each line's arrays through every adapter: a tenth of a batch).
pub fn read_plain<E>(
    body: &str,
    mut each: impl FnMut(&PlainLine<'_>) -> Result<(), E>,
) -> Option<Result<(), E>> {
    // Escapes, quotes (a quoted string may hold a newline), tabs, CR and NUL,
    // looked for with memchr's vector search: a byte loop over the body was a
    // tenth of a batch's CPU.
    let bytes = body.as_bytes();
    if memchr::memchr3(b'\\', b'"', b'\t', bytes).is_some()
        || memchr::memchr2(b'\r', 0, bytes).is_some()
    {
        return None;
    }
    // One line value, read into again for each line: no copy of its arrays.
    let mut line = PlainLine {
        measurement: "",
        tags: [("", ""); MAX_TAGS],
        tag_count: 0,
        fields: [("", Field::Bool); MAX_FIELDS],
        field_count: 0,
        timestamp: None,
        series: None,
    };
    let mut memo = SeriesMemo::default();
    for text in pieces(body, b'\n') {
        let text = text.trim_start_matches(' ');
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        line.read(text, &mut memo)?;
        if let Err(e) = each(&line) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

/// `text` cut at the first `byte` (an ASCII delimiter, so both sides stay
/// UTF-8), found by memchr: a byte loop (`Iterator::position`) was a fifth
/// of the parse, and `str::split_once` with a `char` pattern more.
fn cut(text: &str, byte: u8) -> Option<(&str, &str)> {
    let i = memchr::memchr(byte, text.as_bytes())?;
    Some((&text[..i], &text[i + 1..]))
}

/// The pieces of `text` between `byte`s, as `str::split` gives them.
fn pieces(text: &str, byte: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let r = rest?;
        match cut(r, byte) {
            Some((piece, tail)) => {
                rest = Some(tail);
                Some(piece)
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

impl<'a> PlainLine<'a> {
    /// Reads `text` into this line, in one pass over its bytes; `None` when
    /// it is not plain. (A search per delimiter, even memchr's, was half the
    /// parse: the pieces are a few bytes long.)
    fn read(&mut self, text: &'a str, memo: &mut SeriesMemo<'a>) -> Option<()> {
        let b = text.as_bytes();
        // `key=value` from `i`, ending at a `,` or a space (or, for fields,
        // the end): both non-empty, one `=`. Returns (key, value, end).
        let pair = |i: usize, may_end: bool| -> Option<(&'a str, &'a str, usize)> {
            let eq = scan(b, i, PAIR_END);
            if eq == i || b.get(eq) != Some(&b'=') {
                return None;
            }
            let end = scan(b, eq + 1, PAIR_END);
            let ended = match b.get(end) {
                None => may_end,
                Some(c) => *c != b'=',
            };
            (ended && end > eq + 1).then(|| (&text[i..eq], &text[eq + 1..end], end))
        };
        // The series is all before the first space (a plain line has no
        // escapes): read before, it is taken as it was read.
        let space = scan(b, 0, SPACE);
        let mut i = match memo.find(&text[..space]) {
            Some(k) => {
                let seen = &memo.0[k];
                self.measurement = seen.measurement;
                self.tag_count = seen.tag_count;
                self.tags[..seen.tag_count].copy_from_slice(&seen.tags[..seen.tag_count]);
                self.series = Some(k);
                space
            }
            None => {
                let mut i = scan(b, 0, COMMA | SPACE);
                if i == 0 || i == b.len() {
                    return None; // no measurement, or nothing but one
                }
                self.measurement = &text[..i];
                self.tag_count = 0;
                while b[i] == b',' {
                    let (k, v, end) = pair(i + 1, false)?;
                    *self.tags.get_mut(self.tag_count)? = (k, v);
                    self.tag_count += 1;
                    i = end;
                }
                // b[i] is the first space: every scan above stops at one.
                self.series = (memo.0.len() < MAX_SERIES).then(|| {
                    memo.0.push(Series {
                        text: &text[..i],
                        measurement: self.measurement,
                        tags: self.tags,
                        tag_count: self.tag_count,
                    });
                    memo.0.len() - 1
                });
                i
            }
        };
        // b[i] is the space before the fields.
        self.field_count = 0;
        loop {
            let key = i + 1;
            let eq = scan(b, key, PAIR_END);
            if eq == key || b.get(eq) != Some(&b'=') {
                return None;
            }
            // The commonest value, a decimal, read where it stands, in the
            // same pass that finds its end: the text up to its first byte
            // that is not a digit, a point or a leading minus. When that
            // byte ends the pair, the text is the value `pair` would cut,
            // read as `decimal` (and so `value`) reads it.
            let field = match decimal_at(b, eq + 1) {
                Some((v, end)) if matches!(b.get(end), None | Some(b',' | b' ')) => {
                    Some((&text[key..eq], Field::Number(v), end))
                }
                _ => None,
            };
            let (k, v, end) = match field {
                Some(read) => read,
                None => {
                    let (k, v, end) = pair(key, true)?;
                    (k, value(v)?, end)
                }
            };
            *self.fields.get_mut(self.field_count)? = (k, v);
            self.field_count += 1;
            i = end;
            if b.get(i) != Some(&b',') {
                break;
            }
        }
        self.timestamp = match b.get(i) {
            None => None,
            Some(_) => Some(timestamp(&b[i + 1..])?),
        };
        Some(())
    }
}

/// What `PlainLine::read` stops at, as bits of `STOPS`.
const COMMA: u8 = 1;
const SPACE: u8 = 2;
const EQUALS: u8 = 4;
const PAIR_END: u8 = COMMA | SPACE | EQUALS;

/// Each byte's bits, for a line's last few bytes (fewer than a word).
static STOPS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b',' as usize] = COMMA;
    t[b' ' as usize] = SPACE;
    t[b'=' as usize] = EQUALS;
    t
};

/// The first byte from `i` that has one of the bits `stop` (or the end):
/// eight bytes at a time while eight are left, then byte by byte.
#[inline(always)]
fn scan(b: &[u8], mut i: usize, stop: u8) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let found = stops_in(word, stop);
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if STOPS[c as usize] & stop != 0 {
            break;
        }
        i += 1;
    }
    i
}

/// The high bit of every byte of `word` (little-endian: the first byte is
/// the lowest) that is one of the delimiters of `stop`.
#[inline(always)]
fn stops_in(word: u64, stop: u8) -> u64 {
    const EACH: u64 = 0x0101_0101_0101_0101;
    let mut found = 0;
    for (bit, byte) in [(COMMA, b','), (SPACE, b' '), (EQUALS, b'=')] {
        if stop & bit != 0 {
            found |= zero_bytes(word ^ (EACH * u64::from(byte)));
        }
    }
    found
}

/// The high bit of every zero byte of `x`, exactly: the low seven bits of
/// a byte plus 0x7f set its high bit unless they are all zero, and never
/// carry into the next byte.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The text from `start` up to its first byte that is not a digit, a point
/// or a leading minus, read as a decimal `-?[0-9]+(\.[0-9]+)?` of at most 15
/// digits, with where that text ends; `None` when it is not one. One pass:
/// the digits as an integer `m`, exact in an `f64`, and `k` digits after the
/// point, at most 15. Then `m / 10^k` is one division of two exact values,
/// correctly rounded: the value `str::parse` gives (Clinger's fast path,
/// which it takes too, after a slower scan).
#[inline(always)]
fn decimal_at(b: &[u8], start: usize) -> Option<(f64, usize)> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let negative = b.get(start) == Some(&b'-');
    let first = start + usize::from(negative);
    let (mut i, mut m, mut count) = (first, 0u64, 0usize);
    let mut point: Option<usize> = None;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                count += 1;
                if count > 15 {
                    return None;
                }
            }
            // One point, neither first nor last (checked after the loop).
            b'.' if point.is_none() && i > first => point = Some(i),
            b'.' => return None,
            _ => break,
        }
        i += 1;
    }
    if count == 0 || point == Some(i - 1) {
        return None;
    }
    let v = m as f64 / POW10[point.map_or(0, |p| i - p - 1)];
    Some((if negative { -v } else { v }, i))
}

/// The value of eight ASCII digits (the first the most significant), or
/// `None` if a byte is not one: Lemire's SWAR reading (simdjson,
/// fast_float), three multiplications for eight digits.
#[inline(always)]
fn eight_digits(chunk: [u8; 8]) -> Option<u64> {
    let v = u64::from_le_bytes(chunk);
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    // '0'..='9' is 0x30..=0x39: high nibble 3, and adding 6 keeps it 3.
    if (v & HIGH) | (((v.wrapping_add(0x0606_0606_0606_0606)) & HIGH) >> 4) != 0x3333_3333_3333_3333
    {
        return None;
    }
    let v = v.wrapping_sub(0x3030_3030_3030_3030);
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    Some(
        ((v & MASK)
            .wrapping_mul(MUL1)
            .wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2)))
            >> 32,
    )
}

/// `-?[0-9]+` that fits an `i64`, read in one pass: eight digits at a time
/// while eight are left of at most 19 (a millisecond time is 13, a
/// nanosecond one 19), then one at a time.
fn timestamp(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut m: u64 = 0;
    let mut rest = digits;
    if digits.len() <= 19 {
        while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
            // At most 11 digits before these eight: no overflow.
            m = m * 100_000_000 + eight_digits(*chunk)?;
            rest = tail;
        }
    }
    let before = digits.len() - rest.len();
    for (n, &d) in rest.iter().enumerate() {
        let n = before + n;
        if !d.is_ascii_digit() {
            return None;
        }
        // 19 digits always fit in a u64: only a 20th can overflow.
        m = if n < 19 {
            m * 10 + u64::from(d - b'0')
        } else {
            m.checked_mul(10)?.checked_add(u64::from(d - b'0'))?
        };
    }
    if negative {
        0i64.checked_sub_unsigned(m)
    } else {
        i64::try_from(m).ok()
    }
}

/// `-?[0-9]+` that fits the type (as the crate, which fails on overflow).
fn integer<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_bool(text: &str) -> bool {
    matches!(
        text,
        "t" | "T" | "true" | "True" | "TRUE" | "f" | "F" | "false" | "False" | "FALSE"
    )
}

/// A field value in the crate's grammar, or `None`: `1.5`, `-2`, `1e3`,
/// `1.5E-3` (floats), `3i` (integers), `3u` (unsigned), `t`/`false`/... (booleans).
fn value(text: &str) -> Option<Field<'_>> {
    if let Some(v) = decimal(text.as_bytes()) {
        return Some(Field::Number(v));
    }
    if let Some(int) = text.strip_suffix('i') {
        return integer::<i64>(int).map(|v| Field::Number(v as f64));
    }
    if let Some(uint) = text.strip_suffix('u') {
        return (!uint.starts_with('-'))
            .then(|| integer::<u64>(uint))
            .flatten()
            .map(|v| Field::Number(v as f64));
    }
    if is_bool(text) {
        return Some(Field::Bool);
    }
    if !is_float(text) {
        return None;
    }
    text.parse().ok().map(Field::Number)
}

/// The commonest float, `-?[0-9]+(\.[0-9]+)?` with at most 15 digits in all
/// (`decimal_at` of the whole text). `None` for anything else, which the
/// general path reads.
fn decimal(text: &[u8]) -> Option<f64> {
    decimal_at(text, 0).and_then(|(v, end)| (end == text.len()).then_some(v))
}

/// `-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`
fn is_float(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.bytes().position(|b| b == b'e' || b == b'E') {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match cut(mantissa, b'.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

// Inlined: the ingest use case, in another crate, reads every line
// through these.
impl LineView for PlainLine<'_> {
    #[inline]
    fn measurement(&self) -> &str {
        self.measurement
    }

    #[inline]
    fn series(&self) -> Option<usize> {
        self.series
    }

    #[inline]
    fn tag(&self, key: &str) -> Option<&str> {
        self.tags[..self.tag_count]
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    #[inline]
    fn fields(&self) -> impl Iterator<Item = (&str, Field<'_>)> {
        self.fields[..self.field_count].iter().copied()
    }

    #[inline]
    fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }

    #[inline]
    fn text_field(&self, _key: &str) -> Option<&str> {
        None // a plain line has no quoted strings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxdb_line_protocol::{FieldValue, ParsedLine};
    use proptest::prelude::*;

    proptest! {
        /// Eight bytes at a time finds what a byte at a time finds.
        #[test]
        fn a_scan_by_words_stops_where_one_by_bytes_does(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b','), Just(b' '), Just(b'='), Just(0u8), Just(0x80u8), any::<u8>()],
                0..40,
            ),
            from in 0usize..40,
            stop in 1u8..8,
        ) {
            let from = from.min(bytes.len());
            let by_bytes = (from..bytes.len())
                .find(|&i| STOPS[bytes[i] as usize] & stop != 0)
                .unwrap_or(bytes.len());
            prop_assert_eq!(scan(&bytes, from, stop), by_bytes);
        }
    }

    /// A line as both parsers read it, for comparing them.
    fn reading_of(line: &impl LineView) -> String {
        let tags: Vec<String> = ["device", "host", "room", "a", "b"]
            .iter()
            .map(|k| format!("{k}={:?}", line.tag(k)))
            .collect();
        let fields: Vec<String> = line
            .fields()
            .map(|(k, v)| match v {
                Field::Number(n) => format!("{k}={n:?}"),
                Field::Text(t) => format!("{k}={t:?}"),
                Field::Bool => format!("{k}=bool"),
            })
            .collect();
        format!(
            "{} {tags:?} {fields:?} {:?} {:?}",
            line.measurement(),
            line.timestamp(),
            line.text_field("device_class_str")
        )
    }

    /// Every line as `reading_of` shows it, when all of them are plain.
    fn all_plain(body: &str) -> Option<Vec<String>> {
        let mut out = Vec::new();
        read_plain(body, |line| {
            out.push(reading_of(line));
            Ok::<(), ()>(())
        })?
        .ok()?;
        Some(out)
    }

    fn crate_lines(body: &str) -> Option<Vec<String>> {
        influxdb_line_protocol::parse_lines(body)
            .map(|l| l.ok().map(|l: ParsedLine| reading_of(&l)))
            .collect()
    }

    /// Pieces that make valid lines, nearly valid ones and odd ones.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,3}",
            Just("device".to_string()),
            Just("room".to_string()),
            "-?[0-9]{1,4}(\\.[0-9]{1,3})?([eE][-+]?[0-9]{1,2})?",
            "[0-9]{1,20}[iu]?",
            Just("true".to_string()),
            Just("F".to_string()),
            Just("°C".to_string()),
            prop::sample::select(vec![
                ",", "=", " ", "  ", ".", "-", "e", "\n", "#", "\"", "\\", "\r", "1.", ".5", "+1"
            ])
            .prop_map(str::to_string),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        (
            "[a-z°]{1,4}",
            prop::collection::vec(("[a-z]{1,3}|device|room", "[a-z0-9-]{1,4}"), 0..3),
            prop::collection::vec(
                (
                    "[a-z]{1,3}|value|temperature",
                    "-?[0-9]{1,4}(\\.[0-9]{1,3})?([eE][-+]?[0-9]{1,2})?|[0-9]{1,3}[iu]|t|FALSE",
                ),
                1..4,
            ),
            prop::option::of(-1_000_000_000_000_000_000i64..=i64::MAX),
        )
            .prop_map(|(m, tags, fields, ts)| {
                let mut s = m;
                for (k, v) in tags {
                    s += &format!(",{k}={v}");
                }
                let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                s += &format!(" {}", fields.join(","));
                if let Some(ts) = ts {
                    s += &format!(" {ts}");
                }
                s
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever the plain parser accepts, the crate accepts and reads the same.
        #[test]
        fn plain_lines_read_as_the_crate_reads_them(
            lines in prop::collection::vec(line(), 1..4),
            noise in prop::collection::vec(piece(), 0..12),
            at in any::<prop::sample::Index>(),
        ) {
            let body = lines.join("\n");
            for candidate in [body.clone(), {
                let mut b = body.clone();
                let i = at.index(b.len() + 1);
                if b.is_char_boundary(i) { b.insert_str(i, &noise.concat()); }
                b
            }, noise.concat()] {
                if let Some(ours) = all_plain(&candidate) {
                    prop_assert_eq!(Some(ours), crate_lines(&candidate), "{:?}", candidate);
                }
            }
            // Valid plain lines always take the fast path.
            prop_assert!(all_plain(&body).is_some(), "{:?}", body);
        }
    }

    /// Lines of a few series, repeated in any order: the memo's path.
    fn lines_of_few_series() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(line(), 1..4),
            prop::collection::vec((any::<prop::sample::Index>(), line()), 1..12),
        )
            .prop_map(|(series, lines)| {
                lines
                    .iter()
                    .map(|(pick, line)| {
                        // This line's fields and time after a series' text.
                        let series = series[pick.index(series.len())].split(' ').next().unwrap();
                        let rest = line.split_once(' ').unwrap().1;
                        format!("{series} {rest}")
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Lines whose series was read before are read as the crate reads
        /// them, and lines of one series number share their series.
        #[test]
        fn repeated_series_read_as_the_crate_reads_them(body in lines_of_few_series()) {
            let ours = all_plain(&body);
            prop_assert!(ours.is_some(), "{:?}", body);
            prop_assert_eq!(ours, crate_lines(&body), "{:?}", body);
            let mut seen: Vec<(Option<usize>, String)> = Vec::new();
            read_plain(&body, |line| {
                let series = format!("{} {:?}", line.measurement(), line.tags[..line.tag_count].to_vec());
                seen.push((line.series(), series));
                Ok::<(), ()>(())
            })
            .unwrap()
            .unwrap();
            for a in &seen {
                prop_assert!(a.0.is_some());
                for b in &seen {
                    prop_assert_eq!(a.0 == b.0, a.1 == b.1, "{:?} {:?}", a, b);
                }
            }
        }

        /// Eight digits at a time read what one at a time reads.
        #[test]
        fn timestamps_read_eight_digits_at_a_time_as_one_at_a_time(
            text in "-?[0-9]{1,22}|-?[0-9]{0,12}[^0-9][0-9]{0,8}",
        ) {
            let by_digits = || -> Option<i64> {
                let (negative, digits) = match text.strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, text.as_str()),
                };
                if digits.is_empty() || !digits.bytes().all(|d| d.is_ascii_digit()) {
                    return None;
                }
                let m = digits.bytes().try_fold(0u64, |m, d| {
                    m.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                })?;
                if negative { 0i64.checked_sub_unsigned(m) } else { i64::try_from(m).ok() }
            };
            prop_assert_eq!(timestamp(text.as_bytes()), by_digits(), "{:?}", text);
        }
    }

    #[test]
    fn a_series_memo_holds_the_first_64_series_and_reads_the_rest_in_full() {
        let body: String = (0..70)
            .flat_map(|d| {
                [
                    format!("m,device=d{d} v=1 5"),
                    format!("m,device=d{d} v=2 6"),
                ]
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut seen = Vec::new();
        read_plain(&body, |line| {
            seen.push((line.tag("device").unwrap().to_string(), line.series()));
            Ok::<(), ()>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(seen.len(), 140);
        assert_eq!(seen[0], ("d0".to_string(), Some(0)));
        assert_eq!(seen[1], ("d0".to_string(), Some(0)));
        assert_eq!(seen[127], ("d63".to_string(), Some(63)));
        assert_eq!(seen[128], ("d64".to_string(), None));
        assert_eq!(seen[139], ("d69".to_string(), None));
    }

    proptest! {
        /// A decimal read where it stands ends where the value's text ends
        /// and reads as `str::parse` reads that text, when the text is
        /// `-?[0-9]+(\.[0-9]+)?` of at most 15 digits; otherwise `None`.
        #[test]
        fn a_decimal_read_in_place_reads_as_its_text_does(
            text in prop_oneof![
                "-?[0-9.]{0,20}([,= x-][0-9a-z.,]{0,4})?",
                // Decimals around the 15 digits the fast path reads.
                "-?[0-9]{1,12}(\\.[0-9]{1,8})?([, ][0-9]{0,3})?",
            ],
            from in 0usize..3,
        ) {
            let start = from.min(text.len());
            // The text `decimal_at` reads: a leading minus, then digits and points.
            let rest = &text[start..];
            let unsigned = rest.strip_prefix('-').unwrap_or(rest);
            let span = rest.len() - unsigned.len()
                + unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
            let value = &rest[..span];
            let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            let number = value.strip_prefix('-').unwrap_or(value);
            let shaped = match number.split_once('.') {
                Some((int, frac)) => digits(int) && digits(frac),
                None => digits(number),
            };
            let few = number.bytes().filter(u8::is_ascii_digit).count() <= 15;
            let expected = (shaped && few)
                .then(|| (value.parse::<f64>().unwrap().to_bits(), start + span));
            prop_assert_eq!(
                decimal_at(text.as_bytes(), start).map(|(v, end)| (v.to_bits(), end)),
                expected,
                "{:?}", text
            );
        }
    }

    proptest! {
        /// The one-pass decimal reader gives `str::parse`'s value, bit for
        /// bit, or leaves the text to it (more than 15 digits).
        #[test]
        fn decimals_read_as_str_parse_reads_them(
            int in "-?[0-9]{1,12}",
            frac in prop::option::of("[0-9]{1,10}"),
        ) {
            let text = match frac {
                Some(f) => format!("{int}.{f}"),
                None => int,
            };
            let expected: f64 = text.parse().unwrap();
            let digits = text.bytes().filter(u8::is_ascii_digit).count();
            match decimal(text.as_bytes()) {
                Some(v) => prop_assert_eq!(v.to_bits(), expected.to_bits(), "{}", text),
                None => prop_assert!(digits > 15, "{}", text),
            }
            let Some(Field::Number(v)) = value(&text) else {
                panic!("{text} is a float")
            };
            prop_assert_eq!(v.to_bits(), expected.to_bits(), "{}", text);
        }
    }

    #[test]
    fn what_is_not_plain_is_left_to_the_crate() {
        for body in [
            "m,device=a\\ b v=1",
            "m,device=a s=\"x\"",
            "m v=1 1\r",
            "m v=1  1",
            "m v=1 ",
            "m, v=1",
            "m,a,b=c v=1",
            "m a,b=1",
            "m v=1.",
            "m v=.5",
            "m v=+1",
            "m v=99999999999999999999i",
            "m v=1 99999999999999999999",
            "m v=x",
            "m",
        ] {
            assert!(all_plain(body).is_none(), "{body:?}");
        }
        let many_tags: String = (0..=MAX_TAGS).map(|i| format!(",t{i}=x")).collect();
        let many_fields: Vec<String> = (0..=MAX_FIELDS).map(|i| format!("f{i}=1")).collect();
        assert!(all_plain(&format!("m{many_tags} v=1")).is_none());
        assert!(all_plain(&format!("m {}", many_fields.join(","))).is_none());
        let lines = crate_lines(&format!(
            "m,device=d{many_tags} {} 1795222923000000000",
            many_fields.join(",")
        ));
        assert!(lines.is_some(), "the crate's parser still reads them");
        let FieldValue::F64(_) = influxdb_line_protocol::parse_lines("m v=1e3")
            .next()
            .unwrap()
            .unwrap()
            .field_set[0]
            .1
        else {
            panic!("the crate reads 1e3 as a float, as the plain parser does")
        };
        let mut plain = Vec::new();
        read_plain("# c\n\n  m,device=d v=1e3,w=2i,x=t 5\n", |line| {
            plain.push((line.tag("device").map(str::to_string), line.timestamp()));
            Ok::<(), ()>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(plain, [(Some("d".to_string()), Some(5))]);
    }
}
