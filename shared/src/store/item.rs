//! The item layout of DESIGN §3 as serde structs. One codec serves every
//! engine: `serde_dynamo` maps it to SDK items and to stream images alike.

use super::{DeviceRecord, RoomRecord};
use crate::keys::{self, DEVICE_PARTITION, ROOM_PARTITION};
use crate::model::{
    Climate, DeviceId, Measurement, Power, Reading, ReadingKind, RoomId, Timestamp,
};
use serde::{Deserialize, Serialize};

/// A reading item: `pk=<device>`, `sk=TS#<ts>`, `type` and the measurement's attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadingItem {
    pub pk: String,
    pub sk: String,
    /// Absent in `room-time` index items (projection INCLUDE temperature, humidity).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative_kwh_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative_kwh_n: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub humidity: Option<f64>,
    /// Epoch seconds after which the reading is expired (TTL attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Climate readings only: the Z-order key of the `room-z` and `device-z`
    /// indexes. Derived from the other attributes; never read back into a reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<String>,
    /// The `all-time` index keys (`ALL#<n>`, `TS#<ts>#<device>`); derived, never read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ats: Option<String>,
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
        let mut item = ReadingItem {
            pk: keys::reading_pk(&r.device_id).to_owned(),
            sk: keys::reading_sk(r.timestamp),
            kind: Some(r.kind().as_str().to_owned()),
            cumulative_kwh_p: None,
            cumulative_kwh_n: None,
            current_w: None,
            room: None,
            temperature: None,
            humidity: None,
            expires_at: None,
            z: None,
            shard: None,
            ats: None,
        };
        match &r.measurement {
            Measurement::Power(p) => {
                item.cumulative_kwh_p = Some(p.cumulative_kwh_p());
                item.cumulative_kwh_n = Some(p.cumulative_kwh_n());
                item.current_w = Some(p.current_w());
            }
            Measurement::Climate(c) => {
                item.room = Some(c.room().as_str().to_owned());
                item.temperature = Some(c.temperature());
                item.humidity = Some(c.humidity());
                item.z = Some(
                    keys::zorder::ZKey::of(
                        &r.device_id,
                        r.timestamp,
                        c.temperature(),
                        c.humidity(),
                    )
                    .into_string(),
                );
            }
        }
        item
    }

    /// True when the keys are those of a reading (not a registry or other item).
    pub fn is_reading_key(pk: &str, sk: &str) -> bool {
        pk != DEVICE_PARTITION && pk != ROOM_PARTITION && keys::parse_reading_sk(sk).is_some()
    }

    pub fn into_reading(self) -> Result<Reading, String> {
        let device_id = DeviceId::parse(&self.pk).map_err(|e| format!("pk {:?}: {e}", self.pk))?;
        let timestamp = keys::parse_reading_sk(&self.sk)
            .ok_or_else(|| format!("sk {:?} is not a reading key", self.sk))?;
        let kind = match (&self.kind, &self.room) {
            (Some(k), _) => ReadingKind::parse(k).ok_or_else(|| format!("unknown type {k:?}"))?,
            (None, Some(_)) => ReadingKind::Climate, // an index item: only climate readings carry `room`
            (None, None) => return Err("no type".into()),
        };
        let missing = |f: &str| {
            format!(
                "{} reading {}/{} lacks {f}",
                kind.as_str(),
                self.pk,
                self.sk
            )
        };
        let measurement = match kind {
            ReadingKind::Power => Measurement::Power(
                Power::new(
                    self.cumulative_kwh_p
                        .ok_or_else(|| missing("cumulative_kwh_p"))?,
                    self.cumulative_kwh_n
                        .ok_or_else(|| missing("cumulative_kwh_n"))?,
                    self.current_w.ok_or_else(|| missing("current_w"))?,
                )
                .map_err(describe)?,
            ),
            ReadingKind::Climate => {
                let room = self.room.as_deref().ok_or_else(|| missing("room"))?;
                let room = RoomId::parse(room).map_err(|e| format!("room {room:?}: {e}"))?;
                Measurement::Climate(
                    Climate::new(
                        room,
                        self.temperature.ok_or_else(|| missing("temperature"))?,
                        self.humidity.ok_or_else(|| missing("humidity"))?,
                    )
                    .map_err(describe)?,
                )
            }
        };
        Ok(Reading {
            device_id,
            timestamp,
            measurement,
        })
    }
}

fn describe(problems: Vec<crate::model::FieldProblem>) -> String {
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
    pub cumulative_kwh_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative_kwh_n: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub humidity: Option<f64>,
}

impl SnapshotItem {
    pub fn from_reading(r: &Reading) -> Self {
        let item = ReadingItem::from_reading(r);
        SnapshotItem {
            device_id: r.device_id.to_string(),
            timestamp: r.timestamp.to_string(),
            kind: r.kind().as_str().to_owned(),
            cumulative_kwh_p: item.cumulative_kwh_p,
            cumulative_kwh_n: item.cumulative_kwh_n,
            current_w: item.current_w,
            room: item.room,
            temperature: item.temperature,
            humidity: item.humidity,
        }
    }

    pub fn into_reading(self) -> Result<Reading, String> {
        let ts =
            Timestamp::parse(&self.timestamp).map_err(|e| format!("snapshot timestamp: {e}"))?;
        ReadingItem {
            pk: self.device_id,
            sk: keys::reading_sk(ts),
            kind: Some(self.kind),
            cumulative_kwh_p: self.cumulative_kwh_p,
            cumulative_kwh_n: self.cumulative_kwh_n,
            current_w: self.current_w,
            room: self.room,
            temperature: self.temperature,
            humidity: self.humidity,
            expires_at: None,
            z: None,
            shard: None,
            ats: None,
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
        Ok(DeviceRecord {
            device_id: DeviceId::parse(&self.sk)
                .map_err(|e| format!("device {:?}: {e}", self.sk))?,
            name: self.name,
            types: self
                .types
                .iter()
                .map(|t| ReadingKind::parse(t).ok_or_else(|| format!("unknown type {t:?}")))
                .collect::<Result<_, _>>()?,
            room: self
                .room
                .map(|r| RoomId::parse(&r).map_err(|e| format!("room {r:?}: {e}")))
                .transpose()?,
            first_seen: opt_ts("first_seen", self.first_seen)?,
            last_seen: opt_ts("last_seen", self.last_seen)?,
            latest: self.latest.map(SnapshotItem::into_reading).transpose()?,
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
