//! The registry as loaded at cold start (or, on Lambda, by the first
//! request: [`RegistryCache::unloaded`]), refreshed when older than a bound.
//!
//! A refresh that is only due to age runs in the background: the request that
//! notices it is served the snapshot it has (at most one TTL old, as before),
//! so no request waits for a registry load. A cache marked stale by
//! [`RegistryCache::invalidate`] (a change known to this process) reloads
//! before answering, so a writer reads its own change. A write that only
//! moved latest values ([`RegistryCache::invalidate_latest`]) reloads it
//! before the next answer that shows them, but not before the next ingest,
//! which only asks which room a device is in: a reload per batch was a
//! twentieth of line-protocol ingest.

use crate::store::{RegistrySnapshot, Store, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Clones share one cache.
#[derive(Clone)]
pub struct RegistryCache {
    inner: Arc<Inner>,
}

struct Inner {
    state: RwLock<(Arc<RegistrySnapshot>, Instant)>,
    /// Serialises reloads so that a burst of requests triggers one.
    reloading: Arc<tokio::sync::Mutex<()>>,
    ttl: Duration,
    /// Set when the registry is known to have changed: reload on next use.
    stale: AtomicBool,
    /// Set when only latest values (and times) changed: reload before
    /// `current`, not before `current_for_rooms`.
    stale_latest: AtomicBool,
    /// Clear until a first load succeeded: until then there is no snapshot
    /// to fall back on, so a failed load is the caller's error.
    loaded: AtomicBool,
}

impl RegistryCache {
    /// Loads every page of the registry (the cold-start load; it also warms the connection).
    pub async fn load<S: Store>(store: &S, ttl: Duration) -> Result<Self, StoreError> {
        let snapshot = store.load_registry().await?;
        Ok(Self::with_snapshot(snapshot, ttl))
    }

    pub fn with_snapshot(snapshot: RegistrySnapshot, ttl: Duration) -> Self {
        Self::holding(snapshot, ttl, true)
    }

    /// A cache with nothing in it yet: [`RegistryCache::ensure_loaded`]
    /// loads it. A Lambda's cold start does no call of its own, as the SDK's
    /// floor does none (issue 43): its first request loads the registry,
    /// which it would have waited for behind the init anyway.
    pub fn unloaded(ttl: Duration) -> Self {
        Self::holding(RegistrySnapshot::default(), ttl, false)
    }

    fn holding(snapshot: RegistrySnapshot, ttl: Duration, loaded: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: RwLock::new((Arc::new(snapshot), Instant::now())),
                reloading: Arc::new(tokio::sync::Mutex::new(())),
                ttl,
                stale: AtomicBool::new(false),
                stale_latest: AtomicBool::new(false),
                loaded: AtomicBool::new(loaded),
            }),
        }
    }

    /// Loads the registry if no load has succeeded yet; a load's failure is
    /// the error (no snapshot to serve instead). Requests that arrive during
    /// the first load wait for it; once loaded this is one atomic read.
    pub async fn ensure_loaded<S: Store>(&self, store: &S) -> Result<(), StoreError> {
        let inner = &self.inner;
        if inner.loaded.load(Ordering::Acquire) {
            return Ok(());
        }
        let _guard = inner.reloading.lock().await;
        if !inner.loaded.load(Ordering::Acquire) {
            let fresh = store.load_registry().await?;
            inner.replace(fresh);
        }
        Ok(())
    }

    /// Whether a load has succeeded (always, but for [`RegistryCache::unloaded`]).
    pub fn is_loaded(&self) -> bool {
        self.inner.loaded.load(Ordering::Acquire)
    }

    /// The snapshot as it is, without reloading.
    pub fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.inner.snapshot()
    }

    /// Marks the cache stale, so the next use reloads it before answering (for a
    /// maintainer in the same process that knows when the registry changed).
    pub fn invalidate(&self) {
        self.inner.stale.store(true, Ordering::Release);
    }

    /// Marks only the latest values stale: rooms, devices and names are as
    /// cached. The next `current` reloads first; `current_for_rooms` does not.
    pub fn invalidate_latest(&self) {
        self.inner.stale_latest.store(true, Ordering::Release);
    }

    /// The snapshot, for what room each device is in (ingest): as `current`,
    /// but a cache whose latest values alone are stale is served as it is.
    pub async fn current_for_rooms<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        self.current_reloaded_if(store, |inner| inner.stale.load(Ordering::Acquire))
            .await
    }

    /// The snapshot. Past its TTL, a background refresh is started and the
    /// current snapshot is returned; when invalidated, it is reloaded first. A
    /// failed reload keeps serving the old snapshot (and is logged).
    pub async fn current<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        self.current_reloaded_if(store, |inner| {
            inner.stale.load(Ordering::Acquire) || inner.stale_latest.load(Ordering::Acquire)
        })
        .await
    }

    /// The snapshot, reloaded first when `stale` says so.
    async fn current_reloaded_if<S: Store>(
        &self,
        store: &S,
        stale: impl Fn(&Inner) -> bool,
    ) -> Arc<RegistrySnapshot> {
        let inner = &self.inner;
        // Never loaded (a path that skipped `ensure_loaded`): load first.
        let stale = |inner: &Inner| stale(inner) || !inner.loaded.load(Ordering::Acquire);
        if stale(inner) {
            let _guard = inner.reloading.lock().await;
            if stale(inner) {
                inner.reload(store).await;
            }
            return inner.snapshot();
        }
        if inner.age() >= inner.ttl {
            // One refresh at a time; a request that finds one running does not wait.
            if let Ok(guard) = inner.reloading.clone().try_lock_owned() {
                if inner.age() >= inner.ttl {
                    let (inner, store) = (inner.clone(), store.clone());
                    tokio::spawn(async move {
                        inner.reload(&store).await;
                        drop(guard);
                    });
                }
            }
        }
        inner.snapshot()
    }
}

impl Inner {
    fn replace(&self, fresh: RegistrySnapshot) {
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = (Arc::new(fresh), Instant::now());
        self.loaded.store(true, Ordering::Release);
    }

    fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone()
    }

    fn age(&self) -> Duration {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .elapsed()
    }

    /// Loads the registry. On failure, an invalidated cache stays marked (the
    /// next request tries again); an aged one keeps its age, so a later request
    /// starts another background try.
    async fn reload<S: Store>(&self, store: &S) {
        // Cleared before loading: a change that lands during the load marks it again.
        let latest_was_stale = self.stale_latest.swap(false, Ordering::AcqRel);
        let was_stale = self.stale.swap(false, Ordering::AcqRel);
        match store.load_registry().await {
            Ok(fresh) => self.replace(fresh),
            Err(err) => {
                if was_stale {
                    self.stale.store(true, Ordering::Release);
                }
                if latest_was_stale {
                    self.stale_latest.store(true, Ordering::Release);
                }
                tracing::warn!(error = %err, "registry reload failed; serving the cached registry");
            }
        }
    }
}
