//! The IoT reading ingester's library: everything but the thin Lambda `main`s.
//!
//! Data flows one way (docs/architecture.md, held by tests/tests/layers.rs):
//!
//! - edges: `api` (the one HTTP Router, the dashboard, InfluxDB's wire),
//!   `mqtt` (topics and payloads, the IoT rule), `stream` (DynamoDB Streams
//!   handlers);
//! - use cases: `ingest`, `query`, `influxql`, `registry` (maintenance and
//!   the cache), `rollups` (kept, refreshed and rebuilt once for both engines),
//!   `export` (readings out as line protocol or CSV, and back in), `alerts`;
//! - storage: `store` (the trait, the rollups' primitives, `store::dynamodb`,
//!   `store::sqlite`);
//! - domain: `model` (validated types), `domain` (rules both engines share),
//!   `keys` (the one place that formats keys and cursors).
//!
//! `config` is the one configuration and `assembly` builds the program from
//! it; `auth` holds the token and access rules; `retry` the one backoff.

pub mod alert_settings;
pub mod alerts;
pub mod api;
pub mod assembly;
pub mod auth;
pub mod config;
pub mod domain;
pub mod export;
pub mod https;
pub mod influxql;
pub mod ingest;
pub mod keys;
pub mod model;
pub mod mqtt;
pub mod notify;
pub mod query;
pub mod registry;
pub mod retry;
pub mod rollups;
pub mod schedule;
pub mod sdk;
pub mod store;
pub mod stream;
pub mod telemetry;

pub use aws_lambda_events;
