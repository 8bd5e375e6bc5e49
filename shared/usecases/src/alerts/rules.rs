//! Alert rules by name, as the routes put, read and remove them, and how
//! each receiver is doing (docs/alerts.md). A rule is checked at the edge
//! (`Rule::parse`) before it is put; it is kept as the JSON it came as.

use domain::alerts::delivery::{statuses, ReceiverStatus};
use storage::{Alerts, Store, StoreError};

/// Every rule as (name, JSON text), by name.
pub async fn rules<S: Store>(store: &S) -> Result<Vec<(String, String)>, StoreError> {
    let mut rules = store.alert_rules().await?;
    rules.sort();
    Ok(rules)
}

/// The rule of that name, as (name, JSON text).
pub async fn rule<S: Store>(store: &S, name: &str) -> Result<Option<(String, String)>, StoreError> {
    Ok(store
        .alert_rules()
        .await?
        .into_iter()
        .find(|(n, _)| n == name))
}

/// Puts a rule whole, replacing one of that name.
pub async fn put_rule<S: Alerts>(store: &S, name: &str, text: &str) -> Result<(), StoreError> {
    store.put_alert_rule(name, text).await
}

/// Removes the rule of that name; `false` when there was none.
pub async fn delete_rule<S: Store>(store: &S, name: &str) -> Result<bool, StoreError> {
    store.delete_alert_rule(name).await
}

/// Each receiver something waits for, and each of `configured`, with how
/// its deliveries are going.
pub async fn receivers<S: Store>(
    store: &S,
    configured: &[&str],
) -> Result<Vec<ReceiverStatus>, StoreError> {
    Ok(statuses(&store.deliveries().await?, configured))
}
