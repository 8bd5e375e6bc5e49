//! The alerts function's handler (docs/alerts.md): on each scheduled event
//! (every minute, EventBridge), every stored rule evaluated at the event's
//! time against the registry entries its rules watch, then what the receivers are due delivered.
//! The states and the notifications waiting live in the table, so a cold
//! start neither forgets a firing alert nor sends it twice.
//!
//! A store that fails fails the invocation: EventBridge's asynchronous
//! invocation retries it, then leaves it on the function's failure queue.
//! A receiver that fails does not: its notifications wait in the table
//! for the next minute's attempt, and `GET /alerts` shows it failing.

use domain::model::Timestamp;
use serde_json::{json, Value};
use storage::{Alerts, Store, StoreError};
use usecases::alerts::{deliver, evaluate};
use usecases::notify::Receivers;

/// The event's `time` (the minute it was scheduled for), else now.
pub fn event_time(event: &Value) -> Timestamp {
    event
        .get("time")
        .and_then(Value::as_str)
        .and_then(|t| Timestamp::parse(t).ok())
        .unwrap_or_else(Timestamp::now)
}

/// One scheduled run; what it did, as the invocation's answer.
pub async fn handle<S: Store + Alerts>(
    store: &S,
    receivers: &Receivers,
    event: &Value,
) -> Result<Value, StoreError> {
    let now = event_time(event);
    let done = evaluate(store, now, receivers).await?;
    for (name, e) in &done.broken {
        tracing::error!(rule = %name, error = %e, "a stored alert rule does not parse; skipped");
    }
    for e in &done.events {
        tracing::warn!(rule = %e.rule, device = %e.device, transition = ?e.transition, value = e.value.unwrap_or(f64::NAN), "alert transition");
    }
    let sent = deliver(store, receivers, now).await?;
    let delivered: usize = sent.values().map(|s| s.delivered).sum();
    let failed: Vec<Value> = sent
        .iter()
        .filter_map(|(name, s)| {
            s.error
                .as_ref()
                .map(|e| json!({"receiver": name, "failed": s.failed, "error": e}))
        })
        .collect();
    for f in &failed {
        tracing::error!(receiver = %f["receiver"], error = %f["error"], "alert receiver failing; its notifications wait for the next run");
    }
    Ok(json!({
        "at": now.to_string(),
        "transitions": done.events.len(),
        "queued": done.queued,
        "delivered": delivered,
        "failing": failed,
    }))
}
