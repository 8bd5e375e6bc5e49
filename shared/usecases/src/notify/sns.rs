//! The SNS receiver: a publish to the topic the template creates
//! (`AlertTopic`), which people subscribe to by e-mail or SMS. The subject
//! is the alert's title; the message is its summary, times and labels as
//! text; message attributes carry the status, rule and device for filter
//! policies.

use super::Receiver;
use aws_sdk_sns::types::MessageAttributeValue;
use domain::alerts::Notification;
use futures_util::future::BoxFuture;

pub struct Sns {
    name: String,
    topic_arn: String,
    client: aws_sdk_sns::Client,
}

impl Sns {
    pub fn new(name: &str, topic_arn: &str, sdk: &aws_types::SdkConfig) -> Self {
        Self {
            name: name.to_owned(),
            topic_arn: topic_arn.to_owned(),
            client: aws_sdk_sns::Client::new(sdk),
        }
    }

    /// The message's text.
    pub fn message(n: &Notification) -> String {
        let mut out = format!("{}\n\n{}\n", n.title(), n.summary);
        out += &format!("since: {}\n", n.starts_at_text());
        if n.resolved {
            out += &format!("resolved: {}\n", n.at_text());
        }
        for (k, v) in &n.labels {
            out += &format!("{k}: {v}\n");
        }
        out
    }
}

fn attribute(v: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(v)
        .build()
        .expect("data type set")
}

impl Receiver for Sns {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(&'a self, n: &'a Notification) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let status = if n.resolved { "resolved" } else { "firing" };
            // SNS takes a subject of at most 100 characters.
            let subject: String = n.title().chars().take(100).collect();
            self.client
                .publish()
                .topic_arn(&self.topic_arn)
                .subject(subject)
                .message(Self::message(n))
                .message_attributes("status", attribute(status))
                .message_attributes("rule", attribute(&n.rule))
                .message_attributes("device_id", attribute(&n.device))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    format!(
                        "SNS topic {}: {}",
                        self.topic_arn,
                        aws_sdk_sns::error::DisplayErrorContext(&e)
                    )
                })
        })
    }
}
