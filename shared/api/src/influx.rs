//! The InfluxDB write API, so that Telegraf, Home Assistant, Tasmota, Node-RED
//! and the InfluxDB client libraries write here unchanged: `POST /api/v2/write`
//! (v2), `POST /write` (v1), and what their clients probe first (`GET /health`,
//! `GET /ping`, `/query` for Telegraf's `CREATE DATABASE`). Statuses and error
//! bodies are InfluxDB's: 204, 400 `{"code":"invalid","message"}` naming the
//! line, 401, 413, 503. Parsing, the limits and the write are the ingest use
//! case's (`ingest::ingest` with `Wire::LineProtocol`); this route only reads
//! the parameters and words the answer as InfluxDB does.

use super::extract::{Body, Params};
use super::{Access, ApiError, App};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use domain::model::Timestamp;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use storage::Store;
use usecases::influxql;
use usecases::ingest::line_protocol::Precision;
use usecases::ingest::{self, IngestError, Wire};

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
            IngestError::TooLarge(_)
            | IngestError::Unavailable { .. }
            | IngestError::RegistryUnavailable(_) => InfluxError::from(ApiError::Ingest(e)),
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
            super::json::to_string(&body),
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
    app.skipped_lines.record(&out.skipped);
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        "x-ingester-skipped-lines",
        HeaderValue::from(out.skipped.lines as u64),
    );
    Ok(response)
}

/// `GET /health`: what InfluxDB 2 answers; Tasmota checks it before writing.
/// With an MQTT subscription beside the server (`ingester-local serve
/// --mqtt`), its state is one of the checks: `fail` while disconnected.
pub async fn health<S: Store>(State(app): State<Arc<App<S>>>) -> Response {
    let mut checks: Vec<serde_json::Value> = app
        .subscription
        .iter()
        .map(|h| {
            let r = h.report();
            json!({
                "name": "mqtt",
                "status": if r.connected { "pass" } else { "fail" },
                "message": format!(
                    "{}; {} stored, {} ignored, {} rejected, {} deferred, {} disconnects",
                    if r.connected { "connected" } else { "not connected" },
                    r.stored, r.ignored, r.rejected, r.deferred, r.disconnects
                ),
                "subscription": r,
            })
        })
        .collect();
    checks.extend(app.backups.iter().map(|h| {
        let r = h.report();
        let message = match (&r.last_error, &r.last_success) {
            (Some(e), _) => format!("the last backup failed: {e}"),
            (None, Some(last)) => format!("last backup {} at {}", last.file, last.at),
            (None, None) => "no backup yet".to_owned(),
        };
        json!({
            "name": "backup",
            "status": if r.last_error.is_some() { "fail" } else { "pass" },
            "message": message,
            "backups": r,
        })
    }));
    checks.extend(app.catch_up.iter().map(|c| {
        let r = c.report();
        let message = match (r.finished, &r.last_error) {
            (false, _) => format!(
                "rebuilding the rollups an earlier version wrote: {} of {} devices (answers stay right meanwhile, from readings)",
                r.rebuilt, r.devices
            ),
            (true, Some(e)) => format!("rollups of an earlier version not all rebuilt ({e}); the next start tries again"),
            (true, None) if r.devices > 0 => format!("rollups of an earlier version rebuilt: {} devices", r.rebuilt),
            (true, None) => "rollups up to date".to_owned(),
        };
        json!({
            "name": "rollups",
            "status": if r.finished && r.last_error.is_some() { "warn" } else { "pass" },
            "message": message,
            "rollups": r,
        })
    }));
    if let Some(names) = &app.alert_receivers {
        checks.push(alert_check(&app.store, names).await);
    }
    if let Some(r) = app.skipped_lines.report() {
        checks.push(json!({
            "name": "line protocol",
            "status": "pass",
            "message": format!(
                "{} lines skipped since the server started, holding no quantity of ours; the latest: {}",
                r.skipped,
                r.last_skipped.as_deref().unwrap_or("?")
            ),
            "lines": r,
        }));
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"name": "influxdb", "message": "ready for queries and writes", "status": "pass", "checks": checks, "version": V2_VERSION}).to_string(),
    )
        .into_response()
}

/// The alert receivers' check: `fail` while deliveries to one fail, with
/// its last error (docs/alerts.md).
async fn alert_check<S: Store>(store: &S, names: &[String]) -> serde_json::Value {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match usecases::alerts::rules::receivers(store, &names).await {
        Ok(receivers) => {
            let failing: Vec<String> = receivers
                .iter()
                .filter(|r| r.status == "failing")
                .map(|r| format!("{}: {}", r.name, r.last_error.as_deref().unwrap_or("")))
                .collect();
            json!({
                "name": "alerts",
                "status": if failing.is_empty() { "pass" } else { "fail" },
                "message": if failing.is_empty() {
                    format!("{} receivers, none failing", receivers.len())
                } else {
                    format!("failing: {}", failing.join("; "))
                },
                "receivers": receivers,
            })
        }
        Err(e) => json!({"name": "alerts", "status": "fail", "message": e.to_string()}),
    }
}

