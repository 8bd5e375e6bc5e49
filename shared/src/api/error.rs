//! API errors: one type, mapped once to a status and the JSON body
//! `{"error": {"code", "message", "details"}}` (DESIGN §5).

use crate::ingest::IngestError;
use crate::query::QueryError;
use crate::store::StoreError;
use serde_json::{json, Value};

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
    #[error("method {method} is not allowed here")]
    MethodNotAllowed { method: String, allow: &'static str },
    #[error("the request body is not valid base64")]
    BadBody,
    #[error("invalid request body")]
    InvalidBody(Vec<(String, String)>),
    #[error("storage unavailable, try again")]
    StorageUnavailable(StoreError),
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
    pub fn status(&self) -> u16 {
        match self {
            ApiError::Ingest(IngestError::TooLarge(_)) => 413,
            ApiError::Ingest(IngestError::Unavailable { .. }) | ApiError::StorageUnavailable(_) => {
                503
            }
            ApiError::Ingest(_)
            | ApiError::InvalidParameters(_)
            | ApiError::InvalidPath { .. }
            | ApiError::BadBody
            | ApiError::InvalidBody(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::NotFound(_) => 404,
            ApiError::MethodNotAllowed { .. } => 405,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Ingest(IngestError::TooLarge(_)) => "payload_too_large",
            ApiError::Ingest(IngestError::InvalidJson { .. }) | ApiError::BadBody => "invalid_json",
            ApiError::Ingest(IngestError::NotReadings)
            | ApiError::Ingest(IngestError::Invalid(_)) => "invalid_readings",
            ApiError::Ingest(IngestError::Unavailable { .. }) | ApiError::StorageUnavailable(_) => {
                "storage_unavailable"
            }
            ApiError::InvalidParameters(_) => "invalid_parameter",
            ApiError::InvalidPath { .. } => "invalid_path",
            ApiError::InvalidBody(_) => "invalid_body",
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
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
            ApiError::StorageUnavailable(_) => {
                error["message"] = json!("storage unavailable, try again")
            }
            _ => {}
        }
        json!({ "error": error })
    }
}
