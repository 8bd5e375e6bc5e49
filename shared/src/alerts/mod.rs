//! The alerts use case (issue 42, docs/alerts.md), over the domain's rules
//! and states (`domain::alerts`): so far, `replay`, which evaluates rules
//! over stored readings as if time had run.

pub mod replay;

pub use replay::replay;
