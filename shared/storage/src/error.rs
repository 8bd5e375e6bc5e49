//! What a store operation can fail with.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The engine did not answer, throttled past the retry budget, or refused.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// An item in the table does not decode (written by something else?).
    #[error("stored item does not decode: {0}")]
    Corrupt(String),
    /// Another writer changed what this one read (an hour item both the
    /// rollups function and a batch write): running it again succeeds.
    #[error("changed by another writer: {0}")]
    Conflict(String),
}
