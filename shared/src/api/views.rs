//! JSON shapes of registry records in answers.

use crate::aggregate::{BucketStats, EnergyBucket};
use crate::model::{DeviceId, Reading};
use crate::query::StatsQuery;
use crate::store::{DeviceRecord, RoomRecord};
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

/// `{"device_id"|"room_id", from, to, bucket, tz, "empty_buckets": "omitted", "buckets": [...]}`
pub fn stats(owner: (&str, &str), q: &StatsQuery, buckets: &[BucketStats]) -> Value {
    let mut m = header(owner, q);
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
pub fn energy(device: &DeviceId, q: &StatsQuery, buckets: &[EnergyBucket]) -> Value {
    let mut m = header(("device_id", device.as_str()), q);
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
