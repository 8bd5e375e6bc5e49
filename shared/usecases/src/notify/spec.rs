//! A receiver as settings name it (docs/alerts.md): in `serve`'s alert file
//! under `receivers:`, name to `{kind: ..., ...}`; on AWS from the alerts
//! function's environment (`config::AlertSettings`). Parsing checks it
//! whole, so a mistake stops the program at start with the receiver's name
//! and field, never at the first alert.

use super::Receiver;
use super::{ntfy::Ntfy, sns::Sns, webhook::Webhook};
use domain::alerts::rule::check_name;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReceiverSpec {
    /// Alertmanager's JSON to a URL (`http://127.0.0.1:9093/api/v2/alerts`).
    Webhook { url: String },
    /// A POST to an ntfy topic URL.
    Ntfy {
        url: String,
        /// Of a firing alert: 1 (min) to 5 (urgent); 4 (high) by default.
        #[serde(default = "high")]
        priority: u8,
        #[serde(default)]
        token: Option<String>,
    },
    /// A publish on the broker `serve --mqtt` reads (at home).
    Mqtt { topic: String },
    /// A publish to an SNS topic (on AWS).
    Sns { topic_arn: String },
}

fn high() -> u8 {
    4
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("receiver {name}: {message}")]
pub struct SpecError {
    pub name: String,
    pub message: String,
}

fn url_ok(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && url.parse::<hyper::Uri>().is_ok_and(|u| u.host().is_some())
}

impl ReceiverSpec {
    /// A receiver from settings, checked.
    pub fn parse(name: &str, value: &serde_json::Value) -> Result<Self, SpecError> {
        let fail = |message: String| SpecError {
            name: name.to_owned(),
            message,
        };
        check_name(name).map_err(|e| fail(format!("name: {}", e.message)))?;
        let spec: Self = serde_json::from_value(value.clone()).map_err(|e| fail(e.to_string()))?;
        match &spec {
            Self::Webhook { url } | Self::Ntfy { url, .. } if !url_ok(url) => {
                return Err(fail(format!("url: {url:?} is not an http(s) URL")))
            }
            Self::Ntfy { priority, .. } if !(1..=5).contains(priority) => {
                return Err(fail("priority: 1 (min) to 5 (urgent)".into()))
            }
            Self::Mqtt { topic } if topic.is_empty() || topic.contains(['+', '#', '\0']) => {
                return Err(fail(format!(
                    "topic: {topic:?} must be a topic name, without wildcards"
                )))
            }
            Self::Sns { topic_arn } if !topic_arn.starts_with("arn:") => {
                return Err(fail(format!("topic_arn: {topic_arn:?} is not an ARN")))
            }
            _ => {}
        }
        Ok(spec)
    }

    /// The receiver, built; `None` for MQTT, which `ingester-local` builds
    /// on its broker's client. SNS needs the SDK's configuration.
    pub fn build(
        &self,
        name: &str,
        repeat_interval: Duration,
        sdk: Option<&aws_types::SdkConfig>,
    ) -> Result<Option<Arc<dyn Receiver>>, SpecError> {
        let fail = |message: String| SpecError {
            name: name.to_owned(),
            message,
        };
        Ok(Some(match self {
            Self::Webhook { url } => {
                Arc::new(Webhook::new(name, url, repeat_interval).map_err(fail)?)
            }
            Self::Ntfy {
                url,
                priority,
                token,
            } => Arc::new(Ntfy::new(name, url, *priority, token.clone()).map_err(fail)?),
            Self::Sns { topic_arn } => match sdk {
                Some(sdk) => Arc::new(Sns::new(name, topic_arn, sdk)),
                None => return Err(fail("SNS needs AWS (a DynamoDB table's settings)".into())),
            },
            Self::Mqtt { .. } => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_parses_and_its_mistakes_are_named() {
        assert_eq!(
            ReceiverSpec::parse(
                "phone",
                &json!({"kind": "ntfy", "url": "https://ntfy.sh/house"})
            ),
            Ok(ReceiverSpec::Ntfy {
                url: "https://ntfy.sh/house".into(),
                priority: 4,
                token: None
            })
        );
        let e = |name: &str, v| ReceiverSpec::parse(name, &v).unwrap_err().to_string();
        assert_eq!(
            e("am", json!({"kind": "webhook", "url": "localhost:9093"})),
            "receiver am: url: \"localhost:9093\" is not an http(s) URL"
        );
        assert!(e(
            "phone",
            json!({"kind": "ntfy", "url": "https://ntfy.sh/x", "priority": 9})
        )
        .contains("priority"));
        assert!(e("ha", json!({"kind": "mqtt", "topic": "alerts/#"})).contains("wildcards"));
        assert!(e("x", json!({"kind": "pager"})).contains("unknown variant"));
        assert!(e(
            "x",
            json!({"kind": "webhook", "url": "http://a", "extra": 1})
        )
        .contains("unknown field"));
        assert!(e("a#b", json!({"kind": "mqtt", "topic": "t"})).contains("name"));
    }
}
