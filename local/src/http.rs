//! HTTP ↔ API Gateway v2: each request becomes the event API Gateway would send,
//! the Lambda handler answers, and its answer becomes the HTTP response. So
//! routing, statuses and bodies are the Lambda's own.

use axum::body::{to_bytes, Body as HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine;
use shared::api::{self, App};
use shared::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use shared::aws_lambda_events::encodings::Body;
use shared::aws_lambda_events::query_map::QueryMap;
use shared::ingest::{IngestError, MAX_BODY_BYTES};
use shared::store::Store;
use std::collections::HashMap;
use std::sync::Arc;

/// A router that sends every request through the Lambda handler.
pub fn router<S: Store + 'static>(app: Arc<App<S>>) -> Router {
    Router::new().fallback(serve::<S>).with_state(app)
}

async fn serve<S: Store + 'static>(State(app): State<Arc<App<S>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // Read one byte past the limit so the handler can tell "too large" itself.
    let bytes = match to_bytes(body, MAX_BODY_BYTES + 1).await {
        Ok(b) => b,
        Err(_) => {
            let err = api::ApiError::Ingest(IngestError::TooLarge(format!(
                "body is over {MAX_BODY_BYTES} bytes"
            )));
            return into_http(api::error_response(&err));
        }
    };
    let event = to_event(&parts, &bytes);
    into_http(api::handle(&app, event).await)
}

/// The API Gateway HTTP API (payload 2.0) event for a request.
pub fn to_event(parts: &axum::http::request::Parts, body: &[u8]) -> ApiGatewayV2httpRequest {
    let raw_query = parts.uri.query().unwrap_or("").to_owned();
    let mut params: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in form_urlencoded::parse(raw_query.as_bytes()) {
        params
            .entry(k.into_owned())
            .or_default()
            .push(v.into_owned());
    }
    let mut event = ApiGatewayV2httpRequest::default();
    event.version = Some("2.0".into());
    event.route_key = Some("$default".into());
    event.raw_path = Some(parts.uri.path().to_owned());
    event.raw_query_string = Some(raw_query);
    event.query_string_parameters = QueryMap::from(params);
    event.headers = parts.headers.clone();
    event.request_context.route_key = Some("$default".into());
    event.request_context.stage = Some("$default".into());
    event.request_context.http.method = parts.method.clone();
    event.request_context.http.path = Some(parts.uri.path().to_owned());
    event.request_context.http.protocol = Some(format!("{:?}", parts.version));
    if !body.is_empty() {
        match std::str::from_utf8(body) {
            Ok(text) => event.body = Some(text.to_owned()),
            Err(_) => {
                event.body = Some(base64::engine::general_purpose::STANDARD.encode(body));
                event.is_base64_encoded = true;
            }
        }
    }
    event
}

/// The HTTP response for a handler's answer.
pub fn into_http(answer: ApiGatewayV2httpResponse) -> Response {
    let status = StatusCode::from_u16(answer.status_code as u16)
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match answer.body {
        Some(Body::Text(t)) => HttpBody::from(t),
        Some(Body::Binary(b)) => HttpBody::from(b),
        _ => HttpBody::empty(),
    };
    let mut response = (status, body).into_response();
    for (name, value) in answer.headers.iter() {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    if !response.headers().contains_key("content-type") {
        response
            .headers_mut()
            .insert("content-type", HeaderValue::from_static("application/json"));
    }
    response
}
