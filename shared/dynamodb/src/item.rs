//! The item layout of DESIGN §3 as serde structs. One codec serves every
//! engine: `serde_dynamo` maps it to SDK items and to stream images alike.
//! A reading's item on the write path is built straight into
//! `AttributeValue`s (`reading_item`), the same item at less CPU.

use super::{s, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use domain::model::{DeviceId, Measurement, Quantity, Reading, ReadingKind, RoomId, Timestamp};
use domain::registry::{DeviceRecord, RoomRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use storage::keys::{self, attr, DEVICE_PARTITION, ROOM_PARTITION};
use storage::{Expiry, Indexes, StoreError};

/// A reading item: `pk=<device>`, `sk=TS#<ts>`, `type`, `room` when it has
/// one, and one number attribute per quantity, named as in the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadingItem {
    pub pk: String,
    pub sk: String,
    /// Absent in `room-time` index items (projection INCLUDE temperature, humidity).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// Epoch seconds after which the reading is expired (TTL attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Readings with both temperature and humidity only: the Z-order key of the
    /// `room-z` and `device-z` indexes. Derived; never read back into a reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<String>,
    /// The `all-time` index keys (`ALL#<n>`, `TS#<ts>#<device>`); derived, never read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ats: Option<String>,
    /// Every other attribute: the quantities, by catalogue name.
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

/// The item's quantities, checked against the catalogue.
fn quantities(values: &BTreeMap<String, f64>) -> Result<Vec<(Quantity, f64)>, String> {
    values
        .iter()
        .map(|(name, v)| {
            Quantity::parse(name)
                .map(|q| (q, *v))
                .ok_or_else(|| format!("unknown attribute {name:?}"))
        })
        .collect()
}

/// The Z-order key of a reading with both temperature and humidity.
pub fn z_key(r: &Reading) -> Option<String> {
    let t = r.get(Quantity::Temperature)?;
    let h = r.get(Quantity::Humidity)?;
    Some(keys::zorder::ZKey::of(&r.device_id, r.timestamp, t, h).into_string())
}

impl ReadingItem {
    /// The item of a reading as stored: with `expires_at` when a retention is
    /// set, and its `all-time` shard among `shards`.
    pub fn stored(r: &Reading, retention: Option<super::Retention>, shards: u32) -> Self {
        let mut item = Self::from_reading(r);
        item.expires_at = retention.map(|k| k.expires_at(r.timestamp));
        item.shard = Some(keys::all_time_pk(keys::shard_of(&r.device_id, shards)));
        item.ats = Some(keys::all_time_sk_of(&item.sk, &r.device_id));
        item
    }

    pub fn from_reading(r: &Reading) -> Self {
        ReadingItem {
            pk: keys::reading_pk(&r.device_id).to_owned(),
            sk: keys::reading_sk(r.timestamp),
            kind: Some(r.kind().as_str().to_owned()),
            room: r.room().map(|room| room.as_str().to_owned()),
            expires_at: None,
            z: z_key(r),
            shard: None,
            ats: None,
            values: r
                .measurement
                .values()
                .iter()
                .map(|(q, v)| (q.name().to_owned(), *v))
                .collect(),
        }
    }

    /// The item as the `room-time` index holds it: keys, `room`, and the
    /// projected temperature and humidity (no `type`, no other quantity).
    pub fn room_time_projection(self) -> Self {
        let keep = [Quantity::Temperature.name(), Quantity::Humidity.name()];
        ReadingItem {
            kind: None,
            expires_at: None,
            z: None,
            shard: None,
            ats: None,
            values: self
                .values
                .into_iter()
                .filter(|(name, _)| keep.contains(&name.as_str()))
                .collect(),
            ..self
        }
    }

    /// True when the keys are those of a reading (not a registry or other item).
    pub fn is_reading_key(pk: &str, sk: &str) -> bool {
        pk != DEVICE_PARTITION && pk != ROOM_PARTITION && keys::parse_reading_sk(sk).is_some()
    }

    /// The reading. A stored `type` must be the one its quantities give (an
    /// index item has none: the room-time index projects no `type`).
    pub fn into_reading(self) -> Result<Reading, String> {
        let device_id = DeviceId::parse(&self.pk).map_err(|e| format!("pk {:?}: {e}", self.pk))?;
        let timestamp = keys::parse_reading_sk(&self.sk)
            .ok_or_else(|| format!("sk {:?} is not a reading key", self.sk))?;
        let room = self
            .room
            .as_deref()
            .map(|r| RoomId::parse(r).map_err(|e| format!("room {r:?}: {e}")))
            .transpose()?;
        let measurement = Measurement::new(room, quantities(&self.values)?)
            .map_err(|ps| format!("reading {}/{}: {}", self.pk, self.sk, describe(ps)))?;
        if let Some(k) = &self.kind {
            let kind = ReadingKind::parse(k).ok_or_else(|| format!("unknown type {k:?}"))?;
            if kind != measurement.kind() {
                return Err(format!(
                    "reading {}/{} has type {k:?} but {} values",
                    self.pk,
                    self.sk,
                    measurement.kind().as_str()
                ));
            }
        }
        Ok(Reading {
            device_id,
            timestamp,
            measurement,
        })
    }
}

fn describe(problems: Vec<domain::model::FieldProblem>) -> String {
    problems
        .iter()
        .map(|p| format!("{} {}", p.field, p.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The latest reading kept in a registry item (a map attribute `latest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotItem {
    pub device_id: String,
    pub timestamp: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// The quantities, by catalogue name.
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

impl SnapshotItem {
    pub fn from_reading(r: &Reading) -> Self {
        let item = ReadingItem::from_reading(r);
        SnapshotItem {
            device_id: r.device_id.to_string(),
            timestamp: r.timestamp.to_string(),
            kind: r.kind().as_str().to_owned(),
            room: item.room,
            values: item.values,
        }
    }

    pub fn into_reading(self) -> Result<Reading, String> {
        let ts =
            Timestamp::parse(&self.timestamp).map_err(|e| format!("snapshot timestamp: {e}"))?;
        ReadingItem {
            pk: self.device_id,
            sk: keys::reading_sk(ts),
            kind: Some(self.kind),
            room: self.room,
            expires_at: None,
            z: None,
            shard: None,
            ats: None,
            values: self.values,
        }
        .into_reading()
    }
}

/// A device registry item (`pk=DEVICE`, `sk=<device id>`).
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceItem {
    pub sk: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub types: Vec<String>,
    /// Absent on items from before the catalogue: then the latest snapshot's quantities.
    #[serde(default)]
    pub quantities: Vec<String>,
    /// `in_room` (keys::attr::DEVICE_ROOM); `room` on items from before it.
    #[serde(default)]
    pub in_room: Option<String>,
    #[serde(default)]
    pub room: Option<String>,
    #[serde(default)]
    pub first_seen: Option<String>,
    #[serde(default)]
    pub last_seen: Option<String>,
    #[serde(default)]
    pub latest: Option<SnapshotItem>,
}

/// A room registry item (`pk=ROOM`, `sk=<room id>`).
#[derive(Debug, Clone, Deserialize)]
pub struct RoomItem {
    pub sk: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub devices: Vec<String>,
    /// From which UTC day its presence items are complete (absent: not yet).
    #[serde(default)]
    pub presence_since: Option<String>,
    #[serde(default)]
    pub first_seen: Option<String>,
    #[serde(default)]
    pub last_seen: Option<String>,
    #[serde(default)]
    pub latest: Option<SnapshotItem>,
}

fn opt_ts(field: &str, v: Option<String>) -> Result<Option<Timestamp>, String> {
    v.map(|s| Timestamp::parse(&s).map_err(|e| format!("{field} {s:?}: {e}")))
        .transpose()
}

impl DeviceItem {
    pub fn into_record(self) -> Result<DeviceRecord, String> {
        let latest = self.latest.map(SnapshotItem::into_reading).transpose()?;
        let mut quantities = self
            .quantities
            .iter()
            .map(|q| Quantity::parse(q).ok_or_else(|| format!("unknown quantity {q:?}")))
            .collect::<Result<std::collections::BTreeSet<_>, _>>()?;
        // A device item written before `quantities` existed: what its latest reading has.
        if let Some(r) = &latest {
            quantities.extend(r.measurement.values().iter().map(|(q, _)| *q));
        }
        Ok(DeviceRecord {
            device_id: DeviceId::parse(&self.sk)
                .map_err(|e| format!("device {:?}: {e}", self.sk))?,
            name: self.name,
            types: self
                .types
                .iter()
                .map(|t| ReadingKind::parse(t).ok_or_else(|| format!("unknown type {t:?}")))
                .collect::<Result<_, _>>()?,
            quantities,
            room: self
                .in_room
                .or(self.room)
                .map(|r| RoomId::parse(&r).map_err(|e| format!("room {r:?}: {e}")))
                .transpose()?,
            first_seen: opt_ts("first_seen", self.first_seen)?,
            last_seen: opt_ts("last_seen", self.last_seen)?,
            latest,
        })
    }
}

impl RoomItem {
    pub fn into_record(self) -> Result<RoomRecord, String> {
        Ok(RoomRecord {
            room_id: RoomId::parse(&self.sk).map_err(|e| format!("room {:?}: {e}", self.sk))?,
            name: self.name,
            devices: self
                .devices
                .iter()
                .map(|d| DeviceId::parse(d).map_err(|e| format!("device {d:?}: {e}")))
                .collect::<Result<_, _>>()?,
            first_seen: opt_ts("first_seen", self.first_seen)?,
            last_seen: opt_ts("last_seen", self.last_seen)?,
            latest: self.latest.map(SnapshotItem::into_reading).transpose()?,
        })
    }
}

/// The item of a reading, built straight into `AttributeValue`s: the hot path of
/// every write. It is the same item as `serde_dynamo::to_item(ReadingItem::…)`
/// (a unit test holds them equal), at well under half the CPU (docs/BENCHMARKS.md).
pub fn reading_item(r: &Reading, expiry: &Expiry, shards: u32, indexes: Indexes) -> Item {
    let n = |v: f64| AttributeValue::N(number_text(v));
    let mut item = Item::with_capacity(10);
    let sk = keys::reading_sk(r.timestamp);
    if indexes.all_devices {
        item.insert(
            attr::SHARD.to_owned(),
            AttributeValue::S(keys::all_time_pk(keys::shard_of(&r.device_id, shards))),
        );
        item.insert(
            attr::ATS.to_owned(),
            AttributeValue::S(keys::all_time_sk_of(&sk, &r.device_id)),
        );
    }
    item.insert(attr::PK.to_owned(), s(keys::reading_pk(&r.device_id)));
    item.insert(attr::SK.to_owned(), AttributeValue::S(sk));
    item.insert("type".to_owned(), s(r.kind().as_str()));
    if let Some(room) = r.room() {
        item.insert(attr::ROOM.to_owned(), s(room.as_str()));
    }
    for (q, v) in r.measurement.values() {
        item.insert(q.name().to_owned(), n(*v));
    }
    if let Some(z) = z_key(r).filter(|_| indexes.box_search) {
        item.insert(attr::Z.to_owned(), AttributeValue::S(z));
    }
    if let Some(at) = expiry.at(r.timestamp) {
        item.insert("expires_at".to_owned(), AttributeValue::N(at.to_string()));
    }
    item
}

/// `v.to_string()`, which is what items have always held, made faster: whole
/// numbers through `itoa`, others through `ryu`, which finds the same shortest
/// digits and differs only in notation (`1e-7`, `350.0`), where it is not used.
/// Up to 15 significant digits the shortest digits are unique; at 16 or 17
/// two candidates can both read back as `v`, and `ryu` and the standard
/// library may pick different ones (the proptest found
/// -86297359095747.62 against .63), so those go to `to_string`.
fn number_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 && !(v == 0.0 && v.is_sign_negative()) {
        return itoa::Buffer::new().format(v as i64).to_owned();
    }
    if v.is_finite() && (1e-4..1e15).contains(&v.abs()) {
        let mut buffer = ryu::Buffer::new();
        let text = buffer.format_finite(v);
        let significant = text
            .bytes()
            .filter(u8::is_ascii_digit)
            .skip_while(|d| *d == b'0')
            .count();
        if !text.contains('e') && significant <= 15 {
            return text.to_owned();
        }
    }
    v.to_string()
}

pub(super) fn decode_reading(item: &Item) -> Result<Reading, StoreError> {
    let item: ReadingItem =
        serde_dynamo::from_item(item.clone()).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    item.into_reading().map_err(StoreError::Corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::Measurement;
    use proptest::prelude::*;
    use storage::Retention;

    proptest! {
        /// Stored number text never changes with the faster formatter.
        #[test]
        fn number_text_is_exactly_to_string(bits in any::<u64>(), small in -1e10f64..1e10, whole in -1e16f64..1e16) {
            let v = f64::from_bits(bits);
            prop_assert_eq!(number_text(v), v.to_string());
            prop_assert_eq!(number_text(small), small.to_string());
            prop_assert_eq!(number_text(whole.trunc()), whole.trunc().to_string());
            let cents = (small * 100.0).round() / 100.0;
            prop_assert_eq!(number_text(cents), cents.to_string());
        }
    }

    #[test]
    fn number_text_edges() {
        for v in [
            -86297359095747.62, // ryu and to_string differ at 16 digits
            f64::from_bits(14038739469868593384),
            0.0,
            -0.0,
            1e-4,
            9.99e-5,
            1e15,
            999999999999999.9,
            -1e15,
            0.1,
            5210.125,
            1e-100,
            f64::MAX,
        ] {
            assert_eq!(number_text(v), v.to_string(), "{v:e}");
        }
    }

    #[test]
    fn the_fast_item_builder_makes_exactly_the_codec_s_item() {
        let ts = Timestamp::parse("2026-11-21T01:02:03.456Z").unwrap();
        let power = Reading {
            device_id: DeviceId::parse("meter-1").unwrap(),
            timestamp: ts,
            measurement: Measurement::power(5210.125, 0.0, -350.5).unwrap(),
        };
        let climate = Reading {
            device_id: DeviceId::parse("s:1").unwrap(),
            timestamp: ts,
            measurement: Measurement::climate(RoomId::parse("bed").unwrap(), -0.25, 100.0).unwrap(),
        };
        for r in [&power, &climate] {
            for retention in [None, Retention::days(30)] {
                let via_codec: Item =
                    serde_dynamo::to_item(ReadingItem::stored(r, retention, 7)).unwrap();
                let expiry = Expiry {
                    retention,
                    raw: None,
                    now: 0,
                };
                assert_eq!(
                    reading_item(r, &expiry, 7, Indexes::ALL),
                    via_codec,
                    "{r:?} {retention:?}"
                );
            }
        }
    }
}
