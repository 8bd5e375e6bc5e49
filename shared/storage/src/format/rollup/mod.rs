//! A rollup as both engines store it (postcard bytes on SQLite, an item's
//! attributes on DynamoDB), and the shapes of earlier versions, still read.
//!
//! - `stored`: the current shape (`Stored`, version 2, with gas and water
//!   in `x`), written from a `Rollup` and decoded back into one;
//! - `v1`: version 1's shape (the two electricity counters together);
//! - `postcard`: the embedded store's postcard bodies, and version 2's
//!   shape as postcard wrote it;
//! - `counters`: a body's counters alone, for energy answers.

mod counters;
mod postcard;
mod stored;
mod v1;

pub use counters::StoredCounters;
pub use postcard::{from_postcard, postcard_version, to_postcard, StoredV2, StoredV5};
pub use stored::{
    kept_marks, Stored, StoredCounter, StoredField, StoredMark, StoredRoom, StoredTariffs,
    StoredVolumes, STORED_VERSION,
};
pub use v1::{StoredCountersV1, StoredV1};
