//! The key of a sealed block's row (`blocks`, `block_tails`, `day_segments`,
//! `block_spans`): `device << 32 | day`, days since 1970, so a device's
//! blocks are one range of a rowid B-tree, in time order.

/// The row key of a device's day. Days outside the 32 bits (bounds of a
/// read that reach beyond any timestamp) are clamped to them, so that a
/// key range never strays into another device's blocks.
pub fn key(device: i64, day: i64) -> i64 {
    device << 32 | day.clamp(0, LAST_DAY)
}

/// The last day a key holds, and the mask of a key's day.
pub const LAST_DAY: i64 = 0xffff_ffff;
