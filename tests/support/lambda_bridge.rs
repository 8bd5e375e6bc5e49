//! Plain HTTP in front of a function under the Runtime API emulator, as API
//! Gateway is in front of it on AWS: each request becomes a payload 2.0
//! event (`api_event`), each answer an HTTP response. Lets a real client
//! (the `influxdb` Python client) talk to a Lambda binary.

use crate::runtime_api::Runtime;
use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use aws_lambda_events::encodings::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::Arc;
use tokio::sync::Mutex;

/// Serves the function on 127.0.0.1; its base URL.
pub async fn serve(runtime: Runtime) -> String {
    let runtime = Arc::new(Mutex::new(runtime));
    let app = Router::new().fallback(move |req: Request| {
        let runtime = runtime.clone();
        async move { forward(&runtime, req).await }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn forward(runtime: &Mutex<Runtime>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 8 << 20)
        .await
        .unwrap_or_default();
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(parts.uri.query().unwrap_or("")).unwrap_or_default();
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned());
    let event = crate::api_event(
        parts.method.as_str(),
        parts.uri.path(),
        &query,
        body.as_deref(),
        &headers,
    );
    let answer = runtime
        .lock()
        .await
        .invoke(serde_json::to_value(&event).unwrap())
        .await;
    let value = match answer {
        Ok(v) => v,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let response: ApiGatewayV2httpResponse = serde_json::from_value(value).unwrap();
    let mut builder = Response::builder().status(response.status_code as u16);
    for (k, v) in response.headers.iter() {
        builder = builder.header(k, v);
    }
    let body = match response.body {
        // A compressed answer comes base64-encoded, as API Gateway expects it.
        Some(Body::Text(t)) if response.is_base64_encoded => {
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, t).unwrap()
        }
        Some(Body::Text(t)) => t.into_bytes(),
        Some(Body::Binary(b)) => b,
        _ => Vec::new(),
    };
    builder.body(axum::body::Body::from(body)).unwrap()
}
