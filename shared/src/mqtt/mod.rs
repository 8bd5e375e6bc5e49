//! The MQTT edge (docs/mqtt.md): a message's topic and payload become a
//! write of ours (`payload`), stored by the one ingest (`message`; the
//! messages in flight from a broker together, `batch`); AWS IoT
//! Core's rule delivers them to a Lambda (`iot_rule`, run by
//! `functions/mqtt`; or, batched, a Kinesis stream's window: `kinesis`), a home broker to `ingester-local serve --mqtt`
//! (`local/src/mqtt.rs`), whose health `subscription` keeps for `/health`
//! and whose messages `receive_clock` times (a redelivery its first time:
//! `redeliveries`).

mod batch;
pub mod iot_rule;
pub mod kinesis;
mod message;
pub mod payload;
mod receive_clock;
mod redeliveries;
// The health a subscription keeps, which `GET /health` (the HTTP edge) shows.
pub use usecases::subscription;

pub use batch::{ingest_messages, Message, Outcome};
pub use message::{ingest_message, MessageError};
pub use receive_clock::ReceiveClock;
pub use redeliveries::{ReceiveTimes, REMEMBERED_MS};
