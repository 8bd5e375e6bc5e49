//! Handlers of scheduled events (EventBridge schedules in template.yaml):
//! `alerts`, the alerts function's evaluation and delivery every minute.

pub mod alerts;
