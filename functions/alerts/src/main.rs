//! `alerts` Lambda: every minute (an EventBridge schedule), the stored
//! alert rules evaluated and their notifications delivered (docs/alerts.md).
//! Wiring only; the handler lives in `shared::schedule::alerts`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

// One event at a time per sandbox, on a fraction of a vCPU: one thread
// serves it (no worker threads, no per-thread allocator arenas; issue 43).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let (store, receivers) = shared::assembly::alerts_function(&config).await?;
    let (store, receivers) = (&store, &receivers);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        shared::schedule::alerts::handle(store, receivers, &event.payload)
            .await
            .map_err(Error::from)
    }))
    .await
}
