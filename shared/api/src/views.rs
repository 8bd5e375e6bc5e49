//! JSON shapes of registry records in answers.

use super::params::Labels;
use domain::aggregate::field_name::FieldName;
use domain::aggregate::{BucketStats, EnergyBucket};
use domain::model::{DeviceId, Quantity, Reading};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};
use storage::{DeviceRecord, RoomRecord};
use usecases::query::StatsQuery;
use usecases::query::{Aggregate, ReadingsPage};

/// What every aggregate answer says about itself.
fn header(owner: (&str, &str), q: &StatsQuery) -> Map<String, Value> {
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
fn cost<B>(m: &mut Map<String, Value>, a: &Aggregate<B>) {
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
const FIELD_STATS: [&str; 4] = ["count", "min", "max", "mean"];

/// One value of an answer's top level.
enum Entry<'a> {
    Text(String),
    Str(&'a str),
    Count(usize),
    Buckets(&'a [BucketStats]),
    Names(Vec<String>),
    /// Buckets as rows, with the fields their columns name.
    Rows(&'a [BucketStats], Vec<FieldName>),
}

/// A bucket as one row of `Entry::Rows`.
struct BucketRow<'a>(&'a BucketStats, &'a [FieldName]);

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
fn rounded_mean(f: &domain::aggregate::FieldStats) -> f64 {
    (f.mean() * 1e6).round() / 1e6
}

/// `rounded_mean` as `number` writes it, from its whole millionths: of
/// 0.001 up to 10^9, the shortest text that reads back as the rounded
/// mean is those digits (two such texts are at least 10^-6 apart, where
/// floats there are at most 1.2 * 10^-7 apart). Written through the float
/// formatter, means were a tenth of a year of daily stats' instructions.
/// (Its digits are its own, not `number`'s thousandths': one writer of both,
/// generic in the places, cost 2.8 % of a year of daily stats more.)
fn mean(out: &mut Vec<u8>, f: &domain::aggregate::FieldStats) {
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
            super::json::to_writer(&mut out, key).expect("a key serialises");
            out.push(b':');
            match entry {
                Entry::Rows(buckets, fields) => bucket_rows(&mut out, buckets, fields),
                Entry::Buckets(buckets) => bucket_objects(&mut out, buckets),
                other => super::json::to_writer(&mut out, other).expect("an entry serialises"),
            }
        }
        out.extend_from_slice(b",\"read_units\":");
        number(&mut out, read_units);
        out.push(b'}');
        out
    }

    /// The top level's entries, in key order.
    fn entries(&self) -> Vec<(&str, Entry<'_>)> {
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
fn bucket_objects(out: &mut Vec<u8>, buckets: &[BucketStats]) {
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
fn bucket_rows(out: &mut Vec<u8>, buckets: &[BucketStats], fields: &[FieldName]) {
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
struct BucketAnswer<'a>(&'a BucketStats);

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

struct FieldsAnswer<'a>(&'a BucketStats);

impl Serialize for FieldsAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.fields.len()))?;
        for (name, f) in &self.0.fields {
            m.serialize_entry(name.name(), &FieldAnswer(f))?;
        }
        m.end()
    }
}

struct FieldAnswer<'a>(&'a domain::aggregate::FieldStats);

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

/// Energy per bucket, with totals and the number of counter resets; gas
/// and water (m³) beside, for a device that has those counters.
pub fn energy(device: &DeviceId, q: &StatsQuery, a: &Aggregate<EnergyBucket>) -> Value {
    use domain::aggregate::counter::Counter;
    /// Each counter's name in the answer, as `<unit>_<what>`.
    const NAMES: [(Counter, &str); 4] = [
        (Counter::Bought, "kwh_bought"),
        (Counter::Sold, "kwh_sold"),
        (Counter::Gas, "m3_gas"),
        (Counter::Water, "m3_water"),
    ];
    let mut m = header(("device_id", device.as_str()), q);
    cost(&mut m, a);
    let buckets = &a.buckets;
    let round = |v: f64| (v * 1e6).round() / 1e6;
    for (c, name) in NAMES {
        // The electricity totals always (0 for a gas meter, as before); a
        // volume's where its buckets have it (each has, where the device
        // has the counter).
        let total: Option<f64> = match buckets.is_empty() {
            true => Counter::ELECTRICITY.contains(&c).then_some(0.0),
            false => buckets.iter().map(|b| b.amount(c)).sum(),
        };
        if let Some(total) = total {
            m.insert(name.into(), json!(round(total)));
        }
    }
    m.insert(
        "resets".into(),
        json!(buckets.iter().map(|b| b.resets).sum::<u32>()),
    );
    let buckets: Vec<Value> = buckets
        .iter()
        .map(|b| {
            let mut o = serde_json::Map::new();
            o.insert("start".into(), json!(b.start.to_string()));
            o.insert("end".into(), json!(b.end.to_string()));
            for (c, name) in NAMES {
                if let Some(v) = b.amount(c) {
                    o.insert(name.into(), json!(v));
                }
            }
            o.insert("resets".into(), json!(b.resets));
            Value::Object(o)
        })
        .collect();
    m.insert("buckets".into(), Value::Array(buckets));
    Value::Object(m)
}

