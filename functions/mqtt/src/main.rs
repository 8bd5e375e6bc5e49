//! `mqtt` Lambda: AWS IoT Core's messages (docs/mqtt.md), each from the
//! topic rule's action, or, where `MQTT_STREAM` names the Kinesis stream a
//! Basic Ingest rule fills, read from it on a schedule (docs/batches.md).
//! Each goes through the same ingest as HTTP. Wiring only; the handlers
//! live in `shared::mqtt::iot_rule` and `shared::schedule::mqtt_stream`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use shared::mqtt::iot_rule::RuleMessage;
use shared::sdk::kinesis::KinesisStream;

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
    match config.mqtt_stream.clone() {
        None => {
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
        Some(name) => {
            let sdk = shared::assembly::sdk_config(None, config.dynamodb.budget).await;
            let stream = &KinesisStream {
                client: shared::sdk::kinesis::client(&sdk),
                name,
            };
            // The registry's latest values kept as the registry function
            // keeps them: at most once an interval while warm.
            let upkeep = &shared::registry::RegistryUpkeep::new(config.registry_latest_interval);
            lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
                // An error is the run's alarm; the next run reads again.
                registry
                    .ensure_loaded(store)
                    .await
                    .map_err(|e| Error::from(format!("loading the registry: {e}")))?;
                let report = shared::schedule::mqtt_stream::run(
                    store,
                    registry,
                    upkeep,
                    stream,
                    &stream.name,
                )
                .await
                .map_err(Error::from)?;
                Ok::<_, Error>(serde_json::json!({"read": report.read, "stored": report.stored}))
            }))
            .await
        }
    }
}
