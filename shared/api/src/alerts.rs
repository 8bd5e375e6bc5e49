//! The alert routes (docs/alerts.md): rules put, read and removed by name,
//! and the series that are pending or firing now.

use super::extract::{Body, Id, Params};
use super::params::NoParams;
use super::{ApiError, App};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::alerts::{Rule, RuleName};
use serde_json::{json, Value};
use std::sync::Arc;
use storage::Store;
use usecases::alerts::rules as alert_rules;
use usecases::ingest::IngestError;

type AppState<S> = State<Arc<App<S>>>;
type Answer = Result<Response, ApiError>;

/// Largest rule body accepted by `PUT /alerts/rules/{name}`.
pub const MAX_RULE_BYTES: usize = 4096;

/// A stored rule as answered: its name and the JSON it was put with.
fn rule_json(name: &str, text: &str) -> Value {
    json!({"name": name, "rule": serde_json::from_str::<Value>(text).unwrap_or(Value::Null)})
}

/// `GET /alerts/rules`: every rule, by name.
pub async fn rules<S: Store>(State(app): AppState<S>, _: Params<NoParams>) -> Answer {
    let rules = alert_rules::rules(&app.store).await?;
    let rules: Vec<Value> = rules.iter().map(|(n, r)| rule_json(n, r)).collect();
    Ok(Json(json!({ "rules": rules })).into_response())
}

/// `GET /alerts/rules/{name}`.
pub async fn rule<S: Store>(
    State(app): AppState<S>,
    Id(name): Id<RuleName>,
    _: Params<NoParams>,
) -> Answer {
    let (n, r) = alert_rules::rule(&app.store, name.as_str())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no alert rule {}", name.as_str())))?;
    Ok(Json(rule_json(&n, &r)).into_response())
}

/// `PUT /alerts/rules/{name}`: a rule, checked field by field, put whole.
pub async fn put_rule<S: Store>(
    State(app): AppState<S>,
    Id(name): Id<RuleName>,
    _: Params<NoParams>,
    Body(body): Body,
) -> Answer {
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::Ingest(IngestError::InvalidJson {
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })
    })?;
    Rule::parse(name.as_str(), &value)
        .map_err(|e| ApiError::InvalidBody(vec![(e.field, e.message)]))?;
    let text = value.to_string();
    alert_rules::put_rule(&app.store, name.as_str(), &text).await?;
    Ok(Json(rule_json(name.as_str(), &text)).into_response())
}

/// `DELETE /alerts/rules/{name}`: 204, or 404 when there was none.
pub async fn delete_rule<S: Store>(
    State(app): AppState<S>,
    Id(name): Id<RuleName>,
    _: Params<NoParams>,
) -> Answer {
    if alert_rules::delete_rule(&app.store, name.as_str()).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::NotFound(format!(
            "no alert rule {}",
            name.as_str()
        )))
    }
}

/// `GET /alerts`: each series that is pending or firing, oldest first, and
/// each receiver something waits for (with those the server was given),
/// `failing` with its last error while deliveries to it fail.
pub async fn alerts<S: Store>(State(app): AppState<S>, _: Params<NoParams>) -> Answer {
    let configured: Vec<&str> = app
        .alert_receivers
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let receivers = alert_rules::receivers(&app.store, &configured).await?;
    let alerts: Vec<Value> = usecases::alerts::active(&app.store)
        .await?
        .iter()
        .map(|a| {
            json!({
                "rule": a.rule,
                "device_id": a.device.as_str(),
                "state": if a.firing { "firing" } else { "pending" },
                "since": a.since.to_string(),
                "value": a.value,
            })
        })
        .collect();
    Ok(Json(json!({ "alerts": alerts, "receivers": receivers })).into_response())
}
