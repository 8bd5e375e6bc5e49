//! JSON shapes of registry records in answers.

use crate::domain::aggregate::{BucketStats, EnergyBucket};
use crate::model::{DeviceId, Quantity, Reading};
use crate::query::StatsQuery;
use crate::query::{Aggregate, ReadingsPage};
use crate::store::{DeviceRecord, RoomRecord};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

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
/// "source", "items_read", "buckets": [...]}`
pub fn stats(owner: (&str, &str), q: &StatsQuery, a: &Aggregate<BucketStats>) -> Value {
    let mut m = header(owner, q);
    cost(&mut m, a);
    let buckets = &a.buckets;
    let buckets: Vec<Value> = buckets
        .iter()
        .map(|b| {
            let fields: Map<String, Value> = b
                .fields
                .iter()
                .map(|(name, f)| {
                    (
                        name.to_string(),
                        // Means are rounded to 6 decimals so float noise does not show.
                        json!({"min": f.min, "max": f.max, "mean": (f.mean() * 1e6).round() / 1e6, "count": f.count}),
                    )
                })
                .collect();
            json!({"start": b.start.to_string(), "end": b.end.to_string(), "count": b.count, "fields": fields})
        })
        .collect();
    m.insert("buckets".into(), Value::Array(buckets));
    Value::Object(m)
}

/// Energy per bucket, with totals and the number of counter resets.
pub fn energy(device: &DeviceId, q: &StatsQuery, a: &Aggregate<EnergyBucket>) -> Value {
    let mut m = header(("device_id", device.as_str()), q);
    cost(&mut m, a);
    let buckets = &a.buckets;
    let round = |v: f64| (v * 1e6).round() / 1e6;
    let bought: f64 = buckets.iter().map(|b| b.kwh_bought).sum();
    let sold: f64 = buckets.iter().map(|b| b.kwh_sold).sum();
    m.insert("kwh_bought".into(), json!(round(bought)));
    m.insert("kwh_sold".into(), json!(round(sold)));
    m.insert(
        "resets".into(),
        json!(buckets.iter().map(|b| b.resets).sum::<u32>()),
    );
    let buckets: Vec<Value> = buckets
        .iter()
        .map(|b| {
            json!({"start": b.start.to_string(), "end": b.end.to_string(),
                   "kwh_bought": b.kwh_bought, "kwh_sold": b.kwh_sold, "resets": b.resets})
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
/// page in catalogue order, `null` where a reading has none.
pub struct ColumnsPage<'a> {
    page: &'a ReadingsPage,
    devices: bool,
    rooms: bool,
    quantities: Vec<Quantity>,
}

impl<'a> ColumnsPage<'a> {
    pub fn new(page: &'a ReadingsPage, devices: bool) -> Self {
        let present = |q: Quantity| page.readings.iter().any(|r| r.get(q).is_some());
        Self {
            page,
            devices,
            rooms: page.readings.iter().any(|r| r.room().is_some()),
            quantities: Quantity::ALL.into_iter().filter(|q| present(*q)).collect(),
        }
    }
}

impl Serialize for ColumnsPage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut columns = vec!["timestamp"];
        if self.devices {
            columns.push("device_id");
        }
        columns.push("type");
        if self.rooms {
            columns.push("room");
        }
        columns.extend(self.quantities.iter().map(|q| q.name()));
        let rows: Vec<ColumnsRow> = self
            .page
            .readings
            .iter()
            .map(|reading| ColumnsRow { reading, of: self })
            .collect();
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("columns", &columns)?;
        map.serialize_entry("values", &rows)?;
        map.serialize_entry("next_cursor", &self.page.next_cursor)?;
        map.end()
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
        if self.of.devices {
            row.serialize_element(r.device_id.as_str())?;
        }
        row.serialize_element(r.kind().as_str())?;
        if self.of.rooms {
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
