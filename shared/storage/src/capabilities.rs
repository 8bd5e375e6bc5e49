//! What an engine does beyond the interface's operations, for the use
//! cases that answer differently on each: one value, in place of a flag per
//! question.

use domain::indexes::Indexes;

/// What an engine does on its own, and which optional indexes it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether writing readings also brings the registry up to date (the
    /// embedded store does, in the same transaction). Otherwise a stream
    /// consumer does it, later (DynamoDB).
    pub registry_follows_writes: bool,
    /// Whether aggregates may be answered from hour and day rollups of the
    /// devices' readings (docs/rollups.md); otherwise they read the readings.
    pub answers_from_rollups: bool,
    /// Whether a batch's readings of a device's closed hours may be written
    /// straight into their hour blocks and rollups, with no item per
    /// reading (`ReadingStore::write_hour_blocks`, issue 78). An engine
    /// that seals its own writes into blocks (the embedded store) says no.
    pub hour_blocks_from_batches: bool,
    /// The optional indexes this store keeps (the embedded store: all, at no
    /// extra cost per reading worth a setting).
    pub indexes: Indexes,
}

impl Default for Capabilities {
    /// An engine that keeps every index and neither the registry nor rollups
    /// with its writes.
    fn default() -> Self {
        Self {
            registry_follows_writes: false,
            answers_from_rollups: false,
            hour_blocks_from_batches: false,
            indexes: Indexes::ALL,
        }
    }
}
