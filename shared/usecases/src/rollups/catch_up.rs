//! Upgrades finish themselves (issue 79): rollups an earlier version wrote
//! in a shape that does not stand for all a device reports (a gas or water
//! meter's, from before those counters were kept) are rebuilt when the
//! store opens, in the background, a device at a time, with progress in
//! the log and on `GET /health`. Answers stay right meanwhile: a rollup
//! that does not stand for a counter's readings is read past, to the
//! readings (docs/rollups.md), only dearer. A stop part way leaves the
//! rest stale, and the next start rebuilds it: what is stale is read from
//! the store, not remembered.

use domain::model::DeviceId;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use storage::Upkeep;

/// How far the rebuild is, for `GET /health`.
#[derive(Debug, Default)]
pub struct CatchUp {
    devices: AtomicUsize,
    done: AtomicUsize,
    finished: AtomicBool,
    last_error: Mutex<Option<String>>,
}

/// What `GET /health` shows of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatchUpReport {
    /// Devices whose rollups predate this version, and how many are rebuilt.
    pub devices: usize,
    pub rebuilt: usize,
    pub finished: bool,
    pub last_error: Option<String>,
}

impl CatchUp {
    pub fn report(&self) -> CatchUpReport {
        CatchUpReport {
            devices: self.devices.load(Ordering::Relaxed),
            rebuilt: self.done.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            last_error: self.last_error.lock().expect("progress").clone(),
        }
    }

    fn failed(&self, device: &DeviceId, e: impl std::fmt::Display) {
        tracing::error!(device = %device, error = %e, "rollups not rebuilt; the next start tries again");
        *self.last_error.lock().expect("progress") = Some(format!("{device}: {e}"));
    }
}

/// Rebuilds every device's stale rollups (module comment); the devices
/// rebuilt.
pub async fn catch_up<S: Upkeep>(store: &S, progress: &CatchUp) -> usize {
    let stale = match store.stale_rollups().await {
        Ok(stale) => stale,
        Err(e) => {
            tracing::error!(error = %e, "could not tell which rollups predate this version");
            *progress.last_error.lock().expect("progress") = Some(e.to_string());
            progress.finished.store(true, Ordering::Relaxed);
            return 0;
        }
    };
    progress.devices.store(stale.len(), Ordering::Relaxed);
    if !stale.is_empty() {
        tracing::info!(
            devices = stale.len(),
            "rollups of an earlier version: rebuilding them in the background (answers stay right meanwhile)"
        );
    }
    let mut rebuilt = 0;
    for (i, (device, range)) in stale.iter().enumerate() {
        match store.rebuild_rollups(device, *range).await {
            Ok(rollups) => {
                rebuilt += 1;
                progress.done.store(rebuilt, Ordering::Relaxed);
                tracing::info!(device = %device, rollups, progress = format!("{} of {}", i + 1, stale.len()), "rollups rebuilt");
            }
            Err(e) => progress.failed(device, e),
        }
    }
    if !stale.is_empty() {
        tracing::info!(
            rebuilt,
            of = stale.len(),
            "rollups of an earlier version rebuilt"
        );
    }
    progress.finished.store(true, Ordering::Relaxed);
    rebuilt
}
