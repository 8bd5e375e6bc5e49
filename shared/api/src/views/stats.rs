//! The stats answer: buckets of count, min, max and mean per field, as
//! objects or as rows, written straight to bytes.

use super::columns::number;
use domain::aggregate::field_name::FieldName;
use domain::aggregate::BucketStats;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};
use usecases::query::Aggregate;
use usecases::query::StatsQuery;

/// What every aggregate answer says about itself.
pub(super) fn header(owner: (&str, &str), q: &StatsQuery) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(owner.0.into(), json!(owner.1));
    m.insert("from".into(), json!(q.range.from().to_string()));
    m.insert("to".into(), json!(q.range.to().to_string()));
    m.insert("bucket".into(), json!(q.bucketing.width().as_str()));
    m.insert("tz".into(), json!(q.bucketing.tz_name()));
    m.insert("empty_buckets".into(), json!("omitted"));
    m
}

/// What every aggregate answer says it was computed from.
pub(super) fn cost<B>(m: &mut Map<String, Value>, a: &Aggregate<B>) {
    m.insert("source".into(), json!(a.source.as_str()));
    m.insert("items_read".into(), json!(a.items_read));
}

/// `{"device_id"|"room_id", from, to, bucket, tz, "empty_buckets": "omitted",
/// "source", "items_read", "buckets": [...]}`, serialised straight into the
/// body: a year of daily buckets is 84 KB, and building it as a JSON tree
/// first took half of the answer's time (docs/BENCHMARKS.md). Keys come in
/// sorted order, as the tree wrote them.
///
/// With `columns` (`format=columns`), `buckets` gives way to InfluxDB's
/// shape: `columns` (`start` and `end` in epoch milliseconds, `count`, then
/// `<field>_count`, `_min`, `_max`, `_mean` for each field of any bucket, in
/// name order) and `values`, one array per bucket, `null` where a bucket has
/// no value of a field: half the bytes for a client to parse.
pub fn stats<'a>(
    owner: (&'a str, &'a str),
    q: &'a StatsQuery,
    a: &'a Aggregate<BucketStats>,
    columns: bool,
) -> StatsAnswer<'a> {
    StatsAnswer {
        owner,
        q,
        a,
        columns,
    }
}

pub struct StatsAnswer<'a> {
    owner: (&'a str, &'a str),
    q: &'a StatsQuery,
    a: &'a Aggregate<BucketStats>,
    columns: bool,
}

/// The stats of a field, in the order of the columns after its name.
pub(super) const FIELD_STATS: [&str; 4] = ["count", "min", "max", "mean"];

/// One value of an answer's top level.
pub(super) enum Entry<'a> {
    Text(String),
    Str(&'a str),
    Count(usize),
    Buckets(&'a [BucketStats]),
    Names(Vec<String>),
    /// Buckets as rows, with the fields their columns name.
    Rows(&'a [BucketStats], Vec<FieldName>),
}

/// A bucket as one row of `Entry::Rows`.
pub(super) struct BucketRow<'a>(&'a BucketStats, &'a [FieldName]);

impl Serialize for BucketRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (b, fields) = (self.0, self.1);
        let mut seq = s.serialize_seq(Some(3 + 4 * fields.len()))?;
        seq.serialize_element(&b.start.millis())?;
        seq.serialize_element(&b.end.millis())?;
        seq.serialize_element(&b.count)?;
        for name in fields {
            match b.fields.get(name) {
                Some(f) => {
                    seq.serialize_element(&f.count)?;
                    seq.serialize_element(&f.min)?;
                    seq.serialize_element(&f.max)?;
                    seq.serialize_element(&rounded_mean(f))?;
                }
                None => {
                    for _ in FIELD_STATS {
                        seq.serialize_element(&None::<f64>)?;
                    }
                }
            }
        }
        seq.end()
    }
}

/// Means are rounded to 6 decimals so float noise does not show.
pub(super) fn rounded_mean(f: &domain::aggregate::FieldStats) -> f64 {
    (f.mean() * 1e6).round() / 1e6
}

