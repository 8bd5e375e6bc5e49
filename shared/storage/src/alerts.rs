//! The port the alerts use case keeps its rules and series states through
//! (docs/alerts.md), answered by both adapters: on DynamoDB, items in the
//! partitions `ALERT#RULE`, `ALERT#STATE` and `ALERT#DELIVERY` (`keys`);
//! in the embedded store, the tables `alert_rules`, `alert_states` and
//! `alert_deliveries`.

use super::StoreError;
use domain::alerts::{Delivery, SeriesKey, SeriesState, States};
use std::future::Future;

pub trait Alerts {
    /// Every rule as it was put (its JSON text), by name.
    fn alert_rules(&self)
        -> impl Future<Output = Result<Vec<(String, String)>, StoreError>> + Send;
    /// Puts a rule (a checked one: `domain::alerts::Rule::parse` took it).
    fn put_alert_rule(
        &self,
        name: &str,
        json: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Removes a rule; whether there was one.
    fn delete_alert_rule(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The state of every series that is not inactive.
    fn alert_states(&self) -> impl Future<Output = Result<States, StoreError>> + Send;
    /// Keeps what an evaluation changed: `None` forgets a series (inactive).
    fn save_alert_states(
        &self,
        changed: &[(SeriesKey, Option<SeriesState>)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Queues notifications, each replacing what waits for the same
    /// receiver and series.
    fn queue_deliveries(
        &self,
        deliveries: &[Delivery],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Everything waiting for a receiver.
    fn deliveries(&self) -> impl Future<Output = Result<Vec<Delivery>, StoreError>> + Send;
    /// Removes a delivery that was sent, unless a newer one replaced it.
    fn delivered(&self, delivery: &Delivery)
        -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Keeps a failed attempt (`Delivery::failed`), unless a newer
    /// delivery replaced it.
    fn delivery_failed(
        &self,
        delivery: &Delivery,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// What changed between two evaluations' states.
pub fn changes(before: &States, after: &States) -> Vec<(SeriesKey, Option<SeriesState>)> {
    let mut out: Vec<(SeriesKey, Option<SeriesState>)> = after
        .0
        .iter()
        .filter(|(k, v)| before.0.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), Some(*v)))
        .collect();
    out.extend(
        before
            .0
            .keys()
            .filter(|k| !after.0.contains_key(*k))
            .map(|k| (k.clone(), None)),
    );
    out
}
