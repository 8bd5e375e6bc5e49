//! API errors: one type, mapped once to a status, headers and the JSON body
//! `{"error": {"code", "message", "details"}}` (DESIGN §5). Every error answer
//! is built here, including those of the tower layers (see `layers::json_errors`).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use storage::StoreError;
use usecases::ingest::IngestError;
use usecases::query::QueryError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Ingest(#[from] IngestError),
    #[error("invalid query parameters")]
    InvalidParameters(Vec<(String, String)>),
    #[error("invalid {what} in the path: {message}")]
    InvalidPath { what: &'static str, message: String },
    #[error("missing or wrong bearer token")]
    Unauthorized,
    #[error("{0}")]
    NotFound(String),
    /// A route whose optional index this deployment does not keep (docs/cost.md).
    #[error("{what} is turned off in this deployment: deploy with {setting}=enabled, then run `ingester-local reindex` (docs/cost.md)")]
    IndexDisabled {
        what: &'static str,
        setting: &'static str,
    },
    /// The `Allow` header comes with the router's own 405.
    #[error("method {0} is not allowed here")]
    MethodNotAllowed(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    UnsupportedEncoding(String),
    #[error("the request body could not be read: {0}")]
    UnreadableBody(String),
    #[error("invalid request body")]
    InvalidBody(Vec<(String, String)>),
    #[error("storage unavailable, try again")]
    StorageUnavailable(StoreError),
    /// A status some layer answered without a body of ours (kept as it is).
    #[error("{1}")]
    Other(StatusCode, String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::StorageUnavailable(e)
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Cursor(c) => {
                ApiError::InvalidParameters(vec![("cursor".into(), c.to_string())])
            }
            QueryError::Store(s) => ApiError::StorageUnavailable(s),
        }
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Ingest(IngestError::TooLarge(_)) | ApiError::TooLarge(_) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::Ingest(IngestError::Unavailable { .. })
            | ApiError::Ingest(IngestError::RegistryUnavailable(_))
            | ApiError::StorageUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Ingest(_)
            | ApiError::InvalidParameters(_)
            | ApiError::InvalidPath { .. }
            | ApiError::UnreadableBody(_)
            | ApiError::InvalidBody(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) | ApiError::IndexDisabled { .. } => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedEncoding(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Other(status, _) => *status,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Ingest(IngestError::TooLarge(_)) | ApiError::TooLarge(_) => {
                "payload_too_large"
            }
            ApiError::Ingest(IngestError::InvalidJson { .. }) => "invalid_json",
            ApiError::Ingest(IngestError::NotReadings)
            | ApiError::Ingest(IngestError::Empty)
            | ApiError::Ingest(IngestError::Invalid(_))
            | ApiError::Ingest(IngestError::InvalidLines(_))
            | ApiError::Ingest(IngestError::NotUtf8(_)) => "invalid_readings",
            ApiError::Ingest(IngestError::Unavailable { .. })
            | ApiError::Ingest(IngestError::RegistryUnavailable(_))
            | ApiError::StorageUnavailable(_) => "storage_unavailable",
            ApiError::InvalidParameters(_) => "invalid_parameter",
            ApiError::InvalidPath { .. } => "invalid_path",
            ApiError::InvalidBody(_) | ApiError::UnreadableBody(_) => "invalid_body",
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound(_) => "not_found",
            ApiError::IndexDisabled { .. } => "index_disabled",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::UnsupportedEncoding(_) => "unsupported_encoding",
            ApiError::Other(status, _) if status.is_server_error() => "internal",
            ApiError::Other(..) => "bad_request",
        }
    }

    /// The JSON body. Storage failure details stay in the logs, not in answers.
    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.to_string(), "details": [] });
        match self {
            ApiError::Ingest(IngestError::Invalid(problems)) => error["details"] = json!(problems),
            ApiError::Ingest(IngestError::InvalidJson { line, column, .. }) => {
                error["details"] = json!([{ "line": line, "column": column }]);
            }
            ApiError::Ingest(IngestError::Unavailable { unwritten, total }) => {
                error["unwritten"] = json!(unwritten);
                error["written"] = json!(total - unwritten.len());
            }
            ApiError::InvalidParameters(ps) => {
                error["details"] = ps
                    .iter()
                    .map(|(p, m)| json!({ "parameter": p, "message": m }))
                    .collect();
            }
            ApiError::InvalidBody(ps) => {
                error["details"] = ps
                    .iter()
                    .map(|(f, m)| json!({ "field": f, "message": m }))
                    .collect();
            }
            _ => {}
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::StorageUnavailable(e) = &self {
            tracing::error!(error = %e, "storage unavailable");
        }
        if let ApiError::Ingest(IngestError::RegistryUnavailable(e)) = &self {
            tracing::error!(error = %e, "registry unavailable; nothing written");
        }
        if let ApiError::Ingest(IngestError::Unavailable { unwritten, total }) = &self {
            tracing::error!(unwritten = unwritten.len(), total, "readings not stored");
        }
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            super::json::to_string(&self.body()),
        )
            .into_response();
        if let ApiError::Unauthorized = self {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
