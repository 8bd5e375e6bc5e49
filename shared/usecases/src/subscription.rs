//! The health of a running MQTT subscription (`ingester-local serve --mqtt`,
//! issue 26): whether it is connected, and what became of its messages.
//! The subscriber updates it; `GET /health` reports it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct SubscriptionHealth {
    connected: AtomicBool,
    /// Messages stored (or already stored: a redelivery).
    stored: AtomicU64,
    /// Messages that carry no reading of ours, acknowledged and counted.
    ignored: AtomicU64,
    /// Messages that can never be stored, acknowledged and counted.
    rejected: AtomicU64,
    /// Messages the store could not take yet (kept by the broker, retried).
    deferred: AtomicU64,
    /// Connections lost.
    disconnects: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// The last ignored message's topic and why: a device whose payload
    /// names nothing of ours (a Tasmota meter script's own names) shows here.
    last_ignored: Mutex<Option<String>>,
}

/// What `GET /health` shows of a subscription.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SubscriptionReport {
    pub connected: bool,
    pub stored: u64,
    pub ignored: u64,
    pub rejected: u64,
    pub deferred: u64,
    pub disconnects: u64,
    pub last_error: Option<String>,
    pub last_ignored: Option<String>,
}

impl SubscriptionHealth {
    pub fn connected(&self) {
        self.connected.store(true, Ordering::Relaxed);
    }

    pub fn disconnected(&self, why: impl Into<String>) {
        if self.connected.swap(false, Ordering::Relaxed) {
            self.disconnects.fetch_add(1, Ordering::Relaxed);
        }
        *self.last_error.lock().expect("health") = Some(why.into());
    }

    pub fn stored(&self) {
        self.stored.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ignored(&self, why: impl Into<String>) {
        self.ignored.fetch_add(1, Ordering::Relaxed);
        *self.last_ignored.lock().expect("health") = Some(why.into());
    }

    pub fn rejected(&self, why: impl Into<String>) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().expect("health") = Some(why.into());
    }

    pub fn deferred(&self, why: impl Into<String>) {
        self.deferred.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().expect("health") = Some(why.into());
    }

    pub fn report(&self) -> SubscriptionReport {
        SubscriptionReport {
            connected: self.connected.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
            ignored: self.ignored.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
            disconnects: self.disconnects.load(Ordering::Relaxed),
            last_error: self.last_error.lock().expect("health").clone(),
            last_ignored: self.last_ignored.lock().expect("health").clone(),
        }
    }
}
