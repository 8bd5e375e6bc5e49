//! The IoT reading ingester's library: everything but the thin Lambda `main`s.
//!
//! Data flows one way: `api`/`stream` (edge) → `ingest`/`query`/`registry`
//! (use cases) → `store` (trait + adapters); `keys` is the one place that
//! formats keys and cursors; `model` holds the validated domain types.

pub mod api;
pub mod auth;
pub mod config;
pub mod domain;
pub mod ingest;
pub mod keys;
pub mod model;
pub mod query;
pub mod registry;
pub mod store;
pub mod stream;
pub mod telemetry;

use api::{Access, App, RouteSet};
use config::Config;
use store::DynamoStore;

/// Cold start of an HTTP function: one SDK configuration, the DynamoDB client,
/// the token (from SSM when `INGEST_TOKEN_PARAMETER` is set) and the registry,
/// loaded once. Fails fast, so a misconfigured function never serves.
pub async fn cold_start(
    config: &Config,
    routes: RouteSet,
) -> Result<App<DynamoStore>, Box<dyn std::error::Error + Send + Sync>> {
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), &config.table_name)
        .with_retention(config.retention)
        .with_shards(config.shards)
        .with_indexes(config.indexes);
    let token = match &config.ingest_token_parameter {
        Some(name) => Some(config::fetch_token(&aws_sdk_ssm::Client::new(&sdk), name).await?),
        None => config.ingest_token.clone(),
    };
    let access = Access {
        token,
        reads: config.read_access,
    };
    Ok(App::new(store, access, routes, config.registry_cache_ttl).await?)
}

pub use aws_lambda_events;
