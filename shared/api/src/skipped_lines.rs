//! What `GET /health` shows of the lines the InfluxDB write API skipped
//! since the process started: how many, and one with why (the first of the
//! latest request that skipped any: a Home
//! Assistant entity in `%` without a class, another program's metrics). A
//! user whose entity never shows up finds the reason there; the answer's
//! `X-Ingester-Skipped-Lines` header is seen by no one.

use std::sync::Mutex;
use usecases::ingest::Skipped;

#[derive(Debug, Default)]
pub struct SkippedLines {
    report: Mutex<SkippedReport>,
}

/// The report of `GET /health`'s `line protocol` check.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SkippedReport {
    pub skipped: u64,
    pub last_skipped: Option<String>,
}

impl SkippedLines {
    /// Counts a request's skipped lines, keeping the one it words.
    pub fn record(&self, skipped: &Skipped) {
        if skipped.lines == 0 {
            return;
        }
        let mut report = self.report.lock().unwrap_or_else(|p| p.into_inner());
        report.skipped += skipped.lines as u64;
        if let Some(last) = &skipped.first {
            report.last_skipped = Some(last.clone());
        }
    }

    /// The report, once a line was skipped.
    pub fn report(&self) -> Option<SkippedReport> {
        let report = self.report.lock().unwrap_or_else(|p| p.into_inner());
        (report.skipped > 0).then(|| report.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_the_last_reason_is_kept() {
        let health = SkippedLines::default();
        assert_eq!(health.report(), None, "nothing skipped: no check");
        health.record(&Skipped::default());
        assert_eq!(health.report(), None);
        for (lines, last) in [(2, "cpu,host=a: first"), (1, "%,entity_id=b: second")] {
            health.record(&Skipped {
                lines,
                first: Some(last.to_owned()),
            });
        }
        assert_eq!(
            health.report(),
            Some(SkippedReport {
                skipped: 3,
                last_skipped: Some("%,entity_id=b: second".to_owned()),
            })
        );
    }
}
