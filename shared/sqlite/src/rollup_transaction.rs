//! A device's rollup primitives in one write transaction (`rebuild`).

use super::SqliteStore;
use crate::{names, rollup_spans};
use domain::model::{DeviceId, Timestamp};
use storage::StoreError;

impl SqliteStore {
    /// Runs `work` over a device's rollup primitives in one write
    /// transaction (the rollups use case's `rebuild`); `None` for a device
    /// without readings.
    pub async fn in_rollup_transaction<T: Send + 'static>(
        &self,
        device: &DeviceId,
        work: impl FnOnce(&mut rollup_spans::TxSpans<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        let device = device.clone();
        self.blocking(move |s| {
            s.write(|tx, _, cache| {
                let Some(id) = names::find(tx, names::DEVICE, device.as_str())? else {
                    return Ok(None);
                };
                // What an append would continue may change.
                cache.spans.retain(|(d, _), _| *d != id);
                let mut spans = rollup_spans::TxSpans {
                    tx,
                    device: id,
                    device_id: &device,
                    now_ms: Timestamp::now().millis(),
                };
                work(&mut spans).map(Some)
            })
        })
        .await
    }
}
