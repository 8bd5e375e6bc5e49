//! Replays Lambda event files through the real handlers: API Gateway HTTP API
//! v2 events through the Router (converted by `lambda_http`, as on Lambda),
//! DynamoDB Streams events to the registry handler, AWS IoT Core topic rule
//! messages to the MQTT handler (`shared::mqtt::iot_rule`).

use serde_json::Value;
use shared::api::{self, App};
use shared::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use shared::aws_lambda_events::event::dynamodb::Event;
use shared::rollups::Upkeep;

#[derive(Debug)]
pub enum LambdaEvent {
    Http(Box<ApiGatewayV2httpRequest>),
    Stream(Event),
    IotRule(shared::mqtt::iot_rule::RuleMessage),
}

/// Recognises an event by its shape; the error says what is wrong with it.
pub fn recognise(text: &str) -> Result<LambdaEvent, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let obj = value
        .as_object()
        .ok_or("not a JSON object, so not a Lambda event")?;
    if let Some(records) = obj.get("Records") {
        let first = records.as_array().and_then(|r| r.first());
        let is_dynamodb = first.is_some_and(|r| {
            r.get("dynamodb").is_some()
                || r.get("eventSource") == Some(&Value::from("aws:dynamodb"))
        });
        if !is_dynamodb {
            return Err(
                "a Records event, but not from DynamoDB Streams (or with no records)".into(),
            );
        }
        return serde_json::from_value(value)
            .map(LambdaEvent::Stream)
            .map_err(|e| format!("malformed DynamoDB Streams event: {e}"));
    }
    if obj.contains_key("requestContext")
        && (obj.get("version") == Some(&Value::from("2.0")) || obj.contains_key("rawPath"))
    {
        return serde_json::from_value(value)
            .map(|r| LambdaEvent::Http(Box::new(r)))
            .map_err(|e| format!("malformed API Gateway v2 event: {e}"));
    }
    if obj.contains_key("topic") && obj.contains_key("payload") {
        return serde_json::from_value(value)
            .map(LambdaEvent::IotRule)
            .map_err(|e| format!("malformed IoT Core rule message: {e}"));
    }
    Err("neither an API Gateway HTTP API (v2) event, a DynamoDB Streams event nor an IoT Core rule message".into())
}

/// Runs one event through its handler and returns the handler's answer as JSON.
pub async fn run<S: Upkeep>(app: &App<S>, event: LambdaEvent) -> Value {
    match event {
        LambdaEvent::Http(request) => {
            let router = api::router(app.clone());
            serde_json::to_value(api::lambda::invoke(router, *request).await).unwrap_or(Value::Null)
        }
        LambdaEvent::Stream(event) => {
            // Both consumers of the table's stream, as on AWS: the registry
            // and the rollups functions; the answer names either's failures.
            let mut answer = shared::stream::handle(&app.store, event.clone()).await;
            let rollups = shared::stream::rollups::handle(&app.store, event).await;
            for failure in rollups.batch_item_failures {
                if !answer
                    .batch_item_failures
                    .iter()
                    .any(|f| f.item_identifier == failure.item_identifier)
                {
                    answer.batch_item_failures.push(failure);
                }
            }
            serde_json::to_value(answer).unwrap_or(Value::Null)
        }
        LambdaEvent::IotRule(message) => {
            match shared::mqtt::iot_rule::handle(&app.store, &app.registry, &message).await {
                Ok(outcome) => serde_json::to_value(outcome).unwrap_or(Value::Null),
                Err(e) => serde_json::json!({ "error": e.to_string() }),
            }
        }
    }
}
