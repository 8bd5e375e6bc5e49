//! `ingest` Lambda: the library's one HTTP Router under `lambda_http`, serving the
//! write routes (POST /readings, the renames). Wiring only; the routes live in `shared::api`.

use shared::api::{self, RouteSet};

// One event at a time per sandbox, on a fraction of a vCPU: one thread
// serves it (no worker threads, no per-thread allocator arenas; issue 43).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let app = shared::assembly::http_function(&config, RouteSet::Ingest).await?;
    lambda_http::run(api::router_linking::<_, api::IngestRoutes>(app)).await
}
