//! The body of `PUT /devices/{id}` and `PUT /rooms/{id}`: what a user sets.

use super::ApiError;
use domain::model::{Name, RoomId};
use serde_json::Value;
use usecases::ingest::IngestError;

/// Largest body accepted by a PUT (the route's `layers::body_limit`).
pub const MAX_PROFILE_BYTES: usize = 4096;

pub struct Profile {
    /// `None`: remove the name (`"name": null`).
    pub name: Option<Name>,
    /// Devices only; `None`: leave the room as it is.
    pub room: Option<RoomId>,
}

/// `{"name": string | null}` plus, for a device, an optional `"room"`.
/// `name` is required (a PUT states the whole user-set profile); other fields are rejected.
pub fn parse(body: &[u8], device: bool) -> Result<Profile, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::Ingest(IngestError::InvalidJson {
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })
    })?;
    let Some(obj) = value.as_object() else {
        return Err(ApiError::InvalidBody(vec![(
            "".into(),
            "must be a JSON object".into(),
        )]));
    };
    let mut problems = Vec::new();
    let name = match obj.get("name") {
        None => {
            problems.push(("name".into(), "is required (null removes the name)".into()));
            None
        }
        Some(Value::Null) => None,
        Some(Value::String(s)) => Name::parse(s)
            .map_err(|m| problems.push(("name".into(), m)))
            .ok(),
        Some(_) => {
            problems.push(("name".into(), "must be a string or null".into()));
            None
        }
    };
    let room = match obj.get("room") {
        Some(_) if !device => None, // reported as unknown below
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => RoomId::parse(s)
            .map_err(|e| problems.push(("room".into(), e.to_string())))
            .ok(),
        Some(_) => {
            problems.push(("room".into(), "must be a string".into()));
            None
        }
    };
    for key in obj.keys() {
        if key != "name" && !(device && key == "room") {
            problems.push((
                key.clone(),
                format!(
                    "unknown field (known: {})",
                    if device { "name, room" } else { "name" }
                ),
            ));
        }
    }
    if problems.is_empty() {
        Ok(Profile { name, room })
    } else {
        Err(ApiError::InvalidBody(problems))
    }
}
