//! The rollups use case (docs/rollups.md): keeping a device's hour and day
//! rollups equal to a fold of its readings, over the rule both engines
//! keep (`domain::rollup_upkeep`).
//!
//! - `keep`: in the readings' own write transaction (the embedded store);
//! - `refresh`: behind the writes, per stream batch (DynamoDB's rollups
//!   function), with the marker that says from where they are complete;
//! - `rebuild`: day by day over a range (`rollups rebuild`, `blocks rebuild`);
//! - `catch_up`: what an earlier version left stale, rebuilt when a store opens;
//! - `Upkeep`: which of them each engine runs, for the edges.
//!
//! It does no I/O of its own: the primitives do.

mod catch_up;
mod devices;
mod refresh_hours;

pub use catch_up::{catch_up, CatchUp, CatchUpReport};
pub use devices::{devices, rebuild_device};
pub use domain::rollup_upkeep::{keep, rebuild, refresh};
pub use refresh_hours::refresh_hours;
pub use storage::Upkeep;
