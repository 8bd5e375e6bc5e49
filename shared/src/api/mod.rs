//! The HTTP edge: an API Gateway v2 request is routed to a use case and its
//! answer (or error) becomes the response. Lambdas and the local server share it.

mod auth;
mod error;
pub mod params;
mod profile;
mod views;

pub use auth::BearerToken;
pub use error::ApiError;

use crate::ingest;
use crate::model::{DeviceId, RoomId, Timestamp};
use crate::query::{self, Partition};
use crate::registry::RegistryCache;
use crate::store::{Store, ZIndex};
use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderValue, Method};
use base64::Engine;
use serde_json::{json, Value};
use std::time::Instant;
use views::{DeviceView, RoomView};

/// Which routes a function serves: each Lambda serves its own, the local server all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteSet {
    Ingest,
    Query,
    All,
}

/// Whether the read routes need the token too (they always do without a token set: then nothing does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAccess {
    /// Reads need the bearer token whenever one is set (the default).
    Token,
    /// Reads are open to anyone who can reach the API.
    Open,
}

/// Everything a handler needs, built once per cold start.
pub struct App<S> {
    pub store: S,
    pub registry: RegistryCache,
    /// When set, the write routes need `Authorization: Bearer <token>` (and the reads, per `read_access`).
    pub token: Option<BearerToken>,
    pub read_access: ReadAccess,
    pub routes: RouteSet,
}

/// Every route the API serves, as `template.yaml` must declare them.
pub const ROUTES: [(&str, &str); 16] = [
    ("POST", "/readings"),
    ("GET", "/readings"),
    ("GET", "/devices"),
    ("GET", "/devices/{id}"),
    ("GET", "/devices/{id}/readings"),
    ("GET", "/devices/{id}/latest"),
    ("GET", "/devices/{id}/stats"),
    ("GET", "/devices/{id}/energy"),
    ("GET", "/devices/{id}/search"),
    ("GET", "/rooms"),
    ("GET", "/rooms/{id}"),
    ("GET", "/rooms/{id}/readings"),
    ("GET", "/rooms/{id}/stats"),
    ("GET", "/rooms/{id}/search"),
    ("PUT", "/devices/{id}"),
    ("PUT", "/rooms/{id}"),
];

enum Route {
    PostReadings,
    AllReadings,
    PutDevice(String),
    PutRoom(String),
    Devices,
    Device(String),
    DeviceReadings(String),
    DeviceLatest(String),
    DeviceStats(String),
    DeviceEnergy(String),
    DeviceSearch(String),
    Rooms,
    Room(String),
    RoomReadings(String),
    RoomStats(String),
    RoomSearch(String),
}

impl Route {
    fn set(&self) -> RouteSet {
        match self {
            Route::PostReadings | Route::PutDevice(_) | Route::PutRoom(_) => RouteSet::Ingest,
            _ => RouteSet::Query,
        }
    }
}

/// The path without a named stage's prefix (`/prod/devices` → `/devices`).
fn request_path(req: &ApiGatewayV2httpRequest) -> String {
    let raw = req
        .raw_path
        .as_deref()
        .or(req.request_context.http.path.as_deref())
        .unwrap_or("/");
    match req.request_context.stage.as_deref() {
        Some(stage) if stage != "$default" && !stage.is_empty() => {
            let prefix = format!("/{stage}");
            match raw.strip_prefix(&prefix) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.to_owned(),
                _ => raw.to_owned(),
            }
        }
        _ => raw.to_owned(),
    }
}

/// The route of a request. A known path with another method is a 405 naming the allowed ones.
fn parse_route(method: &Method, path: &str) -> Result<Option<Route>, ApiError> {
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| ApiError::InvalidPath {
                    what: "segment",
                    message: "not valid UTF-8 after percent-decoding".into(),
                })
        })
        .collect::<Result<Vec<String>, _>>()?;
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let get = *method == Method::GET;
    let (allow, route) = match s.as_slice() {
        ["readings"] => (
            "GET, POST",
            match *method {
                Method::POST => Some(Route::PostReadings),
                Method::GET => Some(Route::AllReadings),
                _ => None,
            },
        ),
        ["devices"] => ("GET", get.then_some(Route::Devices)),
        ["devices", id] => (
            "GET, PUT",
            match *method {
                Method::GET => Some(Route::Device(id.to_string())),
                Method::PUT => Some(Route::PutDevice(id.to_string())),
                _ => None,
            },
        ),
        ["devices", id, "readings"] => ("GET", get.then(|| Route::DeviceReadings(id.to_string()))),
        ["devices", id, "latest"] => ("GET", get.then(|| Route::DeviceLatest(id.to_string()))),
        ["devices", id, "stats"] => ("GET", get.then(|| Route::DeviceStats(id.to_string()))),
        ["devices", id, "energy"] => ("GET", get.then(|| Route::DeviceEnergy(id.to_string()))),
        ["devices", id, "search"] => ("GET", get.then(|| Route::DeviceSearch(id.to_string()))),
        ["rooms"] => ("GET", get.then_some(Route::Rooms)),
        ["rooms", id] => (
            "GET, PUT",
            match *method {
                Method::GET => Some(Route::Room(id.to_string())),
                Method::PUT => Some(Route::PutRoom(id.to_string())),
                _ => None,
            },
        ),
        ["rooms", id, "readings"] => ("GET", get.then(|| Route::RoomReadings(id.to_string()))),
        ["rooms", id, "stats"] => ("GET", get.then(|| Route::RoomStats(id.to_string()))),
        ["rooms", id, "search"] => ("GET", get.then(|| Route::RoomSearch(id.to_string()))),
        _ => return Ok(None),
    };
    route.map(Some).ok_or_else(|| ApiError::MethodNotAllowed {
        method: method.to_string(),
        allow,
    })
}

