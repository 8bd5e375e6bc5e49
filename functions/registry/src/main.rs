//! `registry` Lambda: DynamoDB Streams batches keep the DEVICE and ROOM items
//! up to date. Wiring only; the handler lives in `shared`.

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
    // What this instance wrote, kept from batch to batch (docs/cost.md).
    let upkeep = &shared::registry::RegistryUpkeep::new(config.registry_latest_interval);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| async move {
        Ok::<_, Error>(shared::stream::handle_with(store, upkeep, event.payload).await)
    }))
    .await
}