/// `GET /ping`: 204 with the version headers of InfluxDB 1.
pub async fn ping() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    version_headers(&mut response);
    response
}

#[derive(Debug, Default, Deserialize)]
pub struct QueryParams {
    pub q: Option<String>,
    pub db: Option<String>,
    pub epoch: Option<String>,
    pub chunked: Option<String>,
    pub chunk_size: Option<String>,
    pub pretty: Option<String>,
    pub u: Option<String>,
    pub p: Option<String>,
}

impl QueryParams {
    /// The URL's parameters, with what a form body adds (Grafana and Telegraf POST `q`).
    /// Others (`rp`) are accepted and ignored, as InfluxDB does.
    fn or(self, form: QueryParams) -> QueryParams {
        QueryParams {
            q: self.q.or(form.q),
            db: self.db.or(form.db),
            epoch: self.epoch.or(form.epoch),
            chunked: self.chunked.or(form.chunked),
            chunk_size: self.chunk_size.or(form.chunk_size),
            pretty: self.pretty.or(form.pretty),
            u: None,
            p: None,
        }
    }
}

/// The largest `/query` body: statements, not data.
pub const MAX_QUERY_BYTES: usize = 256 * 1024;

/// An error of a whole `/query` request, as InfluxDB 1.x answers it: `{"error"}`.
fn query_error(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "error": message.into() }).to_string(),
    )
        .into_response();
    version_headers(&mut response);
    response
}

fn version_headers(response: &mut Response) {
    let h = response.headers_mut();
    h.insert("x-influxdb-version", HeaderValue::from_static(V1_VERSION));
    h.insert("x-influxdb-build", HeaderValue::from_static("OSS"));
}

/// `GET`/`POST /query`: InfluxQL (docs/influxql.md), one result per statement,
/// in InfluxDB 1.x's JSON; `chunked=true` answers one JSON document per line,
/// each a chunk of at most `chunk_size` rows of a series (10,000 by default).
pub async fn query<S: Store>(
    State(app): State<Arc<App<S>>>,
    params: Result<Params<QueryParams>, ApiError>,
    form: Bytes,
) -> Response {
    let url = match params {
        Ok(Params(p)) => p,
        Err(e) => return query_error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let form = serde_urlencoded::from_bytes::<QueryParams>(&form).unwrap_or_default();
    let params = url.or(form);
    let Some(q) = params.q.as_deref().filter(|q| !q.trim().is_empty()) else {
        return query_error(StatusCode::BAD_REQUEST, "missing required parameter \"q\"");
    };
    let epoch = match params.epoch.as_deref() {
        None | Some("") => None,
        Some(e) => match Epoch::parse(e) {
            Some(e) => Some(e),
            None => {
                return query_error(
                    StatusCode::BAD_REQUEST,
                    format!("invalid epoch {e:?}: one of ns, u, µ, ms, s, m, h"),
                )
            }
        },
    };
    let chunk = match (params.chunked.as_deref(), params.chunk_size.as_deref()) {
        (None | Some("false") | Some(""), _) => None,
        (Some("true"), None | Some("") | Some("0")) => Some(10_000),
        (Some("true"), Some(n)) => match n.parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => {
                return query_error(
                    StatusCode::BAD_REQUEST,
                    format!("invalid chunk_size {n:?}: a positive integer"),
                )
            }
        },
        (Some(c), _) => {
            return query_error(
                StatusCode::BAD_REQUEST,
                format!("invalid chunked {c:?}: true or false"),
            )
        }
    };
    let statements = match influxql::parse_query(q) {
        Ok(s) => s,
        Err(e) => return query_error(StatusCode::BAD_REQUEST, format!("error parsing query: {e}")),
    };
    if statements.len() > influxql::MAX_STATEMENTS {
        return query_error(
            StatusCode::BAD_REQUEST,
            format!(
                "{} statements in one query, more than {}",
                statements.len(),
                influxql::MAX_STATEMENTS
            ),
        );
    }
    let cx = influxql::Context {
        store: &app.store,
        registry: &app.registry,
        now: Timestamp::now(),
        db: params.db.as_deref(),
    };
    let mut results = Vec::with_capacity(statements.len());
    for statement in &statements {
        match influxql::run(&cx, statement).await {
            Ok(r) => results.push(r),
            Err(e) => {
                tracing::error!(error = %e, "storage unavailable");
                return query_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("storage unavailable, safe to retry: {e}"),
                );
            }
        }
    }
    let pretty = params.pretty.as_deref() == Some("true");
    let body = match chunk {
        None => {
            let results: Vec<serde_json::Value> = results
                .iter()
                .enumerate()
                .map(|(i, r)| result_json(i, r, epoch))
                .collect();
            let doc = json!({ "results": results });
            if pretty {
                super::json::to_string_pretty(&doc)
            } else {
                super::json::to_string(&doc)
            }
        }
        Some(size) => chunked(&results, size, epoch),
    };
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    version_headers(&mut response);
    response
}

