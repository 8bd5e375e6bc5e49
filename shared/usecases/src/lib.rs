//! The use cases, over the storage interface and the domain: what the
//! edges (HTTP, MQTT, stream and schedule handlers, the CLI) ask for.
//!
//! - `ingest`: readings in (JSON, line protocol), validated and written;
//! - `query`: ranges, latest values, stats and energy;
//! - `registry`: the device and room registry, its maintenance and cache;
//! - `rollups`: hour and day rollups kept, refreshed and rebuilt;
//! - `influxql`: InfluxQL for Grafana over the same reads;
//! - `export`: readings out as line protocol or CSV, and back in;
//! - `alerts`, `alert_settings`, `notify`: rules evaluated, receivers told;
//! - `https`: the one outbound HTTP client (receivers, the AWS SDK);
//! - `stream_reading`: an outside stream (IoT Core's Kinesis) read into the store.

pub mod alert_settings;
pub mod alerts;
pub mod auth;
pub mod export;
pub mod fleet_cost;
pub mod https;
pub mod influxql;
pub mod ingest;
pub mod migrate;
pub mod notify;
pub mod query;
pub mod registry;
pub mod rollups;
pub mod stream_reading;
pub mod subscription;
