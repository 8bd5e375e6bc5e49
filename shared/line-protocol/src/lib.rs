//! InfluxDB line protocol, read: a crate of its own that depends on no other
//! crate of ours. Lines are read by `influxdb_line_protocol` (InfluxDB's own
//! parser, which names a bad line), or by `fast`, a strict parser for the
//! plain lines Telegraf and the client libraries send by the thousand. Both
//! answer [`LineView`]; what a line means (readings) is the ingest use
//! case's (`usecases::ingest::line_protocol`, docs/line-protocol.md).

pub mod fast;

use influxdb_line_protocol::{FieldValue, ParsedLine};

/// A field's value, as the mapping needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field<'a> {
    Number(f64),
    Text(&'a str),
    Bool,
}

/// What the mapping reads of a line, from either parser.
pub trait LineView {
    fn measurement(&self) -> &str;
    /// The first tag of that name.
    fn tag(&self, key: &str) -> Option<&str>;
    fn fields(&self) -> impl Iterator<Item = (&str, Field<'_>)>;
    fn timestamp(&self) -> Option<i64>;
    /// The first string field of that name.
    fn text_field(&self, key: &str) -> Option<&str>;
    /// The number of this line's series (measurement and tags) among the
    /// body's distinct series, when the parser numbers them: lines of one
    /// number have the same measurement and tags.
    fn series(&self) -> Option<usize> {
        None
    }
}

impl<T: LineView> LineView for &T {
    fn measurement(&self) -> &str {
        (**self).measurement()
    }
    fn tag(&self, key: &str) -> Option<&str> {
        (**self).tag(key)
    }
    fn fields(&self) -> impl Iterator<Item = (&str, Field<'_>)> {
        (**self).fields()
    }
    fn timestamp(&self) -> Option<i64> {
        (**self).timestamp()
    }
    fn text_field(&self, key: &str) -> Option<&str> {
        (**self).text_field(key)
    }
    fn series(&self) -> Option<usize> {
        (**self).series()
    }
}

impl LineView for ParsedLine<'_> {
    fn measurement(&self) -> &str {
        self.series.measurement.as_str()
    }
    fn tag(&self, key: &str) -> Option<&str> {
        self.tag_value(key).map(|v| v.as_str())
    }
    fn fields(&self) -> impl Iterator<Item = (&str, Field<'_>)> {
        self.field_set.iter().map(|(k, v)| {
            let v = match v {
                FieldValue::F64(v) => Field::Number(*v),
                FieldValue::I64(v) => Field::Number(*v as f64),
                FieldValue::U64(v) => Field::Number(*v as f64),
                FieldValue::String(s) => Field::Text(s.as_str()),
                FieldValue::Boolean(_) => Field::Bool,
            };
            (k.as_str(), v)
        })
    }
    fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }
    fn text_field(&self, key: &str) -> Option<&str> {
        match self.field_value(key) {
            Some(FieldValue::String(s)) => Some(s.as_str()),
            _ => None,
        }
    }
}

/// Every line of `body` with its 1-based number, blank lines and comments left out.
pub fn numbered_lines(body: &str) -> impl Iterator<Item = (usize, Result<ParsedLine<'_>, String>)> {
    influxdb_line_protocol::split_lines(body)
        .enumerate()
        .filter_map(|(i, text)| {
            // Spaces, tabs and `\r` only: Unicode whitespace (a no-break
            // space) is data to the crate's grammar, as to InfluxDB's.
            let trimmed = text.trim_matches([' ', '\t', '\r']);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                return None;
            }
            influxdb_line_protocol::parse_lines(trimmed)
                .next()
                .map(|parsed| (i + 1, parsed.map_err(|e| e.to_string())))
        })
}
