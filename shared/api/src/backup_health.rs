//! What `GET /health` shows of the scheduled backups (`ingester-local serve
//! --backup-dir`): the last success, the last error, and how many of each.
//! The schedule updates it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct BackupHealth {
    successes: AtomicU64,
    failures: AtomicU64,
    last: Mutex<BackupReport>,
}

/// The report of `GET /health`'s `backup` check.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackupReport {
    pub successes: u64,
    pub failures: u64,
    /// The last backup written: its file, time (UTC) and readings.
    pub last_success: Option<LastBackup>,
    /// Why the last attempt failed, when it did (cleared by a success).
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LastBackup {
    pub file: String,
    pub at: String,
    pub readings: u64,
}

impl BackupHealth {
    pub fn succeeded(&self, last: LastBackup) {
        self.successes.fetch_add(1, Ordering::Relaxed);
        let mut report = self.last.lock().unwrap_or_else(|p| p.into_inner());
        report.last_success = Some(last);
        report.last_error = None;
    }

    pub fn failed(&self, why: impl Into<String>) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_error = Some(why.into());
    }

    pub fn report(&self) -> BackupReport {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        BackupReport {
            successes: self.successes.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            ..last
        }
    }
}
