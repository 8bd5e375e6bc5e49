//! The registry as loaded at cold start, reloaded when older than a bound.

use crate::store::{RegistrySnapshot, Store, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub struct RegistryCache {
    state: RwLock<(Arc<RegistrySnapshot>, Instant)>,
    /// Serialises reloads so that a burst of requests triggers one.
    reloading: tokio::sync::Mutex<()>,
    ttl: Duration,
    /// Set when the registry is known to have changed: reload on next use.
    stale: AtomicBool,
}

impl RegistryCache {
    /// Loads every page of the registry (the cold-start load; it also warms the connection).
    pub async fn load<S: Store>(store: &S, ttl: Duration) -> Result<Self, StoreError> {
        let snapshot = store.load_registry().await?;
        Ok(Self::with_snapshot(snapshot, ttl))
    }

    pub fn with_snapshot(snapshot: RegistrySnapshot, ttl: Duration) -> Self {
        Self {
            state: RwLock::new((Arc::new(snapshot), Instant::now())),
            reloading: tokio::sync::Mutex::new(()),
            ttl,
            stale: AtomicBool::new(false),
        }
    }

    /// The snapshot as it is, without reloading.
    pub fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone()
    }

    /// Marks the cache stale, so the next use reloads it (for a maintainer in the
    /// same process that knows when the registry changed).
    pub fn invalidate(&self) {
        self.stale.store(true, Ordering::Release);
    }

    fn fresh_enough(&self) -> bool {
        let age = self
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .elapsed();
        !self.stale.load(Ordering::Acquire) && age < self.ttl
    }

    /// The snapshot, reloaded first if it is older than the bound. A failed
    /// reload keeps serving the old snapshot (and is logged).
    pub async fn current<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        if self.fresh_enough() {
            return self.snapshot();
        }
        let _guard = self.reloading.lock().await;
        if self.fresh_enough() {
            return self.snapshot(); // another request reloaded it while we waited
        }
        // Cleared before loading: a change that lands during the load marks it again.
        self.stale.store(false, Ordering::Release);
        match store.load_registry().await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *self.state.write().unwrap_or_else(|p| p.into_inner()) =
                    (fresh.clone(), Instant::now());
                fresh
            }
            Err(err) => {
                self.stale.store(true, Ordering::Release);
                tracing::warn!(error = %err, "registry reload failed; serving the cached registry");
                self.snapshot()
            }
        }
    }
}
