//! `ingester-local migrate`: copies every reading, name and registry entry from
//! one store to another (the embedded file and any DynamoDB table, either way),
//! through the `Store` trait alone, so it is the same code in both directions.
//!
//! * Readings are copied device by device in time order, a page at a time, with
//!   the same idempotent puts as ingest: copying a reading twice stores it once.
//! * After each page the position reached (device, time) is saved to a
//!   checkpoint file, atomically (write, then rename). A run that is stopped or
//!   killed resumes after it; a finished run's checkpoint says so, and a re-run
//!   copies nothing.
//! * Then the registry: each device's and room's record (first and last seen,
//!   latest reading, types, quantities, room, devices) through the same
//!   monotonic updates the stream handler uses, the names users gave, and
//!   the alert rules.
//! * Last, both sides are counted, device by device: the run fails if the
//!   target has fewer readings than the source.
//!
//! Readings hidden by retention (expired, not yet deleted) are not copied.

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use shared::keys::Position;
use shared::model::{DeviceId, TimeRange, Timestamp};
use shared::store::{Alerts, DeviceUpdate, Order, RangeRequest, RoomUpdate, Store};
use std::path::Path;

/// What a run has reached, kept between runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The stores, as given: a checkpoint belongs to one pair.
    pub from: String,
    pub to: String,
    /// Every reading up to here, in (device, time) order, is copied.
    pub device: Option<String>,
    pub timestamp_ms: Option<i64>,
    /// Readings copied by all runs so far.
    pub copied: u64,
    /// Readings, registry and names all copied.
    pub done: bool,
}

impl Checkpoint {
    pub fn load(path: &Path) -> Result<Option<Self>, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("checkpoint {}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("checkpoint {}: {e}", path.display())),
        }
    }

    /// Written to a temporary file and renamed over the old one, so that a
    /// kill at any moment leaves the old checkpoint or the new, never half.
    fn save(&self, path: &Path) -> Result<(), String> {
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("checkpoint {}: {e}", path.display()))
    }

    fn after(&self, device: &DeviceId) -> Option<Option<Timestamp>> {
        match self.device.as_deref() {
            None => Some(None),
            Some(reached) if device.as_str() < reached => None, // done already
            Some(reached) if device.as_str() == reached => Some(
                self.timestamp_ms
                    .and_then(|ms| Timestamp::from_millis(ms).ok()),
            ),
            Some(_) => Some(None),
        }
    }
}

/// What a run did and found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub devices: usize,
    pub rooms: usize,
    /// Readings this run copied.
    pub copied: u64,
    pub source_readings: u64,
    pub target_readings: u64,
}

/// Readings per page read from the source (and written to the target).
pub const PAGE: usize = 1000;

fn everything() -> TimeRange {
    TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN is before MAX")
}

pub async fn run<A: Store + Alerts, B: Store + Alerts>(
    from: &A,
    to: &B,
    (from_name, to_name): (&str, &str),
    checkpoint_path: &Path,
    page: usize,
) -> Result<Summary, String> {
    let mut checkpoint = match Checkpoint::load(checkpoint_path)? {
        Some(c) if c.from == from_name && c.to == to_name => c,
        Some(c) => {
            return Err(format!(
                "{} is the checkpoint of a migration from {} to {}: give another --checkpoint, or remove it",
                checkpoint_path.display(),
                c.from,
                c.to
            ))
        }
        None => Checkpoint {
            from: from_name.to_owned(),
            to: to_name.to_owned(),
            ..Checkpoint::default()
        },
    };
    let registry = from
        .load_registry()
        .await
        .map_err(|e| format!("reading the source registry: {e}"))?;
    let mut summary = Summary {
        devices: registry.devices.len(),
        rooms: registry.rooms.len(),
        ..Summary::default()
    };
    let bar = ProgressBar::new(registry.devices.len() as u64).with_style(
        ProgressStyle::with_template("{spinner} devices {pos}/{len} {wide_bar} {msg} ({elapsed})")
            .map_err(|e| e.to_string())?,
    );
    if checkpoint.done {
        bar.println("already copied (the checkpoint says so): counting both sides");
    } else {
        for device in registry.devices.keys() {
            let Some(mut after) = checkpoint.after(device) else {
                bar.inc(1);
                continue;
            };
            loop {
                let request = RangeRequest {
                    range: everything(),
                    order: Order::Asc,
                    limit: page,
                    after: after.map(|timestamp| Position {
                        timestamp,
                        device_id: device.clone(),
                    }),
                };
                let got = from
                    .device_readings(device, &request)
                    .await
                    .map_err(|e| format!("reading {device}: {e}"))?;
                let Some(last) = got.readings.last().map(|r| r.timestamp) else {
                    break;
                };
                write_all(to, &got.readings).await?;
                summary.copied += got.readings.len() as u64;
                checkpoint.copied += got.readings.len() as u64;
                checkpoint.device = Some(device.to_string());
                checkpoint.timestamp_ms = Some(last.millis());
                checkpoint.save(checkpoint_path)?;
                bar.set_message(format!("{} readings copied", checkpoint.copied));
                after = Some(last);
                if got.next.is_none() {
                    break;
                }
            }
            bar.inc(1);
        }
        copy_registry(&registry, to).await?;
        copy_alert_rules(from, to).await?;
        checkpoint.done = true;
        checkpoint.save(checkpoint_path)?;
    }
    bar.finish_and_clear();
    // Verified by counting both sides.
    let mut short = Vec::new();
    for device in registry.devices.keys() {
        let source = count(from, device, page).await?;
        let target = count(to, device, page).await?;
        summary.source_readings += source;
        summary.target_readings += target;
        if target < source {
            short.push(format!(
                "{device}: {source} in the source, {target} in the target"
            ));
        }
    }
    if short.is_empty() {
        Ok(summary)
    } else {
        Err(format!(
            "the target is missing readings: {}",
            short.join("; ")
        ))
    }
}

