//! The InfluxDB write API, so that Telegraf, Home Assistant, Tasmota, Node-RED
//! and the InfluxDB client libraries write here unchanged: `POST /api/v2/write`
//! (v2), `POST /write` (v1), and what their clients probe first (`GET /health`,
//! `GET /ping`, `/query` for Telegraf's `CREATE DATABASE`). Statuses and error
//! bodies are InfluxDB's: 204, 400 `{"code":"invalid","message"}` naming the
//! line, 401, 413, 503. Parsing, the limits and the write are the ingest use
//! case's (`ingest::ingest` with `Wire::LineProtocol`); this route only reads
//! the parameters and words the answer as InfluxDB does.

use super::extract::{Body, Params};
use super::{Access, ApiError, App, ReadAccess};
use crate::ingest::line_protocol::Precision;
use crate::ingest::{self, IngestError, Wire};
use crate::model::Timestamp;
use crate::store::Store;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The version the probes report: clients check the major version only.
const V1_VERSION: &str = "1.8.10";
const V2_VERSION: &str = "2.7.10";

/// An error as InfluxDB words it.
pub struct InfluxError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl InfluxError {
    fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid",
            message: message.into(),
        }
    }
}

impl From<ApiError> for InfluxError {
    fn from(e: ApiError) -> Self {
        let code = match e.status() {
            StatusCode::PAYLOAD_TOO_LARGE => "request too large",
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported media type",
            _ => "invalid",
        };
        if let ApiError::StorageUnavailable(err) = &e {
            tracing::error!(error = %err, "storage unavailable");
        }
        Self {
            status: e.status(),
            code,
            message: e.to_string(),
        }
    }
}

impl From<IngestError> for InfluxError {
    fn from(e: IngestError) -> Self {
        match e {
            IngestError::TooLarge(_) | IngestError::Unavailable { .. } => {
                InfluxError::from(ApiError::Ingest(e))
            }
            other => InfluxError::invalid(other.to_string()),
        }
    }
}

impl IntoResponse for InfluxError {
    fn into_response(self) -> Response {
        // `code`/`message` as InfluxDB 2 answers; `error` as InfluxDB 1 does.
        let body = json!({"code": self.code, "message": self.message, "error": self.message});
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Token"));
        }
        response
    }
}

/// The v2 write's parameters; `org` and `bucket` are accepted and ignored
/// (one deployment is one bucket).
#[derive(Debug, Default, Deserialize)]
pub struct V2Params {
    pub org: Option<String>,
    #[serde(rename = "orgID")]
    pub org_id: Option<String>,
    pub bucket: Option<String>,
    pub precision: Option<String>,
}

/// The v1 write's parameters; `db` and `rp` are accepted and ignored, `u`/`p`
/// are credentials (checked by `require_token`).
#[derive(Debug, Default, Deserialize)]
pub struct V1Params {
    pub db: Option<String>,
    pub rp: Option<String>,
    pub precision: Option<String>,
    pub consistency: Option<String>,
    pub u: Option<String>,
    pub p: Option<String>,
}

pub async fn write_v2<S: Store>(
    State(app): State<Arc<App<S>>>,
    params: Result<Params<V2Params>, ApiError>,
    body: Result<Body, ApiError>,
) -> Result<Response, InfluxError> {
    let Params(params) = params?;
    write(&app, params.precision.as_deref(), body?).await
}

pub async fn write_v1<S: Store>(
    State(app): State<Arc<App<S>>>,
    params: Result<Params<V1Params>, ApiError>,
    body: Result<Body, ApiError>,
) -> Result<Response, InfluxError> {
    let Params(params) = params?;
    write(&app, params.precision.as_deref(), body?).await
}

async fn write<S: Store>(
    app: &App<S>,
    precision: Option<&str>,
    Body(body): Body,
) -> Result<Response, InfluxError> {
    let precision = match precision {
        None | Some("") => Precision::Nanoseconds,
        Some(p) => Precision::parse(p).ok_or_else(|| {
            InfluxError::invalid(format!(
                "precision {p:?} is not one of ns, us, ms, s (v1 also n, u, m, h)"
            ))
        })?,
    };
    let wire = Wire::LineProtocol {
        body: &body,
        precision,
    };
    let out = ingest::ingest(&app.store, &app.registry, wire, Timestamp::now())
        .await
        .map_err(InfluxError::from)?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        "x-ingester-skipped-lines",
        HeaderValue::from(out.skipped_lines as u64),
    );
    Ok(response)
}

