//! A page of readings in columns (`format=columns`): the labels once,
//! then each reading's values in the order they name.

use super::super::params::Labels;
use domain::model::{Quantity, Reading};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use usecases::query::ReadingsPage;

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
    pub(super) fn columns(&self) -> Vec<&'static str> {
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
        self.open(&mut out);
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
        self.close(&mut out, read_units);
        out
    }

    /// The page in arrays (`format=arrays`), with its read units: the
    /// columns page turned on its side, `"arrays"` in place of `"values"`,
    /// an array for each column (in `columns`' order) holding the page's
    /// readings in order. A client reads a column as one array of numbers
    /// where it read an array for every reading: a day of a reading every
    /// ten seconds parsed in half the time (docs/BENCHMARKS.md, issue 80).
    pub fn to_arrays_json_with_read_units(&self, read_units: f64) -> Vec<u8> {
        let readings = &self.page.readings;
        let mut out = Vec::with_capacity(1024 + readings.len() * 48);
        self.open(&mut out);
        out.extend_from_slice(b",\"arrays\":[");
        let column = |out: &mut Vec<u8>, each: &mut dyn FnMut(&mut Vec<u8>, &Reading)| {
            out.push(b'[');
            for (i, r) in readings.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                each(out, r);
            }
            out.push(b']');
        };
        // Ids, types and rooms are plain ASCII without quotes or
        // backslashes (`model::ids`): nothing to escape.
        let text = |out: &mut Vec<u8>, t: Option<&str>| match t {
            Some(t) => {
                out.push(b'"');
                out.extend_from_slice(t.as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        };
        column(&mut out, &mut |out, r| {
            out.extend_from_slice(itoa::Buffer::new().format(r.timestamp.millis()).as_bytes())
        });
        if self.device_column {
            out.push(b',');
            column(&mut out, &mut |out, r| {
                text(out, Some(r.device_id.as_str()))
            });
        }
        if self.type_column {
            out.push(b',');
            column(&mut out, &mut |out, r| text(out, Some(r.kind().as_str())));
        }
        if self.room_column {
            out.push(b',');
            column(&mut out, &mut |out, r| {
                text(out, r.room().map(|room| room.as_str()))
            });
        }
        let mut numbers = NumberTexts::default();
        for q in &self.quantities {
            out.push(b',');
            column(
                &mut out,
                &mut |out, r| match r.measurement.values().iter().find(|(k, _)| k == q) {
                    Some((_, v)) => numbers.write(out, *v),
                    None => out.extend_from_slice(b"null"),
                },
            );
        }
        self.close(&mut out, read_units);
        out
    }

    /// What both shapes begin with: `{"columns": [...]` and, with
    /// `labels=once`, `"labels": {...}`.
    fn open(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"columns\":");
        crate::json::to_writer(&mut *out, &self.columns()).expect("names serialise");
        if let Some(labels) = &self.labels {
            out.extend_from_slice(b",\"labels\":{");
            for (i, (name, text)) in labels.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // Names and texts as the columns: nothing to escape.
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":\"");
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            }
            out.push(b'}');
        }
    }

    /// What both shapes end with, after their last array: its `]`, the
    /// cursor and the read units.
    fn close(&self, out: &mut Vec<u8>, read_units: f64) {
        out.extend_from_slice(b"],\"next_cursor\":");
        crate::json::to_writer(&mut *out, &self.page.next_cursor).expect("text serialises");
        out.extend_from_slice(b",\"read_units\":");
        number(out, read_units);
        out.push(b'}');
    }
}

/// The texts of numbers already written (`ValueMemo`): a page's values
/// repeat, and copying the text a value had is cheaper than writing it.
#[derive(Default)]
pub(super) struct NumberTexts(domain::model::ValueMemo<(u8, [u8; NumberTexts::LONGEST])>);

impl NumberTexts {
    /// Longer texts (an unusual value's full precision) are written each time.
    pub(super) const LONGEST: usize = 22;

    /// Writes `v` as `number` does.
    pub(super) fn write(&mut self, out: &mut Vec<u8>, v: f64) {
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
pub(super) fn quoted(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// A number as `serde_json` writes it (its shortest round trip): whole
/// thousandths from their integer (`model::whole_thousandths`).
pub(super) fn number(out: &mut Vec<u8>, v: f64) {
    let v = crate::json::unsigned_zero(v);
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
        crate::json::to_writer(out, &v).expect("a number serialises");
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
pub(super) struct LabelsOnce<'a>(&'a [(&'static str, &'a str)]);

impl Serialize for LabelsOnce<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// One reading's row of a `ColumnsPage`.
pub(super) struct ColumnsRow<'a> {
    pub(super) reading: &'a Reading,
    pub(super) of: &'a ColumnsPage<'a>,
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
