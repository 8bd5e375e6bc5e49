//! The alerts use case (issue 42, docs/alerts.md), over the domain's rules
//! and states (`domain::alerts`): `evaluate`, one live evaluation of the
//! stored rules, its states kept in the store; `replay`, which evaluates
//! rules over stored readings as if time had run; `active`, what is
//! pending or firing now; `deliver`, the notifications evaluation queued,
//! sent to their receivers; `watched`, the registry entries a run's rules
//! need, read scope by scope.

pub mod active;
pub mod deliver;
pub mod evaluate;
pub mod replay;
pub mod rules;
pub mod watched;

pub use active::{active, Active};
pub use deliver::{deliver, Sent};
pub use evaluate::{evaluate, Evaluated};
pub use replay::replay;
pub use watched::watched;
