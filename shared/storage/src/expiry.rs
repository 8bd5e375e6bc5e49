//! When a reading's DynamoDB item expires (TTL).

use crate::Retention;
use domain::model::Timestamp;

/// A late reading's raw item lives at least this long after it is written,
/// whatever its raw window says: time for the rollups function to fold it
/// into its hour's block before TTL may delete it, with days to spare for a
/// replay from the failure queue or a `blocks rebuild` (docs/blocks.md).
pub const LATE_RAW_GRACE_SECONDS: i64 = 7 * 86_400;

/// When a reading's item expires on DynamoDB: the sooner of its retention
/// (the reading is forgotten) and its raw window (`RAW_READING_DAYS`: the
/// item goes, the reading stays in its hour's block). `None`: never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub retention: Option<Retention>,
    pub raw: Option<Retention>,
    /// When the item is written (epoch seconds).
    pub now: i64,
}

impl Expiry {
    /// Items that never expire.
    pub const NEVER: Expiry = Expiry {
        retention: None,
        raw: None,
        now: 0,
    };

    pub fn at(&self, t: Timestamp) -> Option<i64> {
        let kept = self.retention.map(|k| k.expires_at(t));
        let raw = self
            .raw
            .map(|k| k.expires_at(t).max(self.now + LATE_RAW_GRACE_SECONDS));
        match (kept, raw) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Now, as epoch seconds: what `expires_at` is compared with.
pub fn now_epoch_seconds() -> i64 {
    Timestamp::now().millis().div_euclid(1000)
}
