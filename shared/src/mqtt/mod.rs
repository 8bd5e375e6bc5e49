//! The MQTT edge (docs/mqtt.md): a message's topic and payload become a
//! write of ours (`payload`), stored by the one ingest (`message`); AWS IoT
//! Core's rule delivers them to a Lambda (`iot_rule`, run by
//! `functions/mqtt`), a home broker to `ingester-local serve --mqtt`
//! (`local/src/mqtt.rs`), whose health `subscription` keeps for `/health`.

pub mod iot_rule;
mod message;
pub mod payload;
pub mod subscription;

pub use message::{ingest_message, MessageError};