/// `rounded_mean` as `number` writes it, from its whole millionths: of
/// 0.001 up to 10^9, the shortest text that reads back as the rounded
/// mean is those digits (two such texts are at least 10^-6 apart, where
/// floats there are at most 1.2 * 10^-7 apart). Written through the float
/// formatter, means were a tenth of a year of daily stats' instructions.
/// (Its digits are its own, not `number`'s thousandths': one writer of both,
/// generic in the places, cost 2.8 % of a year of daily stats more.)
pub(super) fn mean(out: &mut Vec<u8>, f: &domain::aggregate::FieldStats) {
    let millionths = (f.mean() * 1e6).round();
    if !(1e3..1e15).contains(&millionths.abs()) {
        return number(out, millionths / 1e6);
    }
    let m = millionths as i64;
    if m < 0 {
        out.push(b'-');
    }
    let (whole, frac) = (m.unsigned_abs() / 1_000_000, m.unsigned_abs() % 1_000_000);
    out.extend_from_slice(itoa::Buffer::new().format(whole).as_bytes());
    out.push(b'.');
    if frac == 0 {
        return out.push(b'0');
    }
    let digits = [
        frac / 100_000,
        frac / 10_000 % 10,
        frac / 1_000 % 10,
        frac / 100 % 10,
        frac / 10 % 10,
        frac % 10,
    ];
    let mut kept = 6;
    while digits[kept - 1] == 0 {
        kept -= 1;
    }
    out.extend(digits[..kept].iter().map(|d| b'0' + *d as u8));
}

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Entry::Text(t) => s.serialize_str(t),
            Entry::Str(t) => s.serialize_str(t),
            Entry::Count(n) => s.serialize_u64(*n as u64),
            Entry::Buckets(b) => {
                let mut seq = s.serialize_seq(Some(b.len()))?;
                for bucket in b.iter() {
                    seq.serialize_element(&BucketAnswer(bucket))?;
                }
                seq.end()
            }
            Entry::Names(names) => names.serialize(s),
            Entry::Rows(b, fields) => {
                let mut seq = s.serialize_seq(Some(b.len()))?;
                for bucket in b.iter() {
                    seq.serialize_element(&BucketRow(bucket, fields))?;
                }
                seq.end()
            }
        }
    }
}

impl StatsAnswer<'_> {
    /// The answer with its read units, as JSON: the bytes `serde_json`
    /// writes for it (a test holds them equal), with the buckets or a
    /// columns answer's rows written by hand (counts are integers, and
    /// minima and maxima nearly always whole thousandths, written from their
    /// integer). Sized for about 230 bytes a bucket of two quantities, so a
    /// year is not grown and copied.
    pub fn to_json_with_read_units(&self, read_units: f64) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024 + self.a.buckets.len() * 256);
        out.push(b'{');
        for (i, (key, entry)) in self.entries().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            crate::json::to_writer(&mut out, key).expect("a key serialises");
            out.push(b':');
            match entry {
                Entry::Rows(buckets, fields) => bucket_rows(&mut out, buckets, fields),
                Entry::Buckets(buckets) => bucket_objects(&mut out, buckets),
                other => crate::json::to_writer(&mut out, other).expect("an entry serialises"),
            }
        }
        out.extend_from_slice(b",\"read_units\":");
        number(&mut out, read_units);
        out.push(b'}');
        out
    }

    /// The top level's entries, in key order.
    pub(super) fn entries(&self) -> Vec<(&str, Entry<'_>)> {
        let (q, a) = (self.q, self.a);
        let mut entries = vec![
            (self.owner.0, Entry::Str(self.owner.1)),
            ("from", Entry::Text(q.range.from().to_string())),
            ("to", Entry::Text(q.range.to().to_string())),
            ("bucket", Entry::Str(q.bucketing.width().as_str())),
            ("tz", Entry::Str(q.bucketing.tz_name())),
            ("empty_buckets", Entry::Str("omitted")),
            ("source", Entry::Str(a.source.as_str())),
            ("items_read", Entry::Count(a.items_read)),
        ];
        if self.columns {
            // The few names of many buckets: gathered in a list, not sorted
            // in a set (a year of two fields sorted 730 names).
            let mut fields: Vec<FieldName> = Vec::new();
            for b in &a.buckets {
                for name in b.fields.keys() {
                    if !fields.contains(name) {
                        fields.push(*name);
                    }
                }
            }
            fields.sort_unstable();
            let names = ["start", "end", "count"]
                .into_iter()
                .map(str::to_owned)
                .chain(
                    fields
                        .iter()
                        .flat_map(|f| FIELD_STATS.iter().map(move |s| format!("{f}_{s}"))),
                )
                .collect();
            entries.push(("columns", Entry::Names(names)));
            entries.push(("values", Entry::Rows(&a.buckets, fields)));
        } else {
            entries.push(("buckets", Entry::Buckets(&a.buckets)));
        }
        entries.sort_by_key(|(k, _)| *k);
        entries
    }
}