fn device_id(s: &str) -> Result<DeviceId, ApiError> {
    DeviceId::parse(s).map_err(|e| ApiError::InvalidPath {
        what: "device id",
        message: e.to_string(),
    })
}

fn room_id(s: &str) -> Result<RoomId, ApiError> {
    RoomId::parse(s).map_err(|e| ApiError::InvalidPath {
        what: "room id",
        message: e.to_string(),
    })
}

/// Serves one request. Never fails: every error is an answer.
pub async fn handle<S: Store>(
    app: &App<S>,
    req: ApiGatewayV2httpRequest,
) -> ApiGatewayV2httpResponse {
    let started = Instant::now();
    let method = req.request_context.http.method.clone();
    let path = request_path(&req);
    let response = match dispatch(app, &req, &method, &path).await {
        Ok(body) => json_response(200, &body, HeaderMap::new()),
        Err(err) => error_response(&err),
    };
    tracing::info!(
        method = %method,
        path = %path,
        status = response.status_code,
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    response
}

async fn dispatch<S: Store>(
    app: &App<S>,
    req: &ApiGatewayV2httpRequest,
    method: &Method,
    path: &str,
) -> Result<Value, ApiError> {
    let route = match parse_route(method, path)? {
        Some(r) if app.routes == RouteSet::All || app.routes == r.set() => r,
        _ => return Err(ApiError::NotFound(format!("no route {method} {path}"))),
    };
    if route.set() == RouteSet::Ingest || app.read_access == ReadAccess::Token {
        if let Some(token) = &app.token {
            if !token.admits(&req.headers) {
                return Err(ApiError::Unauthorized);
            }
        }
    }
    let params = &req.query_string_parameters;
    let no_params = || params::reject_unknown(params, &[]).map_err(ApiError::InvalidParameters);
    let store = &app.store;
    match route {
        Route::PostReadings => {
            no_params()?;
            let body = body_bytes(req)?;
            let registry = app.registry.current(store).await;
            let out = ingest::ingest(store, &registry, &body, Timestamp::now()).await?;
            let mut answer = json!({ "written": out.written });
            if out.duplicates > 0 {
                answer["duplicates"] = json!(out.duplicates);
            }
            Ok(answer)
        }
        Route::PutDevice(id) => {
            let id = device_id(&id)?;
            no_params()?;
            let profile = profile::parse(&body_bytes(req)?, true)?;
            store
                .set_device_profile(&id, profile.name.as_ref(), profile.room.as_ref())
                .await?;
            app.registry.invalidate();
            let device = store
                .device(&id)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("no device {id}")))?;
            Ok(json!({ "device": DeviceView::from(&device) }))
        }
        Route::PutRoom(id) => {
            let id = room_id(&id)?;
            no_params()?;
            let profile = profile::parse(&body_bytes(req)?, false)?;
            store.set_room_name(&id, profile.name.as_ref()).await?;
            app.registry.invalidate();
            let room = store
                .room(&id)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("no room {id}")))?;
            Ok(json!({ "room": RoomView::from(&room) }))
        }
        Route::Devices => {
            no_params()?;
            let registry = app.registry.current(store).await;
            let devices: Vec<DeviceView> =
                registry.devices.values().map(DeviceView::from).collect();
            Ok(json!({ "devices": devices }))
        }
        Route::Device(id) => {
            let id = device_id(&id)?;
            no_params()?;
            match query::device(store, &app.registry, &id).await? {
                Some(d) => Ok(json!({ "device": DeviceView::from(&d) })),
                None => Err(ApiError::NotFound(format!("no device {id}"))),
            }
        }
        Route::DeviceReadings(id) => {
            let id = device_id(&id)?;
            let q = params::readings_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let page = query::readings(store, Partition::Device(&id), &q).await?;
            Ok(serde_json::to_value(page).expect("readings serialise"))
        }
        Route::DeviceLatest(id) => {
            let id = device_id(&id)?;
            no_params()?;
            match store.latest_reading(&id).await? {
                Some(r) => Ok(json!({ "reading": r })),
                None => Err(ApiError::NotFound(format!("no readings of device {id}"))),
            }
        }
        Route::DeviceStats(id) => {
            let id = device_id(&id)?;
            let q = params::stats_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let buckets = query::stats(store, Partition::Device(&id), &q).await?;
            Ok(views::stats(("device_id", id.as_str()), &q, &buckets))
        }
        Route::DeviceEnergy(id) => {
            let id = device_id(&id)?;
            let q = params::stats_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let buckets = query::energy(store, &id, &q).await?;
            Ok(views::energy(&id, &q, &buckets))
        }
        Route::RoomStats(id) => {
            let id = room_id(&id)?;
            let q = params::stats_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let buckets = query::stats(store, Partition::Room(&id), &q).await?;
            Ok(views::stats(("room_id", id.as_str()), &q, &buckets))
        }
        Route::Rooms => {
            no_params()?;
            let registry = app.registry.current(store).await;
            let rooms: Vec<RoomView> = registry.rooms.values().map(RoomView::from).collect();
            Ok(json!({ "rooms": rooms }))
        }
        Route::Room(id) => {
            let id = room_id(&id)?;
            no_params()?;
            let Some(room) = query::room(store, &app.registry, &id).await? else {
                return Err(ApiError::NotFound(format!("no room {id}")));
            };
            let registry = app.registry.current(store).await;
            let devices: Vec<DeviceView> = room
                .devices
                .iter()
                .filter_map(|d| registry.devices.get(d))
                .map(DeviceView::from)
                .collect();
            Ok(json!({ "room": RoomView::from(&room), "devices": devices }))
        }
        Route::RoomReadings(id) => {
            let id = room_id(&id)?;
            let q = params::readings_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let page = query::readings(store, Partition::Room(&id), &q).await?;
            Ok(serde_json::to_value(page).expect("readings serialise"))
        }
        Route::AllReadings => {
            let q = params::readings_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let page = query::all_readings(store, &q).await?;
            Ok(serde_json::to_value(page).expect("readings serialise"))
        }
        Route::RoomSearch(id) => {
            let id = room_id(&id)?;
            let q = params::search_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let page = query::search(store, ZIndex::Room(&id), &q).await?;
            Ok(serde_json::to_value(page).expect("readings serialise"))
        }
        Route::DeviceSearch(id) => {
            let id = device_id(&id)?;
            let q = params::search_query(params, Timestamp::now())
                .map_err(ApiError::InvalidParameters)?;
            let page = query::search(store, ZIndex::Device(&id), &q).await?;
            Ok(serde_json::to_value(page).expect("readings serialise"))
        }
    }
}

