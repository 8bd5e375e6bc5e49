//! `serve --backup-dir`: a backup of the store's file at start and then at
//! every interval (`shared::store::sqlite::backup`), named by its UTC time,
//! the oldest removed past `--backup-keep`; reported in `GET /health` and
//! logged. A failed backup is tried again at the next interval; ingest never
//! waits for one (docs/backup.md).

use shared::api::backup_health::{BackupHealth, LastBackup};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What the schedule is asked to do.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub db: PathBuf,
    pub dir: PathBuf,
    pub every: Duration,
    pub keep: usize,
    /// Stores up to this size are copied through memory (`backup_with_limit`).
    pub in_memory_up_to: u64,
}

const PREFIX: &str = "ingester-";
const SUFFIX: &str = ".db";

/// Runs until the task is dropped.
pub async fn run(schedule: Schedule, health: Arc<BackupHealth>) {
    loop {
        match once(&schedule).await {
            Ok(last) => {
                tracing::info!(file = %last.file, readings = last.readings, "backup written");
                health.succeeded(last);
            }
            Err(e) => {
                tracing::warn!(error = %e, dir = %schedule.dir.display(), "backup failed; trying again at the next interval");
                health.failed(e);
            }
        }
        tokio::time::sleep(schedule.every).await;
    }
}

async fn once(schedule: &Schedule) -> Result<LastBackup, String> {
    let now = chrono::Utc::now();
    let name = format!("{PREFIX}{}{SUFFIX}", now.format("%Y%m%dT%H%M%S%.3fZ"));
    let to = schedule.dir.join(&name);
    std::fs::create_dir_all(&schedule.dir)
        .map_err(|e| format!("{}: {e}", schedule.dir.display()))?;
    let done =
        shared::store::sqlite::backup_with_limit(&schedule.db, &to, schedule.in_memory_up_to)
            .await
            .map_err(|e| e.to_string())?;
    rotate(&schedule.dir, schedule.keep).map_err(|e| format!("removing old backups: {e}"))?;
    Ok(LastBackup {
        file: to.display().to_string(),
        at: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        readings: done.readings,
    })
}

/// Removes the oldest backups of the schedule past the newest `keep`.
fn rotate(dir: &Path, keep: usize) -> std::io::Result<()> {
    let mut ours: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        })
        .collect();
    // Their names are their UTC times: in name order, oldest first.
    ours.sort();
    let extra = ours.len().saturating_sub(keep);
    for old in &ours[..extra] {
        std::fs::remove_file(old)?;
    }
    Ok(())
}

/// `--backup-every`: `24h`, `30m`, `90s`, `7d` (the model's one parser; not zero).
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    shared::model::parse_interval(text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_a_number_and_a_unit() {
        assert_eq!(parse_interval("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_interval("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("7d"), Ok(Duration::from_secs(7 * 86_400)));
        for bad in ["", "h", "24", "0h", "1w", "-1h", "1.5h"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rotation_keeps_the_newest_of_ours_only() {
        let dir = std::env::temp_dir().join(format!("rotate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "ingester-20261101T000000.000Z.db",
            "ingester-20261102T000000.000Z.db",
            "ingester-20261103T000000.000Z.db",
            "notes.txt",
            ".ingester-20261104T000000.000Z.db.partial",
        ] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        rotate(&dir, 2).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".ingester-20261104T000000.000Z.db.partial",
                "ingester-20261102T000000.000Z.db",
                "ingester-20261103T000000.000Z.db",
                "notes.txt"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
