//! Where alerts go and how often a firing one is told again, as a process
//! is set (docs/alerts.md). On AWS, the alerts function's environment
//! (read by `config`), set by the template's parameters: `ALERT_TOPIC_ARN` (the topic the template
//! creates: receiver `sns`), `ALERT_WEBHOOK_URL` (`webhook`),
//! `ALERT_NTFY_URL` (`ntfy`) and `ALERT_REPEAT_INTERVAL` (default `4h`,
//! Alertmanager's). At home, `serve`'s alert file says the same under
//! `repeat_interval:` and `receivers:`.

use crate::notify::{Receiver, ReceiverSpec, Receivers};
use domain::alerts::notification::REPEAT_INTERVAL;
use domain::model::parse_interval;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct AlertSettings {
    pub repeat_interval: Duration,
    pub receivers: Vec<(String, ReceiverSpec)>,
}

impl Default for AlertSettings {
    fn default() -> Self {
        Self {
            repeat_interval: REPEAT_INTERVAL,
            receivers: Vec::new(),
        }
    }
}

/// A `repeat_interval`: a duration of at least a minute.
pub fn parse_repeat(v: &str) -> Option<Duration> {
    parse_interval(v, false)
        .ok()
        .filter(|d| *d >= Duration::from_secs(60))
}

impl AlertSettings {
    /// The receivers built; MQTT ones by `mqtt` (the caller's broker client).
    pub fn build(
        &self,
        sdk: Option<&aws_types::SdkConfig>,
        mqtt: impl Fn(&str, &str) -> Result<Arc<dyn Receiver>, String>,
    ) -> Result<Receivers, String> {
        let mut list = Vec::new();
        for (name, spec) in &self.receivers {
            let built = match spec {
                ReceiverSpec::Mqtt { topic } => {
                    mqtt(name, topic).map_err(|e| format!("receiver {name}: {e}"))?
                }
                other => other
                    .build(name, self.repeat_interval, sdk)
                    .map_err(|e| e.to_string())?
                    .expect("built"),
            };
            list.push(built);
        }
        Ok(Receivers {
            list,
            repeat_interval: self.repeat_interval,
        })
    }
}
