//! Delivery of the notifications evaluation queued (docs/alerts.md): each
//! receiver is sent what waits for it, one notification after another;
//! what it took is removed, and a failure leaves the rest queued with the
//! error and a later next attempt (backoff across runs, from `retry`).
//! Within one run a send is retried twice (backon) before it counts as
//! failed, and the first failure stops that receiver's run, so a receiver
//! that is down costs one timeout per run, not one per notification.
//! Receivers run side by side; none waits for another, and evaluation never
//! waits for delivery.

use crate::notify::{Receiver, Receivers};
use backon::{BackoffBuilder, Retryable};
use domain::alerts::{Delivery, Notification};
use domain::model::Timestamp;
use std::collections::BTreeMap;
use std::time::Duration;
use storage::{Alerts, StoreError};

/// How long one attempt at a receiver may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one run did for one receiver.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    pub delivered: usize,
    pub failed: usize,
    pub error: Option<String>,
}

/// How long a delivery that failed `attempts` times waits before the next:
/// from 30 s, doubling, at most an hour.
fn next_delay(attempts: u32) -> Duration {
    storage::retry::exponential(Duration::from_secs(30), Duration::from_secs(3600))
        .build()
        .nth(attempts.saturating_sub(1) as usize)
        .unwrap_or(Duration::from_secs(3600))
}

async fn send_retried(receiver: &dyn Receiver, n: &Notification) -> Result<(), String> {
    let attempt = || async {
        match tokio::time::timeout(ATTEMPT_TIMEOUT, receiver.send(n)).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())),
        }
    };
    attempt
        .retry(
            storage::retry::exponential(Duration::from_millis(200), Duration::from_secs(1))
                .with_max_times(2),
        )
        .await
}

/// One receiver's run over what waits for it, oldest first.
async fn run<S: Alerts>(
    store: &S,
    receiver: &dyn Receiver,
    waiting: Vec<Delivery>,
    now: Timestamp,
) -> Result<Sent, StoreError> {
    let mut sent = Sent::default();
    for d in waiting {
        if let Some(error) = &sent.error {
            // Down: the rest wait, with the same error, for the next attempt.
            let attempts = d.attempts + 1;
            let failed = d.failed(error.clone(), now, next_delay(attempts).as_millis() as i64);
            store.delivery_failed(&failed).await?;
            sent.failed += 1;
            continue;
        }
        match send_retried(receiver, &d.notification).await {
            Ok(()) => {
                store.delivered(&d).await?;
                sent.delivered += 1;
            }
            Err(error) => {
                tracing::warn!(receiver = receiver.name(), rule = %d.notification.rule,
                    device = %d.notification.device, %error, "alert notification not delivered; kept for the next attempt");
                let attempts = d.attempts + 1;
                let failed = d.failed(error.clone(), now, next_delay(attempts).as_millis() as i64);
                store.delivery_failed(&failed).await?;
                sent.failed += 1;
                sent.error = Some(error);
            }
        }
    }
    Ok(sent)
}

/// Sends every notification due at `now` to its receiver; what waits for a
/// receiver no longer configured is dropped. Per receiver, what was done.
pub async fn deliver<S: Alerts>(
    store: &S,
    receivers: &Receivers,
    now: Timestamp,
) -> Result<BTreeMap<String, Sent>, StoreError> {
    let mut due: BTreeMap<String, Vec<Delivery>> = BTreeMap::new();
    for d in store.deliveries().await? {
        if !receivers.list.iter().any(|r| r.name() == d.receiver) {
            tracing::warn!(receiver = %d.receiver, rule = %d.notification.rule,
                "an alert notification waits for a receiver no longer configured; dropped");
            store.delivered(&d).await?;
        } else if d.next_attempt <= now {
            due.entry(d.receiver.clone()).or_default().push(d);
        }
    }
    let runs = receivers.list.iter().filter_map(|r| {
        let mut waiting = due.remove(r.name())?;
        waiting.sort_by_key(|d| d.queued_at);
        Some(async move {
            (
                r.name().to_owned(),
                run(store, r.as_ref(), waiting, now).await,
            )
        })
    });
    let mut out = BTreeMap::new();
    for (name, sent) in futures_util::future::join_all(runs).await {
        out.insert(name, sent?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_delivery_waits_longer_each_time_up_to_an_hour() {
        assert_eq!(next_delay(1), Duration::from_secs(30));
        assert_eq!(next_delay(2), Duration::from_secs(60));
        assert_eq!(next_delay(3), Duration::from_secs(120));
        assert_eq!(next_delay(40), Duration::from_secs(3600));
    }
}
