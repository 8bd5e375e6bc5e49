//! Where alerts go and how often a firing one is told again, as a process
//! is set (docs/alerts.md). On AWS, the alerts function's environment, set
//! by the template's parameters: `ALERT_TOPIC_ARN` (the topic the template
//! creates: receiver `sns`), `ALERT_WEBHOOK_URL` (`webhook`),
//! `ALERT_NTFY_URL` (`ntfy`) and `ALERT_REPEAT_INTERVAL` (default `4h`,
//! Alertmanager's). At home, `serve`'s alert file says the same under
//! `repeat_interval:` and `receivers:`.

use super::spec::ReceiverSpec;
use crate::alerts::{Receiver, Receivers, REPEAT_INTERVAL};
use crate::config::ConfigError;
use crate::model::parse_interval;
use serde_json::json;
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
    /// From the environment (`get`); an empty variable is unset.
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let repeat_interval = match get("ALERT_REPEAT_INTERVAL") {
            None => REPEAT_INTERVAL,
            Some(v) => parse_repeat(&v).ok_or(ConfigError::Invalid {
                name: "ALERT_REPEAT_INTERVAL",
                expected: "a duration of at least a minute: 30m, 4h, 1d",
                value: v.clone(),
            })?,
        };
        let mut receivers = Vec::new();
        let mut add = |var: &'static str, name: &str, spec: serde_json::Value| match get(var) {
            None => Ok(()),
            Some(_) => ReceiverSpec::parse(name, &spec)
                .map(|s| receivers.push((name.to_owned(), s)))
                .map_err(|e| ConfigError::Invalid {
                    name: var,
                    expected: "a receiver's address (docs/alerts.md)",
                    value: e.to_string(),
                }),
        };
        add(
            "ALERT_TOPIC_ARN",
            "sns",
            json!({"kind": "sns", "topic_arn": get("ALERT_TOPIC_ARN")}),
        )?;
        add(
            "ALERT_WEBHOOK_URL",
            "webhook",
            json!({"kind": "webhook", "url": get("ALERT_WEBHOOK_URL")}),
        )?;
        add(
            "ALERT_NTFY_URL",
            "ntfy",
            json!({"kind": "ntfy", "url": get("ALERT_NTFY_URL")}),
        )?;
        Ok(Self {
            repeat_interval,
            receivers,
        })
    }

    /// The receivers built; MQTT ones by `mqtt` (the caller's broker client).
    pub fn build(
        &self,
        sdk: Option<&aws_config::SdkConfig>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<AlertSettings, ConfigError> {
        let m: HashMap<&str, &str> = pairs.iter().copied().collect();
        AlertSettings::from_lookup(&|k| m.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn none_by_default_and_each_variable_a_receiver() {
        assert_eq!(settings(&[]).unwrap(), AlertSettings::default());
        let s = settings(&[
            (
                "ALERT_TOPIC_ARN",
                "arn:aws:sns:eu-west-1:123456789012:alerts",
            ),
            ("ALERT_NTFY_URL", "https://ntfy.sh/house"),
            ("ALERT_WEBHOOK_URL", ""),
            ("ALERT_REPEAT_INTERVAL", "1h"),
        ])
        .unwrap();
        let names: Vec<&str> = s.receivers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["sns", "ntfy"]);
        assert_eq!(s.repeat_interval, Duration::from_secs(3600));
        assert!(settings(&[("ALERT_REPEAT_INTERVAL", "10s")]).is_err());
        assert!(settings(&[("ALERT_WEBHOOK_URL", "not a url")]).is_err());
    }
}