/// Writes a page. The target's adapter owns retries (on DynamoDB, within
/// its operation budget); what it still could not store stops the copy,
/// which resumes from the checkpoint when run again.
async fn write_all<B: Store>(to: &B, readings: &[shared::model::Reading]) -> Result<(), String> {
    let report = to.write_readings(readings).await;
    if report.unwritten.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} readings could not be written to the target; run again to resume",
        report.unwritten.len()
    ))
}

async fn copy_registry<B: Store>(
    registry: &shared::store::RegistrySnapshot,
    to: &B,
) -> Result<(), String> {
    for d in registry.devices.values() {
        if let (Some(first_seen), Some(latest)) = (d.first_seen, &d.latest) {
            let update = DeviceUpdate {
                device_id: d.device_id.clone(),
                first_seen,
                latest: latest.clone(),
                types: d.types.clone(),
                quantities: d.quantities.clone(),
                room: d.room.clone(),
            };
            to.apply_device_update(&update)
                .await
                .map_err(|e| format!("registry of {}: {e}", d.device_id))?;
        }
        if d.name.is_some() || (d.latest.is_none() && d.room.is_some()) {
            let name = d
                .name
                .as_deref()
                .map(shared::model::Name::parse)
                .transpose();
            let name = name.map_err(|e| format!("name of {}: {e}", d.device_id))?;
            to.set_device_profile(&d.device_id, name.as_ref(), d.room.as_ref())
                .await
                .map_err(|e| format!("name of {}: {e}", d.device_id))?;
        }
    }
    for r in registry.rooms.values() {
        if let (Some(first_seen), Some(latest)) = (r.first_seen, &r.latest) {
            let update = RoomUpdate {
                room_id: r.room_id.clone(),
                first_seen,
                latest: latest.clone(),
                devices: r.devices.clone(),
                // The table's stream brings each migrated reading to the
                // registry function, which writes its presence.
                presence: Default::default(),
                record: true,
            };
            to.apply_room_update(&update)
                .await
                .map_err(|e| format!("registry of room {}: {e}", r.room_id))?;
        }
        if let Some(name) = &r.name {
            let name = shared::model::Name::parse(name)
                .map_err(|e| format!("name of room {}: {e}", r.room_id))?;
            to.set_room_name(&r.room_id, Some(&name))
                .await
                .map_err(|e| format!("name of room {}: {e}", r.room_id))?;
        }
    }
    Ok(())
}

/// The alert rules as they were put (docs/alerts.md); series states are not
/// copied: the target's first evaluation finds what fires.
async fn copy_alert_rules<A: Alerts, B: Alerts>(from: &A, to: &B) -> Result<(), String> {
    let rules = from
        .alert_rules()
        .await
        .map_err(|e| format!("reading the source's alert rules: {e}"))?;
    for (name, json) in rules {
        to.put_alert_rule(&name, &json)
            .await
            .map_err(|e| format!("alert rule {name}: {e}"))?;
    }
    Ok(())
}

/// A device's readings in a store, counted a page at a time.
async fn count<S: Store>(store: &S, device: &DeviceId, page: usize) -> Result<u64, String> {
    let mut total = 0;
    let mut after = None;
    loop {
        let request = RangeRequest {
            range: everything(),
            order: Order::Asc,
            limit: page,
            after,
        };
        let got = store
            .device_readings(device, &request)
            .await
            .map_err(|e| format!("counting {device}: {e}"))?;
        total += got.readings.len() as u64;
        match got.next {
            Some(next) => after = Some(next),
            None => return Ok(total),
        }
    }
}
