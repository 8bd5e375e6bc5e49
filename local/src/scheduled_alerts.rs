//! `serve`'s alerts (docs/alerts.md): the rules of `--alert-rules` put into
//! the store at start, then every stored rule evaluated every
//! `--alert-every` (`shared::alerts::evaluate`), each transition logged, and
//! what the receivers are due sent by a delivery loop of its own
//! (`shared::alerts::deliver`), woken by each evaluation and every 15 s for
//! what waits after a failure. A failed evaluation is logged and tried again
//! at the next interval; a receiver that is down never holds up evaluation,
//! and ingest waits for neither.

use shared::alerts::{deliver, evaluate};
use shared::domain::alerts::{Rule, Transition};
use shared::model::Timestamp;
use shared::notify::Receivers;
use shared::store::{Alerts, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often the delivery loop looks for what waits after a failure.
const DELIVERY_POLL: Duration = Duration::from_secs(15);

/// Puts the file's rules into the store, then evaluates every stored rule
/// each `every` and delivers to `receivers`, on a task of its own (abort
/// it to stop).
pub async fn start<S: Store + Alerts>(
    store: &S,
    rules: &[(Rule, String)],
    every: Duration,
    receivers: Receivers,
) -> Result<tokio::task::JoinHandle<()>, String> {
    put_rules(store, rules).await?;
    let store = store.clone();
    Ok(tokio::spawn(async move {
        let evaluated = Arc::new(Notify::new());
        tokio::join!(
            run(store.clone(), every, &receivers, &evaluated),
            deliveries(store, &receivers, &evaluated)
        );
    }))
}

/// Puts the file's rules into the store (replacing any of the same name).
pub async fn put_rules<S: Alerts>(store: &S, rules: &[(Rule, String)]) -> Result<(), String> {
    for (rule, json) in rules {
        shared::alerts::rules::put_rule(store, &rule.name, json)
            .await
            .map_err(|e| format!("alert rule {}: {e}", rule.name))?;
    }
    Ok(())
}

/// Evaluates until the task is dropped.
async fn run<S: Store + Alerts>(
    store: S,
    every: Duration,
    receivers: &Receivers,
    evaluated: &Notify,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match once(&store, receivers).await {
            Ok(queued) if queued > 0 => evaluated.notify_one(),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "alert evaluation failed; trying again at the next interval")
            }
        }
    }
}

/// Delivers until the task is dropped.
async fn deliveries<S: Alerts>(store: S, receivers: &Receivers, evaluated: &Notify) {
    if receivers.list.is_empty() {
        return;
    }
    loop {
        let _ = tokio::time::timeout(DELIVERY_POLL, evaluated.notified()).await;
        match deliver(&store, receivers, Timestamp::now()).await {
            Ok(sent) => {
                for (receiver, s) in sent.iter().filter(|(_, s)| s.delivered > 0) {
                    tracing::info!(
                        receiver,
                        delivered = s.delivered,
                        "alert notifications delivered"
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, "alert delivery failed; trying again"),
        }
    }
}

/// One evaluation; how many notifications it queued.
async fn once<S: Store + Alerts>(
    store: &S,
    receivers: &Receivers,
) -> Result<usize, shared::store::StoreError> {
    let done = evaluate(store, Timestamp::now(), receivers).await?;
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
    Ok(done.queued)
}
