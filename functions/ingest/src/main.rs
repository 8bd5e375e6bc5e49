//! `ingest` Lambda: the library's one HTTP Router under `lambda_http`, serving the
//! write routes (POST /readings, the renames). Wiring only; the routes live in `shared::api`.

use shared::api::{self, RouteSet};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let app = shared::assembly::http_function(&config, RouteSet::Ingest).await?;
    lambda_http::run(api::router_linking::<_, api::IngestRoutes>(app)).await
}
