//! `rollups` Lambda: DynamoDB Streams batches keep each device's hour and day
//! rollups (docs/rollups.md). A second function on the table's stream, not
//! the registry's: it runs with a long batching window, since every batch
//! rewrites each touched hour and its day whole. Wiring only; the handler
//! lives in `shared`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::aws_lambda_events::event::dynamodb::Event;

// One event at a time per sandbox, on a fraction of a vCPU: one thread
// serves it (no worker threads, no per-thread allocator arenas; issue 43).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let store = shared::assembly::stream_function(&config).await?;
    let store = &store;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| async move {
        Ok::<_, Error>(shared::stream::rollups::handle(store, event.payload).await)
    }))
    .await
}
