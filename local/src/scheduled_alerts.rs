//! `serve`'s alert evaluation (docs/alerts.md): the rules of
//! `--alert-rules` put into the store at start, then every stored rule
//! evaluated every `--alert-every` (`shared::alerts::evaluate`), each
//! transition logged. An evaluation that fails is logged and tried again at
//! the next interval; ingest never waits for one.

use shared::alerts::evaluate;
use shared::domain::alerts::{Rule, Transition};
use shared::model::Timestamp;
use shared::store::{Alerts, Store};
use std::time::Duration;

/// Puts the file's rules into the store, then evaluates every stored rule
/// each `every` on a task of its own (abort it to stop).
pub async fn start<S: Store + Alerts>(
    store: &S,
    rules: &[(Rule, String)],
    every: Duration,
) -> Result<tokio::task::JoinHandle<()>, String> {
    put_rules(store, rules).await?;
    Ok(tokio::spawn(run(store.clone(), every)))
}

/// Puts the file's rules into the store (replacing any of the same name).
pub async fn put_rules<S: Alerts>(store: &S, rules: &[(Rule, String)]) -> Result<(), String> {
    for (rule, json) in rules {
        store
            .put_alert_rule(&rule.name, json)
            .await
            .map_err(|e| format!("alert rule {}: {e}", rule.name))?;
    }
    Ok(())
}

/// Runs until the task is dropped.
pub async fn run<S: Store + Alerts>(store: S, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = once(&store).await {
            tracing::error!(error = %e, "alert evaluation failed; trying again at the next interval");
        }
    }
}

async fn once<S: Store + Alerts>(store: &S) -> Result<(), shared::store::StoreError> {
    let registry = store.load_registry().await?;
    let done = evaluate(store, &registry, Timestamp::now()).await?;
    for (name, e) in &done.broken {
        tracing::error!(rule = %name, error = %e, "a stored alert rule does not parse; skipped");
    }
    for e in &done.events {
        let transition = match e.transition {
            Transition::Pending => "pending",
            Transition::Firing => "firing",
            Transition::Resolved => "resolved",
        };
        tracing::warn!(
            rule = %e.rule,
            device = %e.device,
            room = e.room.as_ref().map(|r| r.as_str()).unwrap_or(""),
            value = e.value.unwrap_or(f64::NAN),
            transition,
            "alert {transition}"
        );
    }
    Ok(())
}
