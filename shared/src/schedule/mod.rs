//! Handlers of scheduled events (EventBridge schedules in template.yaml):
//! `alerts`, the alerts function's evaluation and delivery every minute;
//! `mqtt_stream`, the mqtt function's read of IoT Core's Kinesis stream.

pub mod alerts;
pub mod mqtt_stream;
