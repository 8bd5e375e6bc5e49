//! The IoT reading ingester's library: everything but the thin Lambda `main`s.
//!
//! Data flows one way: `api`/`stream` (edge) → `ingest`/`query`/`registry`
//! (use cases) → `store` (trait + adapters); `keys` is the one place that
//! formats keys and cursors; `model` holds the validated domain types.

pub mod api;
pub mod config;
pub mod ingest;
pub mod keys;
pub mod model;
pub mod query;
pub mod registry;
pub mod store;
pub mod stream;
pub mod telemetry;

use api::{App, RouteSet};
use config::Config;
use registry::RegistryCache;
use store::DynamoStore;

/// Cold start of an HTTP function: the SDK client and the registry, loaded once.
pub async fn cold_start(
    config: &Config,
    routes: RouteSet,
) -> Result<App<DynamoStore>, store::StoreError> {
    let store = DynamoStore::from_env(&config.table_name)
        .await
        .with_retention(config.retention);
    let registry = RegistryCache::load(&store, config.registry_cache_ttl).await?;
    Ok(App {
        store,
        registry,
        token: config.ingest_token.clone(),
        read_access: config.read_access,
        routes,
    })
}
pub use aws_lambda_events;
pub mod aggregate;