/// `GET /health`: what InfluxDB 2 answers; Tasmota checks it before writing.
/// With an MQTT subscription beside the server (`ingester-local serve
/// --mqtt`), its state is one of the checks: `fail` while disconnected.
pub async fn health<S: Store>(State(app): State<Arc<App<S>>>) -> Response {
    let checks: Vec<serde_json::Value> = app
        .subscription
        .iter()
        .map(|h| {
            let r = h.report();
            json!({
                "name": "mqtt",
                "status": if r.connected { "pass" } else { "fail" },
                "message": format!(
                    "{}; {} stored, {} rejected, {} deferred, {} disconnects",
                    if r.connected { "connected" } else { "not connected" },
                    r.stored, r.rejected, r.deferred, r.disconnects
                ),
                "subscription": r,
            })
        })
        .collect();
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"name": "influxdb", "message": "ready for queries and writes", "status": "pass", "checks": checks, "version": V2_VERSION}).to_string(),
    )
        .into_response()
}

/// `GET /ping`: 204 with the version headers of InfluxDB 1.
pub async fn ping() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            ("x-influxdb-version", V1_VERSION),
            ("x-influxdb-build", "OSS"),
        ],
    )
        .into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct QueryParams {
    pub q: Option<String>,
    pub db: Option<String>,
    pub u: Option<String>,
    pub p: Option<String>,
}

/// `/query` of InfluxDB 1: Telegraf's v1 output sends `CREATE DATABASE` first.
/// Creating a database or a retention policy succeeds (there is one store);
/// anything else is refused inside the result, as InfluxDB does for a statement.
pub async fn query(params: Result<Params<QueryParams>, ApiError>, form: Bytes) -> Response {
    // `q` in the query string, or in a form body (Telegraf POSTs it).
    let q = params
        .ok()
        .and_then(|Params(p)| p.q)
        .or_else(|| serde_urlencoded::from_bytes::<QueryParams>(&form).ok()?.q)
        .unwrap_or_default();
    let upper = q.trim().to_ascii_uppercase();
    let result = if upper.starts_with("CREATE DATABASE")
        || upper.starts_with("CREATE RETENTION POLICY")
    {
        json!({"statement_id": 0})
    } else {
        json!({"statement_id": 0, "error": "this server only stores writes: read readings through its JSON API (GET /devices/{id}/readings)"})
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"results": [result]}).to_string(),
    )
        .into_response()
}

/// The token as InfluxDB clients present it: `Authorization: Token <t>` (v2),
/// `Bearer <t>`, HTTP Basic with the token as password (v1), or `p=<t>` in the
/// query string (v1; never logged, since the request line logs the path only).
fn presented(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let (scheme, rest) = value.trim().split_once(' ')?;
        let rest = rest.trim();
        return if scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer") {
            Some(rest.to_owned())
        } else if scheme.eq_ignore_ascii_case("basic") {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .ok()?;
            let text = String::from_utf8(decoded).ok()?;
            text.split_once(':').map(|(_, p)| p.to_owned())
        } else {
            None
        };
    }
    serde_urlencoded::from_str::<Vec<(String, String)>>(query?)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == "p")
        .map(|(_, v)| v)
}

/// The token on the InfluxDB routes, with InfluxDB's 401. `/health` and `/ping`
/// are outside it: clients probe them without credentials.
pub async fn require_token(State(access): State<Access>, req: Request, next: Next) -> Response {
    if let Some(token) = &access.token {
        let read = req.method() == axum::http::Method::GET && access.reads == ReadAccess::Open;
        let given = presented(req.headers(), req.uri().query());
        if !read && !given.is_some_and(|t| token.admits_token(&t)) {
            return InfluxError {
                status: StatusCode::UNAUTHORIZED,
                code: "unauthorized",
                message: "unauthorized access".into(),
            }
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn influx_clients_present_the_token_in_four_ways() {
        assert_eq!(
            presented(&headers("Token abc"), None).as_deref(),
            Some("abc")
        );
        assert_eq!(
            presented(&headers("Bearer abc"), None).as_deref(),
            Some("abc")
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("ha:abc");
        assert_eq!(
            presented(&headers(&format!("Basic {basic}")), None).as_deref(),
            Some("abc")
        );
        assert_eq!(
            presented(&HeaderMap::new(), Some("db=x&u=ha&p=abc")).as_deref(),
            Some("abc")
        );
        assert_eq!(presented(&HeaderMap::new(), Some("db=x")), None);
        assert_eq!(
            presented(&headers("Digest abc"), Some("p=abc")),
            None,
            "a header decides"
        );
    }
}