/// The unit of `epoch`, or RFC 3339 text without it.
#[derive(Debug, Clone, Copy)]
enum Epoch {
    Nanos,
    Micros,
    Millis,
    Seconds,
    Minutes,
    Hours,
}

impl Epoch {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ns" | "n" => Epoch::Nanos,
            "u" | "µ" | "us" => Epoch::Micros,
            "ms" => Epoch::Millis,
            "s" => Epoch::Seconds,
            "m" => Epoch::Minutes,
            "h" => Epoch::Hours,
            _ => return None,
        })
    }

    fn of(self, ms: i64) -> i64 {
        match self {
            Epoch::Nanos => ms * 1_000_000,
            Epoch::Micros => ms * 1_000,
            Epoch::Millis => ms,
            Epoch::Seconds => ms.div_euclid(1_000),
            Epoch::Minutes => ms.div_euclid(60_000),
            Epoch::Hours => ms.div_euclid(3_600_000),
        }
    }
}

/// A time as InfluxDB writes it: RFC 3339 in UTC, trailing zeros of the fraction cut.
fn rfc3339(ms: i64) -> String {
    let t = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn cell_json(c: &influxql::Cell, epoch: Option<Epoch>) -> serde_json::Value {
    use influxql::Cell;
    match c {
        Cell::Null => serde_json::Value::Null,
        Cell::Time(ms) => match epoch {
            Some(e) => json!(e.of(*ms)),
            None => json!(rfc3339(*ms)),
        },
        Cell::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into)
        }
        Cell::Int(i) => json!(i),
        Cell::Str(s) => json!(s),
        Cell::Bool(b) => json!(b),
    }
}

fn series_json(
    s: &influxql::Series,
    values: &[Vec<influxql::Cell>],
    epoch: Option<Epoch>,
    partial: bool,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    if !s.name.is_empty() {
        out.insert("name".into(), json!(s.name));
    }
    if let Some(tags) = &s.tags {
        out.insert("tags".into(), json!(tags));
    }
    out.insert("columns".into(), json!(s.columns));
    out.insert(
        "values".into(),
        values
            .iter()
            .map(|row| row.iter().map(|c| cell_json(c, epoch)).collect())
            .collect::<Vec<serde_json::Value>>()
            .into(),
    );
    if partial {
        out.insert("partial".into(), json!(true));
    }
    out.into()
}

/// One statement's result, whole.
fn result_json(
    id: usize,
    r: &influxql::StatementResult,
    epoch: Option<Epoch>,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    out.insert("statement_id".into(), json!(id));
    if let Some(e) = &r.error {
        out.insert("error".into(), json!(e));
    } else if !r.series.is_empty() {
        out.insert(
            "series".into(),
            r.series
                .iter()
                .map(|s| series_json(s, &s.values, epoch, false))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    out.into()
}

/// `chunked=true`: one `{"results": [...]}` per line, each with one chunk of
/// one series; `partial` marks a series, and a statement, that go on.
fn chunked(results: &[influxql::StatementResult], size: usize, epoch: Option<Epoch>) -> String {
    let mut out = String::new();
    for (id, r) in results.iter().enumerate() {
        let mut chunks: Vec<(usize, &[Vec<influxql::Cell>], bool)> = Vec::new();
        for (i, s) in r.series.iter().enumerate() {
            let pieces: Vec<&[Vec<influxql::Cell>]> = if s.values.is_empty() {
                vec![&s.values[..]]
            } else {
                s.values.chunks(size.max(1)).collect()
            };
            let n = pieces.len();
            for (k, piece) in pieces.into_iter().enumerate() {
                chunks.push((i, piece, k + 1 < n));
            }
        }
        if chunks.is_empty() || r.error.is_some() {
            out.push_str(&super::json::to_string(
                &json!({ "results": [result_json(id, r, epoch)] }),
            ));
            out.push('\n');
            continue;
        }
        let last = chunks.len() - 1;
        for (k, (i, values, series_partial)) in chunks.into_iter().enumerate() {
            let mut result = serde_json::Map::new();
            result.insert("statement_id".into(), json!(id));
            result.insert(
                "series".into(),
                json!([series_json(&r.series[i], values, epoch, series_partial)]),
            );
            if k < last {
                result.insert("partial".into(), json!(true));
            }
            out.push_str(&super::json::to_string(&json!({ "results": [result] })));
            out.push('\n');
        }
    }
    out
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
    // `/query` reads, whichever method carries it (Grafana may POST).
    let read = req.method() == axum::http::Method::GET || req.uri().path() == "/query";
    let allowed = access.allows(read, |token| {
        presented(req.headers(), req.uri().query()).is_some_and(|t| token.admits_token(&t))
    });
    if !allowed {
        return InfluxError {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: "unauthorized access".into(),
        }
        .into_response();
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
