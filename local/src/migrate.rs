//! `ingester-local migrate`: copies every reading, name and registry entry from
//! one store to another (the embedded file and any DynamoDB table, either way),
//! through the migrate use case (`shared::migrate`), so it is the same code in
//! both directions. Here: the checkpoint and the progress.
//!
//! * After each page the position reached (device, time) is saved to a
//!   checkpoint file, atomically (write, then rename). A run that is stopped or
//!   killed resumes after it; a finished run's checkpoint says so, and a re-run
//!   copies nothing.
//! * Last, both sides are counted, device by device: the run fails if the
//!   target has fewer readings than the source.

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use shared::migrate::{copy_alert_rules, copy_page, copy_registry, count, source_registry};
use shared::model::{DeviceId, Timestamp};
use shared::store::{Alerts, Store};
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
    let registry = source_registry(from).await?;
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
            while let Some(got) = copy_page(from, to, device, after, page).await? {
                summary.copied += got.copied as u64;
                checkpoint.copied += got.copied as u64;
                checkpoint.device = Some(device.to_string());
                checkpoint.timestamp_ms = Some(got.last.millis());
                checkpoint.save(checkpoint_path)?;
                bar.set_message(format!("{} readings copied", checkpoint.copied));
                after = Some(got.last);
                if !got.more {
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
