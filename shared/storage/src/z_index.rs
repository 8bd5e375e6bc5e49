//! A read of a Z-order index (box search): its request and its page.

use crate::keys::zorder::ZKey;
use domain::model::{DeviceId, Reading, RoomId};

/// A Z-order index partition: one room's or one device's climate readings.
#[derive(Debug, Clone, Copy)]
pub enum ZIndex<'a> {
    Room(&'a RoomId),
    Device(&'a DeviceId),
}

/// Keys `from..=to` of a Z-order index, after `after` when set, at most `limit` items read.
#[derive(Debug, Clone, Copy)]
pub struct ZRangeRequest<'a> {
    pub from: &'a ZKey,
    pub to: &'a ZKey,
    pub after: Option<&'a ZKey>,
    pub limit: usize,
}

/// Sealed readings inside a box (`Store::sealed_in_box`), in Z order.
#[derive(Debug, Clone, Default)]
pub struct SealedPage {
    pub items: Vec<(ZKey, Reading)>,
    /// Readings decoded to find them: what the read cost.
    pub decoded: usize,
}

/// What one index read returned, in key order.
#[derive(Debug, Clone, Default)]
pub struct ZPage {
    pub items: Vec<(ZKey, Reading)>,
    /// Items the engine read, including expired ones it then filtered out.
    pub scanned: usize,
    /// The last key read, when more may follow.
    pub last_read: Option<ZKey>,
}
