//! The HTTP edge: one axum Router with every route, served by the Lambdas
//! through `lambda_http` and by `ingester-local serve` through `axum::serve`.
//! Routes are in `routes`, typed input in `extract`/`params`, cross-cutting
//! concerns in `layers`, and every error answer comes from `ApiError`.

mod alerts;
pub mod backup_health;
pub mod dashboard;
mod error;
mod extract;
pub mod influx;
pub mod json;
pub mod lambda;
mod layers;
pub mod params;
mod presented;
mod profile;
mod routes;
pub mod skipped_lines;
mod state;
mod views;

// Who may call, and an MQTT subscription's health: decided below the edge
// (the configuration builds them, the MQTT edge keeps one), shown here.
pub use error::ApiError;
pub use state::{AllRoutes, App, DashboardRoutes, IngestRoutes, Linked, QueryRoutes, RouteSet};
pub use usecases::auth::{Access, BearerToken, ReadAccess};
pub use usecases::{auth, subscription};

use axum::handler::Handler;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{middleware, Router};
use domain::model::{DeviceId, RoomId};
use std::sync::Arc;
use storage::Store;
use tower::ServiceBuilder;
use usecases::ingest::MAX_BODY_BYTES;

/// Every route the API serves, as `template.yaml` must declare them.
pub const ROUTES: [(&str, &str); 33] = [
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
    // Alerts (`api::alerts`, docs/alerts.md).
    ("GET", "/alerts"),
    ("GET", "/alerts/rules"),
    ("GET", "/alerts/rules/{id}"),
    ("PUT", "/alerts/rules/{id}"),
    ("DELETE", "/alerts/rules/{id}"),
    // The InfluxDB write API and its clients' probes (`api::influx`).
    ("POST", "/api/v2/write"),
    ("POST", "/write"),
    ("GET", "/query"),
    ("POST", "/query"),
    ("GET", "/health"),
    ("GET", "/ping"),
    // The dashboard (`api::dashboard`): pages, chart images, sign-in.
    ("GET", "/"),
    ("GET", "/ui/devices/{id}"),
    ("GET", "/ui/rooms/{id}"),
    ("GET", "/devices/{id}/chart.svg"),
    ("GET", "/rooms/{id}/chart.svg"),
    ("POST", "/ui/login"),
];

/// The application: every route, with the layers. A route of a set the process
/// does not serve answers 404, as API Gateway would never send it there.
pub fn router<S: Store>(app: App<S>) -> Router {
    router_linking::<S, AllRoutes>(app)
}

/// The application of a binary that links only the routes of `L`: another
/// set's handlers are never built into it (a Lambda's `main`).
pub fn router_linking<S: Store, L: Linked>(app: App<S>) -> Router {
    let set = Served::<L>(app.routes, std::marker::PhantomData);
    let access = app.access.clone();
    let app = Arc::new(app);
    let router = Router::new()
        .route(
            "/readings",
            set.write(
                MethodFilter::POST,
                MAX_BODY_BYTES,
                routes::post_readings::<S>,
            )
            .merge(set.read(routes::all_readings::<S>)),
        )
        .route("/devices", set.read(routes::devices::<S>))
        .route(
            "/devices/{id}",
            set.get_put(routes::device::<S>, routes::put_device::<S>),
        )
        .route("/devices/{id}/latest", set.read(routes::device_latest::<S>))
        .route("/devices/{id}/energy", set.read(routes::device_energy::<S>))
        .merge(owner_routes::<S, DeviceId, L>(set))
        .route("/rooms", set.read(routes::rooms::<S>))
        .route(
            "/rooms/{id}",
            set.get_put(routes::room::<S>, routes::put_room::<S>),
        )
        .merge(owner_routes::<S, RoomId, L>(set))
        .route("/alerts", set.read(alerts::alerts::<S>))
        .route("/alerts/rules", set.read(alerts::rules::<S>))
        .route(
            "/alerts/rules/{id}",
            set.read(alerts::rule::<S>)
                .merge(set.write(
                    MethodFilter::PUT,
                    alerts::MAX_RULE_BYTES,
                    alerts::put_rule::<S>,
                ))
                .merge(set.write(
                    MethodFilter::DELETE,
                    alerts::MAX_RULE_BYTES,
                    alerts::delete_rule::<S>,
                )),
        )
        // Only matched routes ask for the token: an unknown path is a 404, a wrong method a 405.
        .route_layer(middleware::from_fn_with_state(
            access.clone(),
            layers::require_token,
        ))
        .merge(influx_routes::<S, L>(set, access))
        .merge(dashboard_routes::<S, L>(set))
        .fallback(routes::not_found)
        .with_state(app.clone());
    // Only an app whose registry is not loaded yet (a Lambda's) checks it
    // on every request: at home it was loaded at start.
    let router = if app.registry.is_loaded() {
        router
    } else {
        router.layer(middleware::from_fn_with_state(
            app,
            layers::registry_loaded::<S>,
        ))
    };
    router.layer(
        ServiceBuilder::new()
            .layer(layers::trace())
            .layer(layers::compression())
            .layer(middleware::from_fn(layers::json_errors))
            .layer(layers::decompression()),
    )
}

