//! Alerts' rules, written once for both engines (issue 42, docs/alerts.md):
//! what a rule says (`rule.rs`), what it sees at an evaluation
//! (`observe.rs`), and how one series of it moves between inactive,
//! pending, firing and resolved (`series.rs`).

pub mod observe;
pub mod rule;
pub mod series;

pub use observe::{devices_in, observe, Observation};
pub use rule::{Condition, Rule, RuleError, Scope, Side};
pub use series::{Phase, SeriesState, Transition};
