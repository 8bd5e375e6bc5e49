//! `query` Lambda: the library's one HTTP Router under `lambda_http`, serving the
//! JSON API's reads (lists, ranges, latest, stats, energy, search, alerts).
//! Wiring only; the routes live in `shared::api`.

use shared::api::{self, RouteSet};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let app = shared::assembly::http_function(&config, RouteSet::Query).await?;
    lambda_http::run(api::router_linking::<_, api::QueryRoutes>(app)).await
}
