//! The rollups use case (docs/rollups.md): keeping a device's hour and day
//! rollups equal to a fold of its readings, written once for both engines
//! over the storage primitives of `store::RollupSpans`.
//!
//! - `keep`: in the readings' own write transaction (the embedded store);
//! - `refresh`: behind the writes, per stream batch (DynamoDB's rollups
//!   function), with the marker that says from where they are complete;
//! - `rebuild`: day by day over a range (`rollups rebuild`, `blocks rebuild`);
//! - `Upkeep`: which of them each engine runs, for the edges.
//!
//! It does no I/O of its own: the primitives do, so the embedded store's
//! transaction (whose primitives answer at once, `at_once`) and DynamoDB's
//! client drive the same code.

mod keep;
mod rebuild;
mod recompute;
mod refresh;
mod upkeep;

pub use keep::keep;
pub use rebuild::rebuild;
pub use refresh::refresh;
pub use upkeep::{devices, Upkeep};

use futures_util::FutureExt;
use std::future::Future;

/// Runs the use case over primitives that answer at once (the embedded
/// store's, inside its write transaction): the future completes on its
/// first poll.
pub fn at_once<T>(work: impl Future<Output = T>) -> T {
    work.now_or_never()
        .expect("the embedded store's rollup primitives answer at once")
}
