//! The ingester without AWS: the library's Router behind `axum::serve` (in
//! `main`), whose registry follows each write on the embedded store and a
//! DynamoDB stream on a table (`stream_poller`),
//! and a replayer of Lambda event files (`replay`); at home, a subscription
//! to an MQTT broker (`mqtt`); export and import files (`portable`).

pub mod alert_rules;
pub mod blocks;
pub mod migrate;
pub mod mqtt;
pub mod mqtt_alerts;
pub mod portable;
pub mod readiness;
pub mod reindex;
pub mod replay;
pub mod scheduled_alerts;
pub mod scheduled_backups;
pub mod stop;
pub mod stream_poller;