#[derive(Serialize)]
pub struct DeviceView<'a> {
    device_id: &'a str,
    name: Option<&'a str>,
    types: Vec<&'static str>,
    /// Every quantity it has reported, by catalogue name.
    quantities: Vec<&'static str>,
    room: Option<&'a str>,
    first_seen: Option<String>,
    last_seen: Option<String>,
    latest: Option<&'a Reading>,
}

impl<'a> From<&'a DeviceRecord> for DeviceView<'a> {
    fn from(d: &'a DeviceRecord) -> Self {
        DeviceView {
            device_id: d.device_id.as_str(),
            name: d.name.as_deref(),
            types: d.types.iter().map(|t| t.as_str()).collect(),
            quantities: d.quantities.iter().map(|q| q.name()).collect(),
            room: d.room.as_ref().map(|r| r.as_str()),
            first_seen: d.first_seen.map(|t| t.to_string()),
            last_seen: d.last_seen.map(|t| t.to_string()),
            latest: d.latest.as_ref(),
        }
    }
}

#[derive(Serialize)]
pub struct RoomView<'a> {
    room_id: &'a str,
    name: Option<&'a str>,
    devices: Vec<&'a str>,
    first_seen: Option<String>,
    last_seen: Option<String>,
    latest: Option<&'a Reading>,
}

impl<'a> From<&'a RoomRecord> for RoomView<'a> {
    fn from(r: &'a RoomRecord) -> Self {
        RoomView {
            room_id: r.room_id.as_str(),
            name: r.name.as_deref(),
            devices: r.devices.iter().map(|d| d.as_str()).collect(),
            first_seen: r.first_seen.map(|t| t.to_string()),
            last_seen: r.last_seen.map(|t| t.to_string()),
            latest: r.latest.as_ref(),
        }
    }
}

/// A page of readings as columns (`format=columns`):
/// `{"columns": ["timestamp", ("device_id",) "type", ("room",) quantities...],
/// "values": [[...], ...], "next_cursor"}`. The timestamp is epoch
/// milliseconds; `device_id` is a column on room and all-device pages, `room`
/// when a reading of the page has one, and the quantities are those of the
/// page in catalogue order, `null` where a reading has none. With
/// `labels=once`, a label (`device_id`, `type`, `room`) that every reading of
/// the page shares is given once, in `"labels": {...}` after `columns`, and
/// is not a column.
pub struct ColumnsPage<'a> {
    page: &'a ReadingsPage,
    device_column: bool,
    type_column: bool,
    room_column: bool,
    /// With `labels=once`, the labels given once, in column order.
    labels: Option<Vec<(&'static str, &'a str)>>,
    quantities: Vec<Quantity>,
}

