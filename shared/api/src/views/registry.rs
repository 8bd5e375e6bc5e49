//! A device and a room as the API shows them.

use domain::model::Reading;
use serde::Serialize;
use storage::{DeviceRecord, RoomRecord};

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
