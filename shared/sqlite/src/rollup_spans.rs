//! The rollups use case's primitives on the embedded store, inside a write
//! transaction: each answers at once (the use case runs them without a runtime).

use super::rollups as rollup_rows;
use super::rows::Bounds;
use super::series;
use super::StoreError;
use domain::aggregate::rollup::Rollup;
use domain::model::{DeviceId, Reading, Span, TimeRange, Timestamp};
use rusqlite::Connection;
use std::collections::BTreeSet;
use storage::{Keeping, Order, RollupSpans};

/// One device's rollups and readings in a transaction.
pub struct TxSpans<'a> {
    pub(super) tx: &'a Connection,
    pub(super) device: i64,
    pub(super) device_id: &'a DeviceId,
    /// The writer's clock: which days are closed (`blocks::closed`).
    pub(super) now_ms: i64,
}

fn bounds(range: &TimeRange) -> Bounds {
    Bounds {
        lo: range.from().millis(),
        hi: range.to().millis() - 1,
    }
}

impl RollupSpans for TxSpans<'_> {
    type Error = StoreError;
    fn keeping(&self) -> Keeping {
        Keeping::DaysInTheWrite
    }

    async fn readings(&mut self, range: &TimeRange) -> Result<Vec<Reading>, StoreError> {
        // Every reading of the span, however dense: a rollup of some of
        // them would be wrong.
        series::device_readings(
            self.tx,
            self.device,
            self.device_id,
            bounds(range),
            Order::Asc,
            usize::MAX >> 1,
        )
    }

    async fn reading_times(
        &mut self,
        range: &TimeRange,
    ) -> Result<Option<(Timestamp, Timestamp)>, StoreError> {
        let Some((first, last)) = series::time_span(self.tx, self.device, self.device_id)? else {
            return Ok(None);
        };
        let b = bounds(range);
        let (first, last) = (first.max(b.lo), last.min(b.hi));
        if first > last {
            return Ok(None);
        }
        let time = |ms| Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(e.to_string()));
        Ok(Some((time(first)?, time(last)?)))
    }

    async fn first_reading_before(
        &mut self,
        t: Timestamp,
    ) -> Result<Option<Timestamp>, StoreError> {
        let first = series::time_span(self.tx, self.device, self.device_id)?
            .map(|(first, _)| first)
            .filter(|first| *first < t.millis());
        first
            .map(|ms| Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()
    }

    async fn hours_with_readings(
        &mut self,
        from: Timestamp,
    ) -> Result<BTreeSet<Timestamp>, StoreError> {
        let all =
            TimeRange::new(from, Timestamp::MAX).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(self
            .readings(&all)
            .await?
            .iter()
            .map(|r| Span::Hour.start_of(r.timestamp))
            .collect())
    }

    async fn before(&mut self, span: Span, start: Timestamp) -> Result<Option<Rollup>, StoreError> {
        rollup_rows::latest_before(self.tx, self.device, span, start.millis())
    }

    async fn after(&mut self, span: Span, start: Timestamp) -> Result<Option<Rollup>, StoreError> {
        rollup_rows::first_after(self.tx, self.device, span, start.millis())
    }

    async fn within(&mut self, span: Span, range: &TimeRange) -> Result<Vec<Rollup>, StoreError> {
        Ok(rollup_rows::within(
            self.tx,
            (self.device, self.device_id),
            span,
            range,
            None,
            None,
        )?
        .0)
    }

    async fn starts(
        &mut self,
        span: Span,
        range: &TimeRange,
    ) -> Result<BTreeSet<Timestamp>, StoreError> {
        rollup_rows::starts(
            self.tx,
            self.device,
            span,
            range.from().millis(),
            range.to().millis(),
        )?
        .into_iter()
        .map(|ms| Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
    }

    async fn put(
        &mut self,
        rollup: &Rollup,
        _readings: &[Reading],
    ) -> Result<Option<f64>, StoreError> {
        rollup_rows::put(self.tx, self.device, rollup, self.now_ms)?;
        Ok(Some(0.0))
    }

    async fn delete(&mut self, span: Span, start: Timestamp) -> Result<Option<f64>, StoreError> {
        rollup_rows::delete(self.tx, self.device, span, start.millis())?;
        Ok(Some(0.0))
    }
}