/// The InfluxDB API with the token as its clients send it: the writes (the
/// ingest function's), InfluxQL on `/query` (the dashboard function's), and the
/// probes its clients make first (open, as InfluxDB's are).
fn influx_routes<S: Store, L: Linked>(set: Served<L>, access: Access) -> Router<Arc<App<S>>> {
    let ingest = RouteSet::Ingest;
    let writes = Router::new()
        .route(
            "/api/v2/write",
            set.write(MethodFilter::POST, MAX_BODY_BYTES, influx::write_v2::<S>),
        )
        .route(
            "/write",
            set.write(MethodFilter::POST, MAX_BODY_BYTES, influx::write_v1::<S>),
        )
        // InfluxQL reads (docs/influxql.md): Grafana's, the dashboard function's.
        .route(
            "/query",
            set.route(
                RouteSet::Dashboard,
                MethodFilter::GET.or(MethodFilter::POST),
                influx::query::<S>,
            )
            .layer(layers::body_limit(influx::MAX_QUERY_BYTES)),
        )
        .route_layer(middleware::from_fn_with_state(
            access,
            influx::require_token,
        ));
    writes
        .route(
            "/health",
            set.route(ingest, MethodFilter::GET, influx::health::<S>),
        )
        .route("/ping", set.route(ingest, MethodFilter::GET, influx::ping))
}

/// The dashboard: the dashboard function's. Each page asks for the token
/// itself (a sign-in page rather than a JSON 401).
fn dashboard_routes<S: Store, L: Linked>(set: Served<L>) -> Router<Arc<App<S>>> {
    Router::new()
        .route("/", set.page(dashboard::overview::<S>))
        .route("/ui/devices/{id}", set.page(dashboard::device_page::<S>))
        .route("/ui/rooms/{id}", set.page(dashboard::room_page::<S>))
        .route(
            "/devices/{id}/chart.svg",
            set.page(dashboard::device_chart::<S>),
        )
        .route(
            "/rooms/{id}/chart.svg",
            set.page(dashboard::room_chart::<S>),
        )
        .route(
            "/ui/login",
            set.route(
                RouteSet::Dashboard,
                MethodFilter::POST,
                dashboard::login::<S>,
            )
            .layer(layers::body_limit(4096)),
        )
}

/// The routes a device and a room both have.
fn owner_routes<S: Store, O: routes::Owner, L: Linked>(set: Served<L>) -> Router<Arc<App<S>>> {
    Router::new()
        .route(
            &format!("{}/readings", O::PATH),
            set.read(routes::readings::<S, O>),
        )
        .route(
            &format!("{}/stats", O::PATH),
            set.read(routes::stats::<S, O>),
        )
        .route(
            &format!("{}/search", O::PATH),
            set.read(routes::search::<S, O>),
        )
}

/// The route set this process serves; another set's route becomes a 404.
/// `L` is what the binary links: a route outside it is a 404 whose handler
/// the optimiser never keeps.
struct Served<L>(RouteSet, std::marker::PhantomData<L>);

impl<L> Clone for Served<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for Served<L> {}

impl<L: Linked> Served<L> {
    fn route<S, H, T>(self, kind: RouteSet, filter: MethodFilter, handler: H) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
        H: Handler<T, S>,
        T: 'static,
    {
        if L::SET.serves(kind) && self.0.serves(kind) {
            on(filter, handler)
        } else {
            on(filter, routes::not_found)
        }
    }

    /// A `GET` route of the JSON API (the query function's).
    fn read<S, H, T>(self, handler: H) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
        H: Handler<T, S>,
        T: 'static,
    {
        self.route(RouteSet::Query, MethodFilter::GET, handler)
    }

    /// A `GET` route of the dashboard (the dashboard function's).
    fn page<S, H, T>(self, handler: H) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
        H: Handler<T, S>,
        T: 'static,
    {
        self.route(RouteSet::Dashboard, MethodFilter::GET, handler)
    }

    /// A record read with `GET` and renamed with `PUT`.
    fn get_put<S, G, TG, P, TP>(self, get: G, put: P) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
        G: Handler<TG, S>,
        P: Handler<TP, S>,
        TG: 'static,
        TP: 'static,
    {
        self.read(get)
            .merge(self.write(MethodFilter::PUT, profile::MAX_PROFILE_BYTES, put))
    }

    /// A write route (the ingest function's), reading a body of at most `limit` bytes.
    fn write<S, H, T>(self, filter: MethodFilter, limit: usize, handler: H) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
        H: Handler<T, S>,
        T: 'static,
    {
        self.route(RouteSet::Ingest, filter, handler)
            .layer(layers::body_limit(limit))
    }
}
