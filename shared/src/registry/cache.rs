//! The registry as loaded at cold start, reloaded when older than a bound.

use crate::store::{RegistrySnapshot, Store, StoreError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub struct RegistryCache {
    state: RwLock<(Arc<RegistrySnapshot>, Instant)>,
    /// Serialises reloads so that a burst of requests triggers one.
    reloading: tokio::sync::Mutex<()>,
    ttl: Duration,
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

    fn age(&self) -> Duration {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .elapsed()
    }

    /// The snapshot, reloaded first if it is older than the bound. A failed
    /// reload keeps serving the old snapshot (and is logged).
    pub async fn current<S: Store>(&self, store: &S) -> Arc<RegistrySnapshot> {
        if self.age() < self.ttl {
            return self.snapshot();
        }
        let _guard = self.reloading.lock().await;
        if self.age() < self.ttl {
            return self.snapshot(); // another request reloaded it while we waited
        }
        match store.load_registry().await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *self.state.write().unwrap_or_else(|p| p.into_inner()) =
                    (fresh.clone(), Instant::now());
                fresh
            }
            Err(err) => {
                tracing::warn!(error = %err, "registry reload failed; serving the cached registry");
                self.snapshot()
            }
        }
    }
}
