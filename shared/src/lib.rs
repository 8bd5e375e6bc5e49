//! The IoT reading ingester's library: everything but the thin Lambda `main`s.
//!
//! Data flows one way (docs/architecture.md):
//!
//! - edges: `api` (the one HTTP Router), `stream` (DynamoDB Streams handlers);
//! - use cases: `ingest`, `query`, `registry` (maintenance and the cache),
//!   `rollups` (keeping, refreshing and rebuilding them, once for both engines);
//! - storage: `store` (the trait, `store::dynamodb`, `store::sqlite`);
//! - domain: `model` (validated types), `domain` (rules both engines share),
//!   `keys` (the one place that formats keys and cursors).
//!
//! `config` is the one configuration and `assembly` builds the program from
//! it; `auth` holds the token and access rules.

pub mod api;
pub mod assembly;
pub mod auth;
pub mod config;
pub mod domain;
pub mod influxql;
pub mod ingest;
pub mod keys;
pub mod model;
pub mod mqtt;
pub mod query;
pub mod registry;
pub mod retry;
pub mod rollups;
pub mod store;
pub mod stream;
pub mod telemetry;

pub use aws_lambda_events;
