//! Cross-cutting concerns as tower layers, each written once and put on the
//! one Router: request tracing, gzip both ways, JSON error bodies for what the
//! router and tower-http answer themselves (405 with `Allow`, 413, 415), the
//! bearer token, the body limit of a route, and the registry's first load.

use super::extract::BodyLimit;
use super::{Access, ApiError};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::time::Duration;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::CompressionLayer;
use tower_http::decompression::RequestDecompressionLayer;
use tower_http::trace::{MakeSpan, OnResponse, TraceLayer};
use tracing::Span;

/// Answers smaller than this are sent as they are: gzip would not pay.
const COMPRESS_ABOVE_BYTES: u16 = 1024;

/// One line per request: method, path (never the query string, which may carry
/// credentials, nor any header), status and duration.
#[allow(clippy::type_complexity)]
pub fn trace(
) -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RequestLine, (), RequestLine, (), (), ()>
{
    TraceLayer::new_for_http()
        .make_span_with(RequestLine)
        .on_request(())
        .on_response(RequestLine)
        .on_body_chunk(())
        .on_eos(())
        .on_failure(())
}

/// The span (method and path) and the one event (status, ms) of a request.
#[derive(Clone, Copy)]
pub struct RequestLine;

impl<B> MakeSpan<B> for RequestLine {
    fn make_span(&mut self, req: &axum::http::Request<B>) -> Span {
        tracing::info_span!("request", method = %req.method(), path = %req.uri().path())
    }
}

impl<B> OnResponse<B> for RequestLine {
    fn on_response(self, res: &axum::http::Response<B>, latency: Duration, _: &Span) {
        tracing::info!(
            status = res.status().as_u16(),
            ms = latency.as_millis() as u64,
            "request"
        );
    }
}

/// gzip for answers a client accepts it for (large JSON lists, pages).
pub fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new().gzip(true).compress_when(
        SizeAbove::new(COMPRESS_ABOVE_BYTES)
            .and(NotForContentType::GRPC)
            .and(NotForContentType::IMAGES)
            .and(NotForContentType::SSE),
    )
}

/// Bodies sent with `Content-Encoding: gzip` (line-protocol clients do) are
/// inflated before the route reads them; the body limit counts inflated bytes.
pub fn decompression() -> RequestDecompressionLayer {
    RequestDecompressionLayer::new().gzip(true)
}

/// The largest body a route reads, and the number its 413 names.
pub fn body_limit(bytes: usize) -> (Extension<BodyLimit>, DefaultBodyLimit) {
    (Extension(BodyLimit(bytes)), DefaultBodyLimit::max(bytes))
}

/// The bearer token, when one is set: the writes always need it, the reads
/// when `ReadAccess::Token`. Constant time (see `BearerToken::admits`).
pub async fn require_token(State(access): State<Access>, req: Request, next: Next) -> Response {
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    let headers = req.headers();
    // The dashboard's session cookie admits too; for a write only with the
    // header its script sends, which no cross-site form can (CSRF), on top
    // of the cookie's SameSite=Strict.
    let allowed = access.allows(read, |token| {
        super::presented::bearer(token, headers)
            || (super::presented::session(token, headers)
                && (read || headers.contains_key("x-dashboard")))
    });
    if !allowed {
        return ApiError::Unauthorized.into_response();
    }
    next.run(req).await
}

/// Error statuses answered below our routes (axum's 405, tower-http's 415)
/// get the API's JSON error body; their headers (`Allow`, `Accept-Encoding`) stay.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let response = next.run(req).await;
    let status = response.status();
    // Ours already: JSON, or a dashboard page (its sign-in and not-found pages).
    let is_ours = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
        });
    if is_ours || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let error = match status.as_u16() {
        405 => ApiError::MethodNotAllowed(method.to_string()),
        413 => ApiError::TooLarge("the body is too large".into()),
        415 => ApiError::UnsupportedEncoding(
            "unsupported Content-Encoding: send the body as it is, or gzip".into(),
        ),
        _ => ApiError::Other(
            status,
            status.canonical_reason().unwrap_or("error").to_owned(),
        ),
    };
    let (parts, _) = response.into_parts();
    let mut answer = error.into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}

/// The registry loaded before any handler reads it: on Lambda the first
/// request loads it (`App::loading_on_first_request`); a load that fails is
/// a 503 (`storage_unavailable`). One atomic read once loaded.
pub async fn registry_loaded<S: storage::Store>(
    State(app): State<std::sync::Arc<super::App<S>>>,
    req: Request,
    next: Next,
) -> Response {
    match app.registry.ensure_loaded(&app.store).await {
        Ok(()) => next.run(req).await,
        Err(e) => ApiError::from(e).into_response(),
    }
}
