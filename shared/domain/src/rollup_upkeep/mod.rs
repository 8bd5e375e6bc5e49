//! Rollup upkeep, the rule both engines keep (docs/rollups.md): a device's
//! hour and day rollups equal to a fold of its readings, over the
//! primitives of `RollupSpans`, which each engine implements.
//!
//! - `keep`: in the readings' own write transaction (the embedded store);
//! - `refresh`: behind the writes, per stream batch (DynamoDB's rollups
//!   function), with the marker that says from where they are complete;
//! - `rebuild`: day by day over a range;
//! - `recompute`: the spans a change touches, hours then days.
//!
//! It does no I/O of its own: the primitives do, so the embedded store's
//! transaction (whose primitives answer at once, `at_once`) and DynamoDB's
//! client drive the same code. The rollups use case (`usecases::rollups`)
//! runs it for the edges.

mod keep;
mod rebuild;
pub mod recompute;
mod refresh;
mod spans;

pub use keep::keep;
pub use rebuild::rebuild;
pub use refresh::refresh;
pub use spans::{Keeping, Marker, RollupSpans, RollupWrites};

use futures_util::FutureExt;
use std::future::Future;

/// Runs upkeep over primitives that answer at once (the embedded store's,
/// inside its write transaction): the future completes on its first poll.
pub fn at_once<T>(work: impl Future<Output = T>) -> T {
    work.now_or_never()
        .expect("the embedded store's rollup primitives answer at once")
}