impl<'a> ColumnsPage<'a> {
    pub fn new(page: &'a ReadingsPage, devices: bool, labels: Labels) -> Self {
        // One pass over the page (a page holds up to 10,000 readings).
        let mut present = [false; Quantity::ALL.len()];
        let mut rooms = false;
        let first = page.readings.first();
        let (mut same_device, mut same_type, mut same_room) = (true, true, true);
        for r in &page.readings {
            rooms |= r.room().is_some();
            if let (Labels::Once, Some(f)) = (labels, first) {
                same_device &= r.device_id == f.device_id;
                same_type &= r.kind() == f.kind();
                same_room &= r.room() == f.room();
            }
            for (q, _) in r.measurement.values() {
                present[q.index()] = true;
            }
        }
        let mut columns = Self {
            page,
            device_column: devices,
            type_column: true,
            room_column: rooms,
            labels: None,
            quantities: Quantity::ALL
                .into_iter()
                .filter(|q| present[q.index()])
                .collect(),
        };
        if labels == Labels::Once {
            let mut once = Vec::new();
            // An empty page has no labels to give: its columns are as `each`.
            if let Some(f) = first {
                if devices && same_device {
                    once.push(("device_id", f.device_id.as_str()));
                    columns.device_column = false;
                }
                if same_type {
                    once.push(("type", f.kind().as_str()));
                    columns.type_column = false;
                }
                // `rooms` and the same room: every reading has this one.
                if let (true, Some(room)) = (rooms && same_room, f.room()) {
                    once.push(("room", room.as_str()));
                    columns.room_column = false;
                }
            }
            columns.labels = Some(once);
        }
        columns
    }
}

impl ColumnsPage<'_> {
    fn columns(&self) -> Vec<&'static str> {
        let mut columns = vec!["timestamp"];
        if self.device_column {
            columns.push("device_id");
        }
        if self.type_column {
            columns.push("type");
        }
        if self.room_column {
            columns.push("room");
        }
        columns.extend(self.quantities.iter().map(|q| q.name()));
        columns
    }

    /// The page with its read units, as JSON: the bytes `serde_json` writes
    /// for `{columns, values, next_cursor, read_units}` (a test holds them
    /// equal), written by hand. Through `serde`, a page of readings spent a
    /// third of its time in the serializer's calls per element and in float
    /// formatting, where a value is nearly always whole thousandths.
    pub fn to_json_with_read_units(&self, read_units: f64) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024 + self.page.readings.len() * 64);
        out.extend_from_slice(b"{\"columns\":");
        super::json::to_writer(&mut out, &self.columns()).expect("names serialise");
        if let Some(labels) = &self.labels {
            out.extend_from_slice(b",\"labels\":{");
            for (i, (name, text)) in labels.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // Names and texts as below: nothing to escape.
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":\"");
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            }
            out.push(b'}');
        }
        out.extend_from_slice(b",\"values\":[");
        let mut texts = NumberTexts::default();
        // The columns between the time and the values (device, type, room),
        // as the reading before wrote them: a page's readings mostly share
        // them, and one copy is cheaper than writing them piece by piece.
        let mut labels: Vec<u8> = Vec::new();
        let mut labelled: Option<&Reading> = None;
        for (i, r) in self.page.readings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            out.extend_from_slice(itoa::Buffer::new().format(r.timestamp.millis()).as_bytes());
            let same_labels = labelled.is_some_and(|l| {
                l.kind() == r.kind()
                    && l.room() == r.room()
                    && (!self.device_column || l.device_id == r.device_id)
            });
            if !same_labels {
                labels.clear();
                // Ids and types are plain ASCII without quotes or backslashes
                // (`model::ids`): nothing to escape.
                if self.device_column {
                    quoted(&mut labels, r.device_id.as_str());
                }
                if self.type_column {
                    quoted(&mut labels, r.kind().as_str());
                }
                if self.room_column {
                    match r.room() {
                        Some(room) => quoted(&mut labels, room.as_str()),
                        None => labels.extend_from_slice(b",null"),
                    }
                }
                labelled = Some(r);
            }
            out.extend_from_slice(&labels);
            let mut values = r.measurement.values().iter().peekable();
            for q in &self.quantities {
                out.push(b',');
                match values.next_if(|(k, _)| k == q) {
                    Some((_, v)) => texts.write(&mut out, *v),
                    None => out.extend_from_slice(b"null"),
                }
            }
            out.push(b']');
        }
        out.extend_from_slice(b"],\"next_cursor\":");
        super::json::to_writer(&mut out, &self.page.next_cursor).expect("text serialises");
        out.extend_from_slice(b",\"read_units\":");
        number(&mut out, read_units);
        out.push(b'}');
        out
    }
}

/// The texts of numbers already written (`ValueMemo`): a page's values
/// repeat, and copying the text a value had is cheaper than writing it.
#[derive(Default)]
struct NumberTexts(domain::model::ValueMemo<(u8, [u8; NumberTexts::LONGEST])>);