/// `Entry::Buckets` as `serde_json` writes it (`BucketAnswer`):
/// `[{"count","end","fields":{name:{"count","max","mean","min"}},"start"},...]`,
/// by hand as the columns are, so that the default format is as quick to
/// write (issue 44).
pub(super) fn bucket_objects(out: &mut Vec<u8>, buckets: &[BucketStats]) {
    let quoted = |out: &mut Vec<u8>, t: domain::model::Timestamp| {
        // An ISO 8601 time has nothing to escape.
        t.with_text(|text| {
            out.push(b'"');
            out.extend_from_slice(text.as_bytes());
            out.push(b'"');
        })
    };
    let mut int = itoa::Buffer::new();
    // A bucket's start is mostly the end before it: its text copied from
    // where that was written (the end, and where its text lies in `out`).
    let mut last_end: Option<(domain::model::Timestamp, std::ops::Range<usize>)> = None;
    out.push(b'[');
    for (i, b) in buckets.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = match last_end.take() {
            Some((end, text)) if end == b.start => Some(text),
            _ => None,
        };
        out.extend_from_slice(b"{\"count\":");
        out.extend_from_slice(int.format(b.count).as_bytes());
        out.extend_from_slice(b",\"end\":");
        let at = out.len();
        quoted(out, b.end);
        last_end = Some((b.end, at..out.len()));
        out.extend_from_slice(b",\"fields\":{");
        for (j, (name, f)) in b.fields.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            // A quantity's name (`model::Quantity`): nothing to escape.
            let name = name.name();
            debug_assert!(name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":{\"count\":");
            out.extend_from_slice(int.format(f.count).as_bytes());
            out.extend_from_slice(b",\"max\":");
            number(out, f.max);
            out.extend_from_slice(b",\"mean\":");
            mean(out, f);
            out.extend_from_slice(b",\"min\":");
            number(out, f.min);
            out.push(b'}');
        }
        out.extend_from_slice(b"},\"start\":");
        match start {
            Some(text) => out.extend_from_within(text),
            None => quoted(out, b.start),
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// `Entry::Rows` as `serde_json` writes it: `[[start,end,count,...],...]`.
pub(super) fn bucket_rows(out: &mut Vec<u8>, buckets: &[BucketStats], fields: &[FieldName]) {
    out.push(b'[');
    for (i, b) in buckets.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        let mut int = itoa::Buffer::new();
        out.extend_from_slice(int.format(b.start.millis()).as_bytes());
        out.push(b',');
        out.extend_from_slice(int.format(b.end.millis()).as_bytes());
        out.push(b',');
        out.extend_from_slice(int.format(b.count).as_bytes());
        // Both in name order: one pass, no look-ups.
        let mut own = b.fields.iter().peekable();
        for name in fields {
            match own.next_if(|(k, _)| *k == name).map(|(_, f)| f) {
                Some(f) => {
                    out.push(b',');
                    out.extend_from_slice(int.format(f.count).as_bytes());
                    for v in [f.min, f.max] {
                        out.push(b',');
                        number(out, v);
                    }
                    out.push(b',');
                    mean(out, f);
                }
                None => out.extend_from_slice(b",null,null,null,null"),
            }
        }
        out.push(b']');
    }
    out.push(b']');
}

/// The answer through `serde`: the reference the hand-written
/// [`StatsAnswer::to_json_with_read_units`] is held to, byte for byte, by
/// the property test below (the route writes by hand).
impl Serialize for StatsAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries();
        let mut m = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `{"count", "end", "fields": {name: {"count", "max", "mean", "min"}}, "start"}`.
pub(super) struct BucketAnswer<'a>(&'a BucketStats);

impl Serialize for BucketAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("count", &b.count)?;
        b.end.with_text(|t| m.serialize_entry("end", t))?;
        m.serialize_entry("fields", &FieldsAnswer(b))?;
        b.start.with_text(|t| m.serialize_entry("start", t))?;
        m.end()
    }
}

pub(super) struct FieldsAnswer<'a>(&'a BucketStats);

impl Serialize for FieldsAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.fields.len()))?;
        for (name, f) in &self.0.fields {
            m.serialize_entry(name.name(), &FieldAnswer(f))?;
        }
        m.end()
    }
}

pub(super) struct FieldAnswer<'a>(&'a domain::aggregate::FieldStats);

impl Serialize for FieldAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("count", &f.count)?;
        m.serialize_entry("max", &f.max)?;
        m.serialize_entry("mean", &rounded_mean(f))?;
        m.serialize_entry("min", &f.min)?;
        m.end()
    }
}