/// The body as bytes, decoding base64 when API Gateway encoded it. The size
/// check comes first so that an oversized body is never decoded.
fn body_bytes(req: &ApiGatewayV2httpRequest) -> Result<Vec<u8>, ApiError> {
    let body = req.body.as_deref().unwrap_or("");
    let too_large = |n: usize| {
        ApiError::Ingest(ingest::IngestError::TooLarge(format!(
            "body is {n} bytes; the limit is {}",
            ingest::MAX_BODY_BYTES
        )))
    };
    if req.is_base64_encoded {
        if body.len() / 4 * 3 > ingest::MAX_BODY_BYTES + 3 {
            return Err(too_large(body.len() / 4 * 3));
        }
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| ApiError::BadBody)
    } else if body.len() > ingest::MAX_BODY_BYTES {
        Err(too_large(body.len()))
    } else {
        Ok(body.as_bytes().to_vec())
    }
}

fn json_response(status: u16, body: &Value, mut headers: HeaderMap) -> ApiGatewayV2httpResponse {
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    let mut r = ApiGatewayV2httpResponse::default();
    r.status_code = status as i64;
    r.headers = headers;
    r.body = Some(Body::Text(body.to_string()));
    r
}

pub fn error_response(err: &ApiError) -> ApiGatewayV2httpResponse {
    let mut headers = HeaderMap::new();
    match err {
        ApiError::Unauthorized => {
            headers.insert("www-authenticate", HeaderValue::from_static("Bearer"));
        }
        ApiError::MethodNotAllowed { allow, .. } => {
            headers.insert("allow", HeaderValue::from_static(allow));
        }
        ApiError::StorageUnavailable(e) => tracing::error!(error = %e, "storage unavailable"),
        _ => {}
    }
    json_response(err.status(), &err.body(), headers)
}