impl NumberTexts {
    /// Longer texts (an unusual value's full precision) are written each time.
    const LONGEST: usize = 22;

    /// Writes `v` as `number` does.
    fn write(&mut self, out: &mut Vec<u8>, v: f64) {
        if let Some((len, text)) = self.0.get(v) {
            out.extend_from_slice(&text[..usize::from(len)]);
            return;
        }
        let start = out.len();
        number(out, v);
        let written = &out[start..];
        if written.len() <= Self::LONGEST {
            let mut text = [0; Self::LONGEST];
            text[..written.len()].copy_from_slice(written);
            self.0.put(v, (written.len() as u8, text));
        }
    }
}

/// `,"text"`, for text with nothing to escape.
fn quoted(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// A number as `serde_json` writes it (its shortest round trip): whole
/// thousandths from their integer (`model::whole_thousandths`).
fn number(out: &mut Vec<u8>, v: f64) {
    let v = super::json::unsigned_zero(v);
    if let Some(m) = domain::model::whole_thousandths(v) {
        if v.is_sign_negative() {
            out.push(b'-');
        }
        let (whole, frac) = (m.unsigned_abs() / 1000, m.unsigned_abs() % 1000);
        out.extend_from_slice(itoa::Buffer::new().format(whole).as_bytes());
        out.push(b'.');
        match frac {
            0 => out.push(b'0'),
            f if f % 100 == 0 => out.push(b'0' + (f / 100) as u8),
            f if f % 10 == 0 => {
                out.extend_from_slice(&[b'0' + (f / 100) as u8, b'0' + (f / 10 % 10) as u8])
            }
            f => out.extend_from_slice(&[
                b'0' + (f / 100) as u8,
                b'0' + (f / 10 % 10) as u8,
                b'0' + (f % 10) as u8,
            ]),
        }
    } else {
        super::json::to_writer(out, &v).expect("a number serialises");
    }
}

impl Serialize for ColumnsPage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let columns = self.columns();
        let rows: Vec<ColumnsRow> = self
            .page
            .readings
            .iter()
            .map(|reading| ColumnsRow { reading, of: self })
            .collect();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("columns", &columns)?;
        if let Some(labels) = &self.labels {
            map.serialize_entry("labels", &LabelsOnce(labels))?;
        }
        map.serialize_entry("values", &rows)?;
        map.serialize_entry("next_cursor", &self.page.next_cursor)?;
        map.end()
    }
}

/// A columns page's `labels`, as an object in column order.
struct LabelsOnce<'a>(&'a [(&'static str, &'a str)]);

impl Serialize for LabelsOnce<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// One reading's row of a `ColumnsPage`.
struct ColumnsRow<'a> {
    reading: &'a Reading,
    of: &'a ColumnsPage<'a>,
}

