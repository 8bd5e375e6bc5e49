//! The alerts use case (issue 42, docs/alerts.md), over the domain's rules
//! and states (`domain::alerts`): `evaluate`, one live evaluation of the
//! stored rules, its states kept in the store; `replay`, which evaluates
//! rules over stored readings as if time had run; `active`, what is
//! pending or firing now.

pub mod active;
pub mod evaluate;
pub mod replay;

pub use active::{active, Active};
pub use evaluate::{evaluate, Evaluated};
pub use replay::replay;
