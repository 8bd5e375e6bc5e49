//! The `registry` binary under a Lambda Runtime API emulator applies the
//! sample stream event to a dynalite table.

use integration_tests::runtime_api::Runtime;
use integration_tests::{dynalite, fresh_store};
use serde_json::{json, Value};
use shared::store::RegistryStore;

#[tokio::test]
async fn the_registry_binary_applies_the_sample_stream_event() {
    let store = fresh_store(&dynalite(), "bin-registry").await;
    let path = format!(
        "{}/../../events/04-stream-registry.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut rt = Runtime::start().await;
    rt.spawn(
        env!("CARGO_BIN_EXE_registry"),
        &[
            ("TABLE_NAME", store.table()),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynalite()),
        ],
    );
    let answer = rt.invoke(event).await.unwrap();
    assert_eq!(answer, json!({"batchItemFailures": []}));
    let registry = store.load_registry().await.unwrap();
    assert_eq!(registry.devices.len(), 3);
    assert_eq!(registry.rooms.len(), 2);
}
