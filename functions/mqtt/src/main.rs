//! `mqtt` Lambda: AWS IoT Core's messages (docs/mqtt.md), each from the
//! topic rule's action, or, where `MQTT_STREAM` names the Kinesis stream a
//! Basic Ingest rule fills, read from it on a schedule (docs/batches.md).
//! Wiring only; the handlers are `shared::mqtt::iot_rule` and
//! `shared::schedule::mqtt_stream`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::mqtt::iot_rule::RuleMessage;

// One event at a time per sandbox, on a fraction of a vCPU: one thread
// serves it (no worker threads, no per-thread allocator arenas; issue 43).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let store = &shared::assembly::stream_function(&config).await?;
    // Loaded by the first event, not in init (issue 43); an error makes
    // Lambda retry a message (then keep it in the failure queue), or fails
    // a run (the next one reads again).
    let registry = &shared::registry::RegistryCache::unloaded(config.registry_cache_ttl);
    let loaded = || async move {
        registry
            .ensure_loaded(store)
            .await
            .map_err(|e| Error::from(format!("loading the registry: {e}")))
    };
    let Some(stream) = &shared::assembly::mqtt_stream(&config).await else {
        return lambda_runtime::run(service_fn(
            move |event: LambdaEvent<RuleMessage>| async move {
                loaded().await?;
                let handled = shared::mqtt::iot_rule::handle(store, registry, &event.payload).await;
                handled.map_err(|e| Error::from(e.to_string()))
            },
        ))
        .await;
    };
    // The registry's latest values kept as the registry function keeps them.
    let upkeep = &shared::registry::RegistryUpkeep::new(config.registry_latest_interval);
    lambda_runtime::run(service_fn(
        move |_: LambdaEvent<serde_json::Value>| async move {
            loaded().await?;
            let report =
                shared::schedule::mqtt_stream::run(store, registry, upkeep, stream, &stream.name);
            let report = report.await.map_err(Error::from)?;
            Ok::<_, Error>(serde_json::json!({"read": report.read, "stored": report.stored}))
        },
    ))
    .await
}
