//! The alert receivers (issue 42, docs/alerts.md): adapters of the alerts
//! use case's `Receiver` port, each telling one kind of listener:
//! `webhook` posts Alertmanager's JSON (so a real Alertmanager routes it on),
//! `ntfy` posts to a topic, `sns` publishes to the topic the template
//! creates. The MQTT receiver is `ingester-local`'s (it owns the broker's
//! client). `receiver.rs` is the port they answer, `ReceiverSpec` how
//! settings name them.

pub mod http;
pub mod ntfy;
pub mod receiver;
pub mod sns;
pub mod spec;
pub mod webhook;

pub use receiver::{Receiver, Receivers};
pub use spec::{ReceiverSpec, SpecError};
