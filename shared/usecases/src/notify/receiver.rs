//! The port the alerts use case sends notifications through (docs/alerts.md):
//! a receiver takes one notification or says why not. Its adapters are this
//! folder's `webhook`, `ntfy` and `sns`, and `ingester-local`'s MQTT one.

use domain::alerts::Notification;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// Where notifications go: an Alertmanager, ntfy, an MQTT topic, SNS.
pub trait Receiver: Send + Sync {
    /// Its name, as deliveries wait for it.
    fn name(&self) -> &str;
    /// Sends one notification; the error says why it was not taken.
    fn send<'a>(&'a self, notification: &'a Notification) -> BoxFuture<'a, Result<(), String>>;
}

/// The receivers notifications are queued for, and how often a firing
/// series is told again.
#[derive(Clone, Default)]
pub struct Receivers {
    pub list: Vec<Arc<dyn Receiver>>,
    pub repeat_interval: Duration,
}

impl Receivers {
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|r| r.name()).collect()
    }
}
