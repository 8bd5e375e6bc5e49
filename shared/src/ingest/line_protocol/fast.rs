//! A strict parser for the plain lines that Telegraf and the client libraries
//! send by the thousand: no escapes, no quoted strings, one space between the
//! parts. It accepts a subset of what `influxdb_line_protocol` accepts and reads
//! it the same way (a property test and the `line_protocol` fuzz target check
//! both); a body it does not accept is read by the crate's parser. It exists for
//! speed: it does not allocate, reads each line once, and does not try every
//! value type in turn as the crate's parser does (docs/BENCHMARKS.md, "Ingest CPU").

use super::{Field, LineView};

/// More tags or fields than this, and a line is left to the crate's parser.
const MAX_TAGS: usize = 8;
const MAX_FIELDS: usize = 16;

/// One plain line, split and checked once.
pub struct PlainLine<'a> {
    measurement: &'a str,
    tags: [(&'a str, &'a str); MAX_TAGS],
    tag_count: usize,
    fields: [(&'a str, Field<'a>); MAX_FIELDS],
    field_count: usize,
    timestamp: Option<i64>,
}

/// The lines of a body, or `None` when the body has what only the crate's
/// grammar handles. A line that is not plain yields `Err`: then the crate's
/// parser reads the whole body. Blank lines and comments are skipped.
pub fn plain_lines(body: &str) -> Option<impl Iterator<Item = Result<PlainLine<'_>, String>>> {
    // Escapes, quotes (a quoted string may hold a newline), tabs, CR and NUL,
    // looked for with memchr's vector search: a byte loop over the body was a
    // tenth of a batch's CPU.
    let bytes = body.as_bytes();
    if memchr::memchr3(b'\\', b'"', b'\t', bytes).is_some()
        || memchr::memchr2(b'\r', 0, bytes).is_some()
    {
        return None;
    }
    Some(body.split('\n').filter_map(|text| {
        let text = text.trim_start_matches(' ');
        if text.is_empty() || text.starts_with('#') {
            return None;
        }
        Some(PlainLine::parse(text).ok_or_else(|| "not a plain line".to_string()))
    }))
}

/// `text` cut at the first `byte` (an ASCII delimiter, so both sides stay
/// UTF-8): a byte scan, where `str::split_once` with a `char` pattern was a
/// fifth of a batch's parse (docs/BENCHMARKS.md).
fn cut(text: &str, byte: u8) -> Option<(&str, &str)> {
    let i = text.bytes().position(|b| b == byte)?;
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
    fn parse(text: &'a str) -> Option<Self> {
        let (series, rest) = cut(text, b' ')?;
        let (measurement, tag_text) = match cut(series, b',') {
            Some((m, tags)) => (m, Some(tags)),
            None => (series, None),
        };
        if measurement.is_empty() {
            return None;
        }
        let mut tags = [("", ""); MAX_TAGS];
        let mut tag_count = 0;
        if let Some(tag_text) = tag_text {
            for tag in pieces(tag_text, b',') {
                *tags.get_mut(tag_count)? = pair(tag)?;
                tag_count += 1;
            }
        }
        let (field_text, timestamp) = match cut(rest, b' ') {
            Some((fields, ts)) => (fields, Some(integer::<i64>(ts)?)),
            None => (rest, None),
        };
        let mut fields = [("", Field::Bool); MAX_FIELDS];
        let mut field_count = 0;
        for field in pieces(field_text, b',') {
            let (k, v) = pair(field)?;
            *fields.get_mut(field_count)? = (k, value(v)?);
            field_count += 1;
        }
        Some(PlainLine {
            measurement,
            tags,
            tag_count,
            fields,
            field_count,
            timestamp,
        })
    }
}

/// `key=value`, both non-empty, with one `=`.
fn pair(text: &str) -> Option<(&str, &str)> {
    let (k, v) = cut(text, b'=')?;
    (!k.is_empty() && !v.is_empty() && !v.bytes().any(|b| b == b'=')).then_some((k, v))
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

impl LineView for PlainLine<'_> {
    fn measurement(&self) -> &str {
        self.measurement
    }

    fn tag(&self, key: &str) -> Option<&str> {
        self.tags[..self.tag_count]
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    fn fields(&self) -> impl Iterator<Item = (&str, Field<'_>)> {
        self.fields[..self.field_count].iter().copied()
    }

    fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }

    fn text_field(&self, _key: &str) -> Option<&str> {
        None // a plain line has no quoted strings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxdb_line_protocol::{FieldValue, ParsedLine};
    use proptest::prelude::*;

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

    /// Every line, when all of them are plain.
    fn all_plain(body: &str) -> Option<Vec<PlainLine<'_>>> {
        plain_lines(body)?.collect::<Result<_, _>>().ok()
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
                if let Some(plain) = all_plain(&candidate) {
                    let ours: Vec<String> = plain.iter().map(reading_of).collect();
                    prop_assert_eq!(Some(ours), crate_lines(&candidate), "{:?}", candidate);
                }
            }
            // Valid plain lines always take the fast path.
            prop_assert!(all_plain(&body).is_some(), "{:?}", body);
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
        let plain = all_plain("# c\n\n  m,device=d v=1e3,w=2i,x=t 5\n").unwrap();
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].tag("device"), Some("d"));
        assert_eq!(plain[0].timestamp(), Some(5));
    }
}
