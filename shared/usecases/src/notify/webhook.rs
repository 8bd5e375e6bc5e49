//! The webhook receiver: Alertmanager's JSON (`POST /api/v2/alerts`, a list
//! of alerts with labels, annotations, `startsAt` and `endsAt`), as vmalert
//! and Prometheus send it. Pointed at a real Alertmanager, it routes our
//! alerts on to e-mail, Pushover, Telegram and the rest; Alertmanager
//! de-duplicates by the labels.
//!
//! A firing alert's `endsAt` is two repeat intervals ahead: we tell it again
//! every `repeat_interval`, so Alertmanager keeps it firing while we do, and
//! lets it lapse if we stop (as Prometheus's four evaluation intervals do).

use super::http::{client, post, HttpClient};
use super::Receiver;
use domain::alerts::Notification;
use futures_util::future::BoxFuture;
use serde_json::json;
use std::time::Duration;

pub struct Webhook {
    name: String,
    url: String,
    repeat_interval: Duration,
    client: HttpClient,
}

impl Webhook {
    pub fn new(name: &str, url: &str, repeat_interval: Duration) -> Result<Self, String> {
        Ok(Self {
            name: name.to_owned(),
            url: url.to_owned(),
            repeat_interval,
            client: client()?,
        })
    }

    /// The alert as Alertmanager's API takes it.
    pub fn alert(n: &Notification, repeat_interval: Duration) -> serde_json::Value {
        let ends_at = if n.resolved {
            n.at
        } else {
            n.at + 2 * repeat_interval.as_millis() as i64
        };
        let ends = domain::alerts::notification::iso(ends_at);
        let mut annotations = json!({"summary": n.summary});
        if !n.described.is_empty() {
            annotations["value"] = json!(n.described);
        }
        json!({
            "labels": n.labels,
            "annotations": annotations,
            "startsAt": n.starts_at_text(),
            "endsAt": ends,
        })
    }
}

impl Receiver for Webhook {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(&'a self, n: &'a Notification) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let body = json!([Self::alert(n, self.repeat_interval)]).to_string();
            post(
                &self.client,
                &self.url,
                &[("content-type", "application/json".into())],
                body.into_bytes(),
            )
            .await
        })
    }
}
