//! Rollups on the embedded store: kept in the readings' own write
//! transaction, rebuilt in one.

use crate::SqliteStore;
use domain::model::{DeviceId, Quantity, Span, TimeRange, Timestamp};
use domain::rollup_upkeep::{at_once, rebuild};
use std::collections::BTreeSet;
use storage::format::rollup_body::VERSION_5;
use storage::{RegistryStore, RollupWrites, StoreError, Upkeep};

impl Upkeep for SqliteStore {
    async fn refresh_rollups(
        &self,
        _device: &DeviceId,
        _hours: BTreeSet<Timestamp>,
    ) -> Result<RollupWrites, StoreError> {
        // Kept in the readings' own write transaction (`keep`).
        Ok(RollupWrites::default())
    }

    /// In one write transaction.
    async fn rebuild_rollups(
        &self,
        device: &DeviceId,
        range: TimeRange,
    ) -> Result<usize, StoreError> {
        self.in_rollup_transaction(device, move |spans| at_once(rebuild(spans, range)))
            .await
            .map(Option::unwrap_or_default)
    }

    /// A gas or water meter with a day rollup in a body older than version
    /// 5 (the first with those counters): its days from the first such
    /// rollup to the last.
    async fn stale_rollups(&self) -> Result<Vec<(DeviceId, TimeRange)>, StoreError> {
        let registry = self.load_registry().await?;
        let stale: Vec<(String, i64, i64)> = self.read(|conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT n.text, MIN(r.start), MAX(r.start) FROM rollups r
                     JOIN names n ON n.id = r.device AND n.kind = 0
                     WHERE substr(r.body, 1, 1) < ?1 GROUP BY r.device",
                )
                .map_err(crate::db_err)?;
            let rows = stmt
                .query_map([vec![VERSION_5]], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(crate::db_err)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(crate::db_err)
        })?;
        let mut out = Vec::new();
        for (name, first, last) in stale {
            let Ok(device) = DeviceId::parse(&name) else {
                continue;
            };
            let counts_volumes = registry.devices.get(&device).is_some_and(|d| {
                d.quantities
                    .iter()
                    .any(|q| matches!(q, Quantity::Gas | Quantity::Water))
            });
            let span = (Timestamp::from_millis(first), Timestamp::from_millis(last));
            if let (true, Ok(from), Ok(last)) = (counts_volumes, span.0, span.1) {
                let to = Span::Day.end_of(last);
                out.extend(TimeRange::new(from, to).ok().map(|r| (device, r)));
            }
        }
        Ok(out)
    }
}
