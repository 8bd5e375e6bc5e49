//! How long a reading is kept (`RETENTION_DAYS`, `RAW_READING_DAYS`): the
//! rule both engines and the configuration share.

use crate::model::Timestamp;

/// How long readings are kept: each is written with `expires_at` = its
/// timestamp + this many days (epoch seconds). DynamoDB's TTL deletes it some
/// time after that; until then reads hide it. The registry is never expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    days: u32,
}

impl Retention {
    /// `None` for 0 days: keep forever.
    pub fn days(days: u32) -> Option<Self> {
        (days > 0).then_some(Self { days })
    }

    pub fn expires_at(&self, t: Timestamp) -> i64 {
        t.millis().div_euclid(1000) + i64::from(self.days) * 86_400
    }

    /// The earliest epoch millisecond whose reading has not expired at
    /// `now` (epoch seconds): `expires_at(t) > now` exactly when `t` is at
    /// or after it.
    pub fn first_kept_millis(&self, now_epoch_seconds: i64) -> i64 {
        (now_epoch_seconds - i64::from(self.days) * 86_400 + 1) * 1000
    }
}
