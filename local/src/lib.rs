//! The ingester without AWS: the same handlers as the Lambdas, behind a local
//! HTTP server (`http`), fed by a local change log or a DynamoDB stream
//! (`stream_poller`), and a replayer of Lambda event files (`replay`).

pub mod http;
pub mod replay;
pub mod stream_poller;
