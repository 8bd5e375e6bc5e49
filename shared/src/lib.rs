//! The IoT reading ingester, assembled: every Lambda's `main` and every
//! `ingester-local` command depends on this crate alone.
//!
//! The layers are crates under `shared/` (docs/architecture.md), and Cargo's
//! dependency graph is the layering rule: data flows one way.
//!
//! - edges: `api` (the crate: the one HTTP Router, the dashboard, InfluxDB's
//!   wire); here `mqtt` (topics and payloads, the IoT rule), `stream`
//!   (DynamoDB Streams handlers) and `schedule` (the alerts schedule);
//! - use cases: `usecases` (ingest, query, registry, rollups, InfluxQL,
//!   export, alerts);
//! - storage: `storage` (the interface, key encoding), one crate per engine
//!   (`dynamodb`, `sqlite`);
//! - domain: `domain` (validated types in `domain::model`, and the rules
//!   both engines share).
//!
//! Here: `config`, the one configuration; `assembly`, which builds the
//! program from it; `sdk` and `telemetry`. The rest of this root re-exports
//! the layers under their module names, so a binary names one crate.

pub mod assembly;
pub mod config;
pub mod mqtt;
pub mod schedule;
pub mod sdk;
pub mod stream;
pub mod telemetry;

pub use domain;
pub use domain::model;
pub use storage::{keys, retry};
pub use usecases::{
    alert_settings, alerts, auth, export, fleet_cost, https, influxql, ingest, migrate, notify,
    query, registry, rollups,
};
// The HTTP edge: only for the binaries that serve HTTP (the ingest, query
// and dashboard functions, `ingester-local`), so the stream, schedule and
// MQTT functions neither build nor link axum.
#[cfg(feature = "api")]
pub use api;

/// The storage interface and its engines, as one module.
pub mod store {
    pub use dynamodb::{self, DynamoStore};
    #[cfg(feature = "sqlite")]
    pub use sqlite::{self, SqliteStore};
    pub use storage::*;
}

pub use aws_lambda_events;
