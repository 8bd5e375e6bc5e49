//! `ingester-local blocks rebuild`: every hour with readings of a DynamoDB
//! table gets its block (docs/blocks.md), device by device through
//! `rollups::Upkeep::rebuild_rollups` (which writes hour items as blocks), with a
//! progress bar and a checkpoint file naming the devices done, so a stopped
//! run resumes after them.

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use shared::model::{DeviceId, TimeRange, Timestamp};
use shared::store::{DynamoStore, Store};
use std::collections::BTreeSet;
use std::path::Path;

/// The devices a run has finished, kept after each one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub done: BTreeSet<String>,
    pub written: u64,
}

impl Checkpoint {
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a blocks checkpoint: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    fn save(&self, path: &Path) -> Result<(), String> {
        crate::reindex::save_json(self, path)
    }
}

/// The devices a rebuild covers (`rollups rebuild`'s and `blocks
/// rebuild`'s): every device with rollups to keep, or the one asked for,
/// which must have readings.
pub async fn devices_to_rebuild<S: Store>(
    store: &S,
    only: Option<DeviceId>,
) -> Result<Vec<DeviceId>, String> {
    let wanted = only.is_some();
    let devices = shared::rollups::devices(store, only)
        .await
        .map_err(|e| e.to_string())?;
    if wanted && devices.is_empty() {
        return Err("--device: no readings of that device".into());
    }
    Ok(devices)
}

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebuilt {
    /// Devices of the table (or the one asked for).
    pub devices: usize,
    /// Devices an earlier run had done, skipped.
    pub skipped: usize,
    /// Hour and day items written, this run and the ones it resumed.
    pub written: u64,
}

/// Rebuilds the blocks of every device (or `only`), resuming after the
/// devices `checkpoint` names; removes the checkpoint when all are done.
pub async fn rebuild(
    store: &DynamoStore,
    only: Option<DeviceId>,
    checkpoint: &Path,
) -> Result<Rebuilt, String> {
    let devices = devices_to_rebuild(store, only).await?;
    let mut saved = Checkpoint::load(checkpoint)?;
    let skipped = devices
        .iter()
        .filter(|d| saved.done.contains(d.as_str()))
        .count();
    let bar = ProgressBar::new(devices.len() as u64)
        .with_style(
            ProgressStyle::with_template(
                "{spinner} devices {pos}/{len} {wide_bar} {msg} ({elapsed}, {eta} left)",
            )
            .map_err(|e| e.to_string())?,
        )
        .with_position(skipped as u64);
    let all = TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN < MAX");
    let todo: Vec<&DeviceId> = devices
        .iter()
        .filter(|d| !saved.done.contains(d.as_str()))
        .collect();
    for device in todo {
        bar.set_message(device.to_string());
        let written = shared::rollups::rebuild_device(store, device, all)
            .await
            .map_err(|e| format!("{device}: {e} (run again to resume after the devices done)"))?;
        saved.done.insert(device.to_string());
        saved.written += written as u64;
        saved.save(checkpoint)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if checkpoint.exists() {
        std::fs::remove_file(checkpoint).map_err(|e| format!("{}: {e}", checkpoint.display()))?;
    }
    Ok(Rebuilt {
        devices: devices.len(),
        skipped,
        written: saved.written,
    })
}
