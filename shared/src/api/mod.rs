//! The HTTP edge: one axum Router with every route, served by the Lambdas
//! through `lambda_http` and by `ingester-local serve` through `axum::serve`.
//! Routes are in `routes`, typed input in `extract`/`params`, cross-cutting
//! concerns in `layers`, and every error answer comes from `ApiError`.

mod auth;
mod error;
mod extract;
pub mod lambda;
mod layers;
pub mod params;
mod profile;
mod routes;
mod state;
mod views;

pub use auth::BearerToken;
pub use error::ApiError;
pub use state::{Access, App, ReadAccess, RouteSet};

use crate::ingest::MAX_BODY_BYTES;
use crate::store::Store;
use axum::routing::{get, on, MethodFilter, MethodRouter};
use axum::{middleware, Router};
use std::sync::Arc;
use tower::ServiceBuilder;

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

/// The application: every route, with the layers. A route of a set the process
/// does not serve answers 404, as API Gateway would never send it there.
pub fn router<S: Store>(app: App<S>) -> Router {
    let served = app.routes;
    let access = app.access.clone();
    let app = Arc::new(app);
    // `serves` the kind: the handler; otherwise a 404 in its place.
    let route = |kind: RouteSet, filter: MethodFilter, handler: MethodRouter<Arc<App<S>>>| {
        if served.serves(kind) {
            handler
        } else {
            on(filter, routes::not_found)
        }
    };
    let read = |h| route(RouteSet::Query, MethodFilter::GET, h);
    let write = |filter, limit, h: MethodRouter<Arc<App<S>>>| {
        route(RouteSet::Ingest, filter, h.layer(layers::body_limit(limit)))
    };
    Router::new()
        .route(
            "/readings",
            write(
                MethodFilter::POST,
                MAX_BODY_BYTES,
                on(MethodFilter::POST, routes::post_readings::<S>),
            )
            .merge(read(get(routes::all_readings::<S>))),
        )
        .route("/devices", read(get(routes::devices::<S>)))
        .route(
            "/devices/{id}",
            read(get(routes::device::<S>)).merge(write(
                MethodFilter::PUT,
                profile::MAX_PROFILE_BYTES,
                on(MethodFilter::PUT, routes::put_device::<S>),
            )),
        )
        .route(
            "/devices/{id}/readings",
            read(get(routes::device_readings::<S>)),
        )
        .route(
            "/devices/{id}/latest",
            read(get(routes::device_latest::<S>)),
        )
        .route("/devices/{id}/stats", read(get(routes::device_stats::<S>)))
        .route(
            "/devices/{id}/energy",
            read(get(routes::device_energy::<S>)),
        )
        .route(
            "/devices/{id}/search",
            read(get(routes::device_search::<S>)),
        )
        .route("/rooms", read(get(routes::rooms::<S>)))
        .route(
            "/rooms/{id}",
            read(get(routes::room::<S>)).merge(write(
                MethodFilter::PUT,
                profile::MAX_PROFILE_BYTES,
                on(MethodFilter::PUT, routes::put_room::<S>),
            )),
        )
        .route(
            "/rooms/{id}/readings",
            read(get(routes::room_readings::<S>)),
        )
        .route("/rooms/{id}/stats", read(get(routes::room_stats::<S>)))
        .route("/rooms/{id}/search", read(get(routes::room_search::<S>)))
        // Only matched routes ask for the token: an unknown path is a 404, a wrong method a 405.
        .route_layer(middleware::from_fn_with_state(
            access,
            layers::require_token,
        ))
        .fallback(routes::not_found)
        .with_state(app)
        .layer(
            ServiceBuilder::new()
                .layer(layers::trace())
                .layer(layers::compression())
                .layer(middleware::from_fn(layers::json_errors))
                .layer(layers::decompression()),
        )
}
