//! `mqtt` Lambda: the AWS IoT Core topic rule's action (docs/mqtt.md). Each
//! message goes through the same ingest as HTTP. Wiring only; the handler
//! lives in `shared::mqtt::iot_rule`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::mqtt::iot_rule::RuleMessage;

// One event at a time per sandbox, on a fraction of a vCPU: one thread
// serves it (no worker threads, no per-thread allocator arenas; issue 43).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let store = shared::assembly::stream_function(&config).await?;
    // Loaded by the first message, not in init (issue 43).
    let registry = shared::registry::RegistryCache::unloaded(config.registry_cache_ttl);
    let (store, registry) = (&store, &registry);
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<RuleMessage>| async move {
            // An error makes Lambda retry, then hand the message to the failure queue.
            registry
                .ensure_loaded(store)
                .await
                .map_err(|e| Error::from(format!("loading the registry: {e}")))?;
            shared::mqtt::iot_rule::handle(store, registry, &event.payload)
                .await
                .map_err(|e| Error::from(e.to_string()))
        },
    ))
    .await
}
