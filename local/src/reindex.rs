//! `ingester-local reindex`: parallel Scan segments over a DynamoDB table,
//! each reading given the keys of the enabled optional indexes
//! (`DynamoStore::reindex_page`), with a progress bar and a checkpoint file
//! that a stopped run resumes from (docs/cost.md, docs/all-devices.md).

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use shared::store::dynamodb::ScanKey;
use shared::store::DynamoStore;
use std::path::Path;
use std::sync::Mutex;

/// Readings per Scan page.
pub const PAGE: i32 = 500;

/// Where each segment stands, kept after every page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub segments: i32,
    /// Per segment: the last key read (`None` before the first page).
    pub next: Vec<Option<ScanKey>>,
    pub done: Vec<bool>,
    pub scanned: u64,
    pub updated: u64,
}

impl Checkpoint {
    fn fresh(segments: i32) -> Self {
        Self {
            segments,
            next: vec![None; segments as usize],
            done: vec![false; segments as usize],
            ..Self::default()
        }
    }

    /// The saved one for this many segments, or a fresh one.
    pub fn load_or_new(path: &Path, segments: i32) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let saved: Checkpoint = serde_json::from_str(&text)
                    .map_err(|e| format!("{}: not a reindex checkpoint: {e}", path.display()))?;
                if saved.segments != segments {
                    return Err(format!(
                        "{} was written by a run with --segments {}: use that, or delete the file to start over",
                        path.display(),
                        saved.segments
                    ));
                }
                Ok(saved)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::fresh(segments)),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    fn save(&self, path: &Path) -> Result<(), String> {
        save_json(self, path)
    }
}

/// Saves a checkpoint as JSON: written then renamed, so a crash never
/// leaves half of one (`blocks rebuild`'s too).
pub fn save_json(value: &impl Serialize, path: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs (or resumes) a reindex; returns the finished checkpoint's counts.
pub async fn run(
    store: &DynamoStore,
    segments: i32,
    checkpoint: &Path,
    bar: bool,
) -> Result<Checkpoint, String> {
    let state = Mutex::new(Checkpoint::load_or_new(checkpoint, segments)?);
    let total = store.approximate_item_count().await.unwrap_or(0);
    let progress = if bar {
        ProgressBar::new(total.max(1))
    } else {
        ProgressBar::hidden()
    };
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} readings {pos}/~{len} {wide_bar} {msg} ({elapsed})",
        )
        .map_err(|e| e.to_string())?,
    );
    progress.set_position(state.lock().unwrap().scanned);
    let segment = |i: i32| {
        let state = &state;
        let progress = &progress;
        async move {
            loop {
                let start = {
                    let s = state.lock().unwrap();
                    if s.done[i as usize] {
                        return Ok::<(), String>(());
                    }
                    s.next[i as usize].clone()
                };
                let page = store
                    .reindex_page(i, segments, start.as_ref(), PAGE)
                    .await
                    .map_err(|e| format!("segment {i}: {e}"))?;
                let mut s = state.lock().unwrap();
                s.scanned += page.scanned as u64;
                s.updated += page.updated as u64;
                s.done[i as usize] = page.next.is_none();
                s.next[i as usize] = page.next;
                s.save(checkpoint)?;
                progress.set_position(s.scanned);
                progress.set_message(format!("{} updated", s.updated));
            }
        }
    };
    let results = futures_util::future::join_all((0..segments).map(segment)).await;
    progress.finish_and_clear();
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    // Every reading seen: room presence is complete, DEVICE items leave `room`.
    store
        .finish_registry_upgrade()
        .await
        .map_err(|e| format!("registry upgrade: {e}"))?;
    let done = state.into_inner().unwrap();
    // Finished: nothing to resume.
    std::fs::remove_file(checkpoint).ok();
    Ok(done)
}
