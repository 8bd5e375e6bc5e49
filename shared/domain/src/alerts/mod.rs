//! Alerts' rules, written once for both engines (issue 42, docs/alerts.md):
//! what a rule says (`rule.rs`), what it sees at an evaluation
//! (`observe.rs`), how one series of it moves between inactive, pending,
//! firing and resolved (`series.rs`), and one evaluation of every rule
//! (`evaluation.rs`), what receivers are told (`notification.rs`) and a
//! notification on its way to one receiver (`delivery.rs`).

pub mod delivery;
pub mod evaluation;
#[cfg(test)]
pub mod fixtures;
pub mod notification;
pub mod observe;
pub mod rule;
pub mod series;

pub use delivery::{Delivery, ReceiverStatus};
pub use evaluation::{Event, SeriesKey, States};
pub use notification::Notification;
pub use observe::{devices_in, observe, DeviceView, Devices, Observation};
pub use rule::{Condition, Rule, RuleError, RuleName, Scope, Side};
pub use series::{Phase, SeriesState, Transition};
