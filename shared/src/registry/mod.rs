//! Registry maintenance (a use case): a planned batch of changes
//! (`domain::registry::plan`) is applied to a store, one write per device and
//! per room; the stores apply them monotonically, so duplicate and
//! out-of-order delivery converge. Also the cold-start cache of the registry.

mod cache;

pub use cache::RegistryCache;

use crate::domain::registry::RegistryPlan;
use crate::store::{Store, StoreError};
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;

/// How many registry writes run at once.
const APPLY_CONCURRENCY: usize = 8;

/// One registry write; its error carries the first record it stands for.
type RegistryWriteFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(), (usize, StoreError)>> + Send + 'a>>;

/// Applies a plan; returns the `first_record` of every update that failed.
pub async fn apply<S: Store>(store: &S, plan: &RegistryPlan) -> Vec<usize> {
    // Futures are built up front: a stream of closures that borrow their
    // argument would not be `Send` for every lifetime once spawned.
    let mut writes: Vec<RegistryWriteFuture<'_>> = Vec::with_capacity(plan.writes());
    for p in &plan.devices {
        let fut = store.apply_device_update(&p.update);
        writes.push(Box::pin(async move {
            fut.await.map_err(|e| (p.first_record, e))
        }));
    }
    for p in &plan.rooms {
        let fut = store.apply_room_update(&p.update);
        writes.push(Box::pin(async move {
            fut.await.map_err(|e| (p.first_record, e))
        }));
    }
    let results: Vec<_> = futures_util::stream::iter(writes)
        .buffer_unordered(APPLY_CONCURRENCY)
        .collect()
        .await;
    results
        .into_iter()
        .filter_map(|r| r.err())
        .map(|(record, err)| {
            tracing::error!(error = %err, record, "registry update failed");
            record
        })
        .collect()
}
