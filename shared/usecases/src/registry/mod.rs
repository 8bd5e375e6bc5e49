//! Registry maintenance (a use case): a planned batch of changes
//! (`domain::registry::plan`) is applied to a store, one write per device and
//! per room; the stores apply them monotonically, so duplicate and
//! out-of-order delivery converge. Also the cold-start cache of the registry.

mod cache;
mod known_rooms;
pub mod list;
pub mod profile;

pub use cache::{RegistryCache, SEED_BOUND};
pub use known_rooms::KnownRooms;

use domain::registry::RegistryPlan;
use domain::registry_writes::WrittenRegistry;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;
use storage::{Store, StoreError};

/// How many registry writes run at once.
const APPLY_CONCURRENCY: usize = 8;

/// One registry write; its error carries the first record it stands for.
type RegistryWriteFuture<'a> =
    Pin<Box<dyn Future<Output = (Which, Result<(), (usize, StoreError)>)> + Send + 'a>>;

/// Applies a plan; returns the `first_record` of every update that failed.
pub async fn apply<S: Store>(store: &S, plan: &RegistryPlan) -> Vec<usize> {
    apply_each(store, plan)
        .await
        .into_iter()
        .filter_map(|(_, r)| r.err())
        .collect()
}

/// Which update a result is for.
#[derive(Debug, Clone, Copy)]
enum Which {
    Device(usize),
    Room(usize),
}

/// Applies every update of a plan; each result says which update it is for.
async fn apply_each<S: Store>(store: &S, plan: &RegistryPlan) -> Vec<(Which, Result<(), usize>)> {
    // Futures are built up front: a stream of closures that borrow their
    // argument would not be `Send` for every lifetime once spawned.
    let mut writes: Vec<RegistryWriteFuture<'_>> = Vec::with_capacity(plan.writes());
    for (i, p) in plan.devices.iter().enumerate() {
        let fut = store.apply_device_update(&p.update);
        writes.push(Box::pin(async move {
            (Which::Device(i), fut.await.map_err(|e| (p.first_record, e)))
        }));
    }
    for (i, p) in plan.rooms.iter().enumerate() {
        let fut = store.apply_room_update(&p.update);
        writes.push(Box::pin(async move {
            (Which::Room(i), fut.await.map_err(|e| (p.first_record, e)))
        }));
    }
    let results: Vec<_> = futures_util::stream::iter(writes)
        .buffer_unordered(APPLY_CONCURRENCY)
        .collect()
        .await;
    results
        .into_iter()
        .map(|(which, r)| {
            (
                which,
                r.map_err(|(record, err)| {
                    tracing::error!(error = %err, record, "registry update failed");
                    record
                }),
            )
        })
        .collect()
}

/// The registry function's state from batch to batch (issue 25): what it
/// wrote while warm, and how much newer a latest reading must be to be
/// written again (`domain::registry_writes`).
pub struct RegistryUpkeep {
    written: Mutex<WrittenRegistry>,
    interval_ms: i64,
}

impl RegistryUpkeep {
    pub fn new(interval: Duration) -> Self {
        Self {
            written: Mutex::new(WrittenRegistry::new()),
            interval_ms: interval.as_millis().min(i64::MAX as u128) as i64,
        }
    }

    /// Every update written, none remembered: exact lists at a write per
    /// batch (what the tests that replay events one at a time expect).
    pub fn every_update() -> Self {
        Self::new(Duration::ZERO)
    }

    /// Applies the updates of `plan` worth writing; returns the
    /// `first_record` of every one that failed, and how many were applied.
    pub async fn apply<S: Store>(&self, store: &S, plan: RegistryPlan) -> (Vec<usize>, usize) {
        let plan = self
            .written
            .lock()
            .expect("registry memory")
            .worth_writing(plan, self.interval_ms);
        let results = apply_each(store, &plan).await;
        let mut written = self.written.lock().expect("registry memory");
        let mut failed = Vec::new();
        for (which, result) in results {
            match (which, result) {
                (Which::Device(i), Ok(())) => written.wrote_device(&plan.devices[i].update),
                (Which::Room(i), Ok(())) => written.wrote_room(&plan.rooms[i].update),
                (_, Err(record)) => failed.push(record),
            }
        }
        (failed, plan.writes())
    }
}
