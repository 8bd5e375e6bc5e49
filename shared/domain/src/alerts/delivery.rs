//! A notification on its way to one receiver, kept in the store until the
//! receiver takes it (docs/alerts.md): evaluation queues it, delivery sends
//! it, and a failure leaves it queued with the error and the time of the
//! next attempt. One per receiver and series: a newer notification of the
//! series replaces one not yet delivered (a resolved one overtakes its
//! firing), so a receiver that comes back is told the series' latest word
//! once. Receivers' health is read from what waits for them.

use super::notification::Notification;
use crate::model::Timestamp;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub receiver: String,
    pub notification: Notification,
    /// When it was queued: delivery removes only what it sent, never a
    /// newer notification queued meanwhile.
    pub queued_at: Timestamp,
    pub attempts: u32,
    /// Not sent before this time (after a failure).
    pub next_attempt: Timestamp,
    pub last_error: Option<String>,
    /// The first failed attempt of this delivery.
    pub failing_since: Option<Timestamp>,
}

impl Delivery {
    pub fn new(receiver: &str, notification: Notification, now: Timestamp) -> Self {
        Self {
            receiver: receiver.to_owned(),
            notification,
            queued_at: now,
            attempts: 0,
            next_attempt: now,
            last_error: None,
            failing_since: None,
        }
    }

    /// The same delivery after a failed attempt at `now`, next tried `delay_ms` later.
    pub fn failed(mut self, error: String, now: Timestamp, delay_ms: i64) -> Self {
        self.attempts += 1;
        self.last_error = Some(error);
        self.failing_since.get_or_insert(now);
        self.next_attempt = now.saturating_add_millis(delay_ms);
        self
    }
}

/// How a receiver is doing, from what waits for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReceiverStatus {
    pub name: String,
    /// `ok` (nothing failed) or `failing`.
    pub status: &'static str,
    /// Notifications queued for it.
    pub undelivered: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<String>,
}

/// Each receiver something waits for, by name; `configured` ones too
/// (as `ok` when nothing waits).
pub fn statuses(waiting: &[Delivery], configured: &[&str]) -> Vec<ReceiverStatus> {
    let text = |t: Timestamp| t.with_text(str::to_owned);
    let mut out: BTreeMap<&str, ReceiverStatus> = configured
        .iter()
        .map(|name| {
            (
                *name,
                ReceiverStatus {
                    name: (*name).to_owned(),
                    status: "ok",
                    undelivered: 0,
                    failing_since: None,
                    last_error: None,
                    next_attempt: None,
                },
            )
        })
        .collect();
    for d in waiting {
        let s = out
            .entry(d.receiver.as_str())
            .or_insert_with(|| ReceiverStatus {
                name: d.receiver.clone(),
                status: "ok",
                undelivered: 0,
                failing_since: None,
                last_error: None,
                next_attempt: None,
            });
        s.undelivered += 1;
        if let Some(since) = d.failing_since {
            s.status = "failing";
            let earlier = s.failing_since.as_ref().is_none_or(|t| text(since) < *t);
            if earlier {
                s.failing_since = Some(text(since));
                s.last_error = d.last_error.clone();
                s.next_attempt = Some(text(d.next_attempt));
            }
        }
    }
    out.into_values().collect()
}
