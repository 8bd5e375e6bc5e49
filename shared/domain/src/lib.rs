//! The domain's rules, below every store: what both engines must agree on is
//! written here once. Nothing in this folder imports a store, the API, the
//! stream edge or an AWS SDK; it works on `model` types only.
//!
//! - `registry`: a batch of readings → one update per device and per room,
//!   and how an update merges into a record (time never moves backwards);
//! - `aggregate`: buckets, statistics and energy folds; `aggregate::rollup`,
//!   the hour and day rollup algebra and the one cascade rule;
//! - `rollup_upkeep`: keeping, rebuilding and recomputing rollups over the
//!   primitives each engine implements (`RollupSpans`);
//!   `aggregate::counter`, the meter rule;
//! - `registry_list`: lists of devices and rooms a page at a time, and
//!   what their filters admit;
//! - `registry_writes`: which registry updates are worth a write (what the
//!   registry function remembers while warm);
//! - `room_presence`: which devices a room read merges, over which time;
//! - `batch_hours`: which of a batch's readings are written as hour blocks;
//! - `block`: the block codec, a device's readings over a span as a few bytes;
//! - `tariff`: a flat price per kWh, what energy cost.

pub mod aggregate;
pub mod alerts;
pub mod batch_hours;
pub mod block;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod indexes;
pub mod model;
pub mod registry;
pub mod registry_list;
pub mod registry_writes;
pub mod retention;
pub mod rollup_upkeep;
pub mod room_presence;
pub mod tariff;