impl Serialize for ColumnsRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.reading;
        let mut row = serializer.serialize_seq(None)?;
        row.serialize_element(&r.timestamp.millis())?;
        if self.of.device_column {
            row.serialize_element(r.device_id.as_str())?;
        }
        if self.of.type_column {
            row.serialize_element(r.kind().as_str())?;
        }
        if self.of.room_column {
            row.serialize_element(&r.room().map(|room| room.as_str()))?;
        }
        // Both lists are in catalogue order: one pass.
        let mut values = r.measurement.values().iter().peekable();
        for q in &self.of.quantities {
            let v = values.next_if(|(k, _)| k == q).map(|(_, v)| *v);
            row.serialize_element(&v)?;
        }
        row.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::{DeviceId, Measurement, RoomId, Timestamp};
    use proptest::prelude::*;

    #[derive(Serialize)]
    struct Metered<'a> {
        #[serde(flatten)]
        page: &'a ColumnsPage<'a>,
        read_units: f64,
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-1_000_000_000_000i64..1_000_000_000_000).prop_map(|m| m as f64 / 1000.0),
            (-100_000i64..100_000).prop_map(|m| m as f64 / 1000.0),
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(-0.0),
            Just(1e-7),
            Just(123_456_789_012.5),
            // Repeated values, as a sensor's page has them: written from
            // the texts remembered (`NumberTexts`).
            (0i64..4).prop_map(|m| 21.0 + m as f64 / 100.0),
            Just(0.1 + 0.2),
        ]
    }

    /// A page's readings: time, temperature, humidity, power, room and
    /// device of each.
    type Rows = Vec<(
        i64,
        Option<f64>,
        Option<f64>,
        Option<f64>,
        Option<usize>,
        usize,
    )>;

    fn rows() -> impl Strategy<Value = Rows> {
        // Devices, rooms and types that change from reading to reading or
        // stay (the writer reuses a reading's labels): some pages of one
        // device in one room, whose labels `labels=once` gives once.
        (
            prop::collection::vec(
                (
                    0i64..4_000_000_000_000,
                    prop::option::of(value()),
                    prop::option::of(value()),
                    prop::option::of(value()),
                    prop::option::of(0..2usize),
                    0..3usize,
                ),
                0..24,
            ),
            any::<bool>(),
        )
            .prop_map(|(rows, one_device_one_room)| {
                rows.into_iter()
                    .map(|(ms, t, h, w, room, device)| match one_device_one_room {
                        true => (ms, t, h, w, Some(0), 0),
                        false => (ms, t, h, w, room, device),
                    })
                    .collect()
            })
    }

    fn readings(rows: Rows) -> Vec<Reading> {
        rows.into_iter()
            .filter_map(|(ms, t, h, w, room, device)| {
                let mut values: Vec<(Quantity, f64)> =
                    w.map(|w| (Quantity::Power, w)).into_iter().collect();
                values.extend(t.map(|t| (Quantity::Temperature, t)));
                values.extend(h.map(|h| (Quantity::Humidity, h)));
                let room = room.map(|r| RoomId::parse(&format!("room-{r}")).unwrap());
                Some(Reading {
                    device_id: DeviceId::parse(&format!("dev-{device}")).unwrap(),
                    timestamp: Timestamp::from_millis(ms).ok()?,
                    measurement: Measurement::new(room, values).ok()?,
                })
            })
            .collect()
    }

    /// An answer and its read units, as the stats route wrote it through
    /// `serde` (`routes::Metered`).
    #[derive(Serialize)]
    struct MeteredStats<'a> {
        #[serde(flatten)]
        answer: &'a StatsAnswer<'a>,
        read_units: f64,
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The hand-written stats answer is the bytes `serde_json` writes,
        /// as columns and as buckets: counts, whole thousandths, other
        /// floats, means, fields some buckets lack, days in a row (a
        /// start written as a copy of the end before it) or not.
        #[test]
        fn a_stats_answer_is_written_as_serde_json_writes_it(
            buckets in prop::collection::vec(
                (
                    0i64..4_000_000_000_000,
                    1u64..100_000,
                    prop::collection::vec(
                        (prop::sample::select(vec![Quantity::Temperature, Quantity::Humidity, Quantity::Power]), value(), value(), value(), 1u64..5000),
                        0..3,
                    ),
                ),
                0..12,
            ),
            columns in any::<bool>(),
            read_units in value(),
            days_in_a_row in any::<bool>(),
        ) {
            use domain::aggregate::{Bucketing, FieldStats, Width};
            // Days one after another (each start the end before it, as a
            // range's days are), or anywhere.
            let first = buckets.first().map_or(0, |b| b.0);
            let buckets: Vec<BucketStats> = buckets
                .into_iter()
                .enumerate()
                .map(|(i, (ms, count, fields))| (if days_in_a_row { first + i as i64 * 86_400_000 } else { ms }, count, fields))
                .map(|(ms, count, fields)| BucketStats {
                    start: Timestamp::from_millis(ms).unwrap(),
                    end: Timestamp::from_millis(ms + 86_400_000).unwrap(),
                    count,
                    fields: fields
                        .into_iter()
                        .map(|(q, min, max, sum, count)| (FieldName(q), FieldStats { min, max, sum, count }))
                        .collect(),
                })
                .collect();
            let a = Aggregate { buckets, source: usecases::query::Source::Rollups, items_read: 365 };
            let q = StatsQuery {
                range: domain::model::TimeRange::new(
                    Timestamp::from_millis(0).unwrap(),
                    Timestamp::from_millis(4_000_000_000_000).unwrap(),
                )
                .unwrap(),
                bucketing: Bucketing::new(Width::Day, None),
            };
            let answer = stats(("device_id", "dev-1"), &q, &a, columns);
            let mut expected = Vec::new(); super::super::json::to_writer(&mut expected, &MeteredStats { answer: &answer, read_units }).unwrap();
            prop_assert_eq!(
                String::from_utf8(answer.to_json_with_read_units(read_units)).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }

        /// A mean is written from its millionths as `number` writes the
        /// rounded mean: about 0.001 and 10^9 (where the shortcut starts
        /// and stops), halves of a millionth, negatives and any float.
        #[test]
        fn a_mean_is_written_as_number_writes_it_rounded(
            mean in prop_oneof![
                (-2_000_000i64..2_000_000).prop_map(|m| m as f64 / 1e6),
                (-1_000_000_000_000_000i64..1_000_000_000_000_000).prop_map(|m| m as f64 / 1e6),
                (-10_000_000i64..10_000_000).prop_map(|m| (m as f64 + 0.5) / 1e6),
                (900_000_000.0..1_100_000_000.0f64),
                any::<f64>().prop_filter("finite", |v| v.is_finite()),
                value(),
            ],
            count in 1u64..5000,
        ) {
            use domain::aggregate::FieldStats;
            let f = FieldStats { min: mean, max: mean, sum: mean * count as f64, count };
            let (mut ours, mut reference) = (Vec::new(), Vec::new());
            super::mean(&mut ours, &f);
            number(&mut reference, rounded_mean(&f));
            prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(reference).unwrap());
        }

        /// `labels=once` says what `labels=each` says: its labels put back
        /// into every row as the columns `each` names give the same rows;
        /// and a label is given once exactly when every reading shares it.
        #[test]
        fn labels_given_once_are_the_columns_every_reading_shares(
            rows in rows(),
            devices in any::<bool>(),
        ) {
            let page = ReadingsPage { readings: readings(rows), next_cursor: None };
            let json = |labels| -> Value {
                serde_json::from_slice(
                    &ColumnsPage::new(&page, devices, labels).to_json_with_read_units(0.0),
                )
                .unwrap()
            };
            let (each, once) = (json(Labels::Each), json(Labels::Once));
            prop_assert!(each.get("labels").is_none());
            let given = once["labels"].as_object().unwrap();
            for (name, text) in given {
                let column = each["columns"].as_array().unwrap().iter().position(|c| c == name);
                let column = column.expect("a label given once is a column of `each`");
                prop_assert!(each["values"].as_array().unwrap().iter().all(|r| &r[column] == text));
                prop_assert!(!once["columns"].as_array().unwrap().contains(&json!(name)));
            }
            // Rebuilt: each row of `once` with the labels put back where
            // `each` has them.
            let once_columns = once["columns"].as_array().unwrap();
            let rebuilt: Vec<Value> = once["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    each["columns"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| match once_columns.iter().position(|o| o == c) {
                            Some(i) => row[i].clone(),
                            None => given[c.as_str().unwrap()].clone(),
                        })
                        .collect()
                })
                .collect();
            prop_assert_eq!(&Value::Array(rebuilt), &each["values"]);
            // A label that is a column of `once` differs between readings
            // (an empty page has no labels to give).
            let rows = once["values"].as_array().unwrap();
            prop_assert!(!rows.is_empty() || given.is_empty());
            for (i, c) in once_columns.iter().enumerate().filter(|_| !rows.is_empty()) {
                if ["device_id", "type", "room"].contains(&c.as_str().unwrap()) {
                    prop_assert!(rows.iter().any(|r| r[i] != rows[0][i]), "{} is the same in every row", c);
                }
            }
        }

        /// The hand-written columns page is the bytes `serde_json` writes for
        /// the same page, whatever the values: whole thousandths (the fast
        /// path), other floats, negative zero, large and tiny magnitudes.
        #[test]
        fn a_columns_page_is_written_as_serde_json_writes_it(
            rows in rows(),
            devices in any::<bool>(),
            once in any::<bool>(),
            cursor in prop::option::of("[a-zA-Z0-9]{1,8}"),
            read_units in value(),
        ) {
            let readings = readings(rows);
            let page = ReadingsPage {
                readings,
                next_cursor: cursor,
            };
            let labels = if once { Labels::Once } else { Labels::Each };
            let columns = ColumnsPage::new(&page, devices, labels);
            let mut expected = Vec::new();
            super::super::json::to_writer(&mut expected, &Metered {
                page: &columns,
                read_units,
            })
            .unwrap();
            let written = columns.to_json_with_read_units(read_units);
            prop_assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
