//! The ingester without AWS: the library's Router behind `axum::serve` (in
//! `main`), fed by a local change log or a DynamoDB stream (`stream_poller`),
//! and a replayer of Lambda event files (`replay`).

pub mod replay;
pub mod stream_poller;
