//! Key encoding: the one place that formats or parses a key. Readings are
//! `pk=<device id>, sk=TS#<timestamp>`; the registry lives in the `DEVICE` and
//! `ROOM` partitions; cursors are opaque strings bound to one query; climate
//! readings carry a Z-order key ([`zorder`]) for box search.

pub mod zorder;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use domain::model::{DeviceId, RoomId, Span, TimeRange, Timestamp};
use sha2::{Digest, Sha256};

/// Partition key of the device registry items (`sk` = device id).
pub const DEVICE_PARTITION: &str = "DEVICE";
/// Partition key of the room registry items (`sk` = room id).
pub const ROOM_PARTITION: &str = "ROOM";
/// Prefix of every reading's sort key. Range conditions stay inside it, so no
/// other item that shares a partition (or the `room-time` index) can appear in a range.
pub const READING_PREFIX: &str = "TS#";
/// Name of the index partitioned by room and sorted by `sk`.
pub const ROOM_TIME_INDEX: &str = "room-time";
/// Index of climate readings partitioned by room, sorted by Z-order key.
pub const ROOM_Z_INDEX: &str = "room-z";
/// Index of climate readings partitioned by device (`pk`), sorted by Z-order key.
pub const DEVICE_Z_INDEX: &str = "device-z";

/// Index of every reading, sharded over `ALL#1..=ALL#N`, sorted by time then device.
pub const ALL_TIME_INDEX: &str = "all-time";
/// Default number of `all-time` shards: a prime above every code point an id
/// may use would spread perfectly but fan out too far; 11 spreads realistic
/// ids within 1.5x of uniform (see `shard_of`).
pub const DEFAULT_SHARDS: u32 = 11;
/// Most shards a deployment may configure (a page reads every shard).
pub const MAX_SHARDS: u32 = 64;

/// The `all-time` shard of a device, seed 000's calculated suffix: the product
/// of the id's code points, mod `shards`, plus 1.
///
/// The product is computed with **wrapping** 64-bit arithmetic. For the short
/// ids where it does not overflow this equals the big-integer result
/// (`"Terui"` with 200 shards is 161, as in the seed). For longer ids, the
/// big-integer product is divisible by every small factor of the code points
/// (`'0'` = 48 = 2^4·3, `'-'` = 45 = 3^2·5), so with a composite or small
/// `shards` it lands on shard 1 almost always. Wrapping keeps the low bits
/// mixed, and an **odd** shard count is then close to uniform. An even count
/// is refused by the configuration.
pub fn shard_of(device: &DeviceId, shards: u32) -> u32 {
    let product = device
        .as_str()
        .chars()
        .fold(1u64, |p, c| p.wrapping_mul(c as u64));
    (product % shards.max(1) as u64) as u32 + 1
}

/// `shard` attribute of a reading in the `all-time` index.
pub fn all_time_pk(shard: u32) -> String {
    // Every reading written formats one: no `format!` machinery.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(shard);
    let mut out = String::with_capacity(4 + digits.len());
    out.push_str("ALL#");
    out.push_str(digits);
    out
}

/// `ats` attribute: the reading's `sk`, then `#` and the device, so the index
/// orders by time, then device.
pub fn all_time_sk(ts: Timestamp, device: &DeviceId) -> String {
    all_time_sk_of(&reading_sk(ts), device)
}

/// `ats` from the reading's `sk` when it is already formatted (the write path).
pub fn all_time_sk_of(reading_sk: &str, device: &DeviceId) -> String {
    let mut out = String::with_capacity(reading_sk.len() + 1 + device.as_str().len());
    out.push_str(reading_sk);
    out.push('#');
    out.push_str(device.as_str());
    out
}

/// Bounds of a time range in `ats` (`~` sorts after every id character).
pub fn all_time_sk_bounds(range: &TimeRange) -> (String, String) {
    (
        reading_sk(range.from()),
        format!("{}#~", reading_sk(range.last())),
    )
}

/// Attribute names of the table.
pub mod attr {
    pub const PK: &str = "pk";
    pub const SK: &str = "sk";
    pub const ROOM: &str = "room";
    /// A DEVICE item's room. Not `room`, which keys the `room-time` and
    /// `room-z` indexes: a registry item must enter neither (issue 25).
    /// Items from before carry `room`; they are read the same way.
    pub const DEVICE_ROOM: &str = "in_room";
    /// A ROOM item's day from which its presence items are complete
    /// (`domain::room_presence`).
    pub const PRESENCE_SINCE: &str = "presence_since";
    /// The Z-order key of a climate reading ([`super::zorder::ZKey`]).
    pub const Z: &str = "z";
    /// `ALL#<n>`: the reading's `all-time` shard.
    pub const SHARD: &str = "shard";
    /// The reading's `all-time` sort key ([`super::all_time_sk`]).
    pub const ATS: &str = "ats";
    /// An hour rollup item's block: the hour's readings in
    /// `domain::block`'s codec (docs/blocks.md).
    pub const BLOCK: &str = "blk";
    /// An hour item's counter chain entering its hour: time, kWh bought, kWh sold.
    pub const ENTERING: &str = "e";
}

/// Alert rules: an item each, `sk` the rule's name (ids cannot hold `#`,
/// so no device's partition is this one).
pub const ALERT_RULES_PARTITION: &str = "ALERT#RULE";
/// Alert series that are not inactive: an item each, `sk` `<rule>#<device>`.
pub const ALERT_STATES_PARTITION: &str = "ALERT#STATE";

/// Notifications waiting for their receivers: an item each, `sk`
/// `<receiver>#<rule>#<device>`.
pub const ALERT_DELIVERIES_PARTITION: &str = "ALERT#DELIVERY";

/// Where the mqtt function has read an outside stream to (`StreamPositions`):
/// an item a shard in `STREAM#<stream>`, `sk` the shard's id (no device's
/// partition: ids cannot hold `#`; no reading's `sk`).
pub fn stream_positions_pk(stream: &str) -> String {
    format!("STREAM#{stream}")
}

/// A delivery's `sk` in `ALERT_DELIVERIES_PARTITION` (receiver and rule
/// names hold no `#`).
pub fn alert_delivery_sk(receiver: &str, rule: &str, device: &str) -> String {
    format!("{receiver}#{rule}#{device}")
}

/// A series' `sk` in `ALERT_STATES_PARTITION` (rule names hold no `#`).
pub fn alert_state_sk(rule: &str, device: &DeviceId) -> String {
    format!("{rule}#{device}")
}

pub fn parse_alert_state_sk(sk: &str) -> Option<(String, DeviceId)> {
    let (rule, device) = sk.split_once('#')?;
    Some((rule.to_owned(), DeviceId::parse(device).ok()?))
}

/// `pk` of a device's readings.
pub fn reading_pk(device: &DeviceId) -> &str {
    device.as_str()
}

/// `sk` of a reading: `TS#2026-11-22T01:02:03.000Z`.
pub fn reading_sk(ts: Timestamp) -> String {
    let mut s = String::with_capacity(READING_PREFIX.len() + Timestamp::TEXT_LEN);
    write_reading_sk(ts, &mut s);
    s
}

/// Appends the `sk` of a reading to `out` (lets hot paths reuse a buffer).
pub fn write_reading_sk(ts: Timestamp, out: &mut String) {
    out.push_str(READING_PREFIX);
    ts.write_to(out);
}

/// The timestamp of a reading `sk`, or `None` if `sk` is not a reading key.
pub fn parse_reading_sk(sk: &str) -> Option<Timestamp> {
    let text = sk.strip_prefix(READING_PREFIX)?;
    // Only the canonical fixed-width form is a key; anything else is some other item.
    let ts = Timestamp::parse(text).ok()?;
    (text.len() == Timestamp::TEXT_LEN && ts.to_string() == text).then_some(ts)
}

/// Inclusive `sk` bounds of a half-open time range, for `sk BETWEEN :lo AND :hi`.
pub fn reading_sk_bounds(range: &TimeRange) -> (String, String) {
    (reading_sk(range.from()), reading_sk(range.last()))
}

/// Sort-key prefixes of a device's hour and day rollups (docs/rollups.md), in
/// the device's own partition: `RH#<hour start>` and `RD#<day start>`. `R`
/// sorts before `T`, so no reading range (`TS#...`) can reach one, and a
/// rollup item carries none of the attributes the indexes are keyed on
/// (`room`, `z`, `shard`, `ats`), so no index holds it.
pub const HOUR_ROLLUP_PREFIX: &str = "RH#";
pub const DAY_ROLLUP_PREFIX: &str = "RD#";

fn rollup_prefix(span: Span) -> &'static str {
    match span {
        Span::Hour => HOUR_ROLLUP_PREFIX,
        Span::Day => DAY_ROLLUP_PREFIX,
    }
}

/// `sk` of a device's rollup marker on DynamoDB: the hour from which its
/// rollups are complete (docs/rollups.md). Neither a reading nor a rollup key.
pub const ROLLUPS_SINCE_SK: &str = "RSINCE";

/// `sk` of a device's rollup of `span` starting at `start`: `RH#2026-11-22T01:00:00.000Z`.
pub fn rollup_sk(span: Span, start: Timestamp) -> String {
    let mut s = String::with_capacity(3 + Timestamp::TEXT_LEN);
    s.push_str(rollup_prefix(span));
    start.write_to(&mut s);
    s
}

/// The span and start of a rollup `sk`, or `None` if `sk` is not one (or
/// not a span's start).
pub fn parse_rollup_sk(sk: &str) -> Option<(Span, Timestamp)> {
    let (span, text) = match sk.get(..3)? {
        HOUR_ROLLUP_PREFIX => (Span::Hour, &sk[3..]),
        DAY_ROLLUP_PREFIX => (Span::Day, &sk[3..]),
        _ => return None,
    };
    let ts = Timestamp::parse(text).ok()?;
    (text.len() == Timestamp::TEXT_LEN && ts.to_string() == text && span.start_of(ts) == ts)
        .then_some((span, ts))
}

/// Inclusive `sk` bounds of the rollups of `span` lying wholly inside `range`
/// (`None` when no whole span fits).
pub fn rollup_sk_bounds(span: Span, range: &TimeRange) -> Option<(String, String)> {
    let first = span.start_of(range.from().saturating_add_millis(span.millis() - 1));
    let last = span
        .start_of(range.to())
        .saturating_add_millis(-span.millis());
    (first <= last).then(|| (rollup_sk(span, first), rollup_sk(span, last)))
}

/// Partition of a room's presence items (issue 25): `ROOM#<room id>`. Ids
/// cannot hold `#`, so no device's partition can be one.
pub fn presence_pk(room: &RoomId) -> String {
    format!("{ROOM_PARTITION}#{room}")
}

/// `sk` of a presence item: the UTC day a device reported in the room, then
/// the device: `2026-11-22#sensor-1`.
pub fn presence_sk(day: Timestamp, device: &DeviceId) -> String {
    let mut s = day_text(day);
    s.push('#');
    s.push_str(device.as_str());
    s
}

fn day_text(day: Timestamp) -> String {
    let mut t = String::with_capacity(Timestamp::TEXT_LEN);
    day.write_to(&mut t);
    t.truncate(10);
    t
}

/// The day and device of a presence `sk`.
pub fn parse_presence_sk(sk: &str) -> Option<(Timestamp, DeviceId)> {
    let (day, device) = sk.split_once('#')?;
    let ts = Timestamp::parse(&format!("{day}T00:00:00.000Z")).ok()?;
    (day.len() == 10 && Span::Day.start_of(ts) == ts)
        .then_some(())
        .and(DeviceId::parse(device).ok().map(|d| (ts, d)))
}

/// Inclusive `sk` bounds of the presence items of the days `range` touches.
pub fn presence_sk_bounds(range: &TimeRange) -> (String, String) {
    // `$` sorts after `#`: every device of the last day.
    (
        format!("{}#", day_text(range.from())),
        format!("{}$", day_text(range.last())),
    )
}

/// Where a page of readings ended: the key of its last item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub timestamp: Timestamp,
    pub device_id: DeviceId,
}

/// What a cursor is bound to: the same partition, range and order.
#[derive(Debug, Clone, Copy)]
pub enum CursorScope<'a> {
    Device {
        device: &'a DeviceId,
        range: &'a TimeRange,
        descending: bool,
    },
    Room {
        room: &'a RoomId,
        range: &'a TimeRange,
        descending: bool,
    },
    /// Every device, merged over the `all-time` shards: one position in the
    /// merged order (time, device) is every shard's position.
    All {
        range: &'a TimeRange,
        descending: bool,
    },
}

/// Longest cursor accepted; real ones are under 250 characters.
pub const MAX_CURSOR_LEN: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("is longer than {MAX_CURSOR_LEN} characters")]
    TooLong,
    #[error("is not a cursor returned by this API")]
    Malformed,
    #[error("belongs to a different device, room, time range or order")]
    WrongScope,
}

const CURSOR_VERSION: &str = "c1";

impl CursorScope<'_> {
    fn tag(&self, pos_ms: i64, pos_device: &str) -> String {
        let mut h = Sha256::new();
        let (kind, id, range, desc) = match self {
            CursorScope::Device {
                device,
                range,
                descending,
            } => ("device", device.as_str(), range, descending),
            CursorScope::Room {
                room,
                range,
                descending,
            } => ("room", room.as_str(), range, descending),
            CursorScope::All { range, descending } => ("all", "", range, descending),
        };
        for part in [
            CURSOR_VERSION,
            kind,
            id,
            &range.from().millis().to_string(),
            &range.to().millis().to_string(),
            if *desc { "desc" } else { "asc" },
            &pos_ms.to_string(),
            pos_device,
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// An opaque cursor for the next page after `pos`.
    pub fn encode(&self, pos: &Position) -> String {
        let ms = pos.timestamp.millis();
        let text = format!(
            "{CURSOR_VERSION}.{}.{ms}.{}",
            self.tag(ms, pos.device_id.as_str()),
            pos.device_id
        );
        URL_SAFE_NO_PAD.encode(text)
    }

    /// Decodes a cursor, rejecting one that was altered or made for another query.
    pub fn decode(&self, cursor: &str) -> Result<Position, CursorError> {
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(CursorError::TooLong);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| CursorError::Malformed)?;
        let text = String::from_utf8(bytes).map_err(|_| CursorError::Malformed)?;
        let mut parts = text.splitn(4, '.');
        let (Some(version), Some(tag), Some(ms), Some(device)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(CursorError::Malformed);
        };
        if version != CURSOR_VERSION {
            return Err(CursorError::Malformed);
        }
        let ms_text = ms;
        let ms: i64 = ms.parse().map_err(|_| CursorError::Malformed)?;
        // Only the canonical spelling: `0001…` or `+1…` would give one position many cursors.
        if ms.to_string() != ms_text {
            return Err(CursorError::Malformed);
        }
        let timestamp = Timestamp::from_millis(ms).map_err(|_| CursorError::Malformed)?;
        let device_id = DeviceId::parse(device).map_err(|_| CursorError::Malformed)?;
        if tag != self.tag(ms, device) {
            return Err(CursorError::WrongScope);
        }
        let (range, same_device) = match self {
            CursorScope::Device { device, range, .. } => (range, *device == &device_id),
            CursorScope::Room { range, .. } | CursorScope::All { range, .. } => (range, true),
        };
        if !same_device || !range.contains(timestamp) {
            return Err(CursorError::WrongScope);
        }
        Ok(Position {
            timestamp,
            device_id,
        })
    }
}

const SEARCH_CURSOR_VERSION: &str = "z1";

fn search_tag(scope: &str, key: &str) -> String {
    tagged(SEARCH_CURSOR_VERSION, scope, key)
}

/// The check a cursor carries: a hash of its version, what it is bound to
/// and where it points.
fn tagged(version: &str, scope: &str, key: &str) -> String {
    let mut h = Sha256::new();
    for part in [version, scope, key] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An opaque cursor for a box search: the Z key of the last reading returned,
/// bound to `scope` (the partition and the box, spelled canonically by the caller).
pub fn encode_search_cursor(scope: &str, after: &zorder::ZKey) -> String {
    let key = after.as_str();
    URL_SAFE_NO_PAD.encode(format!(
        "{SEARCH_CURSOR_VERSION}.{}.{key}",
        search_tag(scope, key)
    ))
}

/// Decodes a box-search cursor, rejecting one altered or made for another search.
pub fn decode_search_cursor(scope: &str, cursor: &str) -> Result<zorder::ZKey, CursorError> {
    let key = decode_tagged(SEARCH_CURSOR_VERSION, scope, cursor)?;
    zorder::ZKey::parse(&key).ok_or(CursorError::Malformed)
}

/// The key of a `<version>.<tag>.<key>` cursor whose tag binds it to
/// `scope` (a search's or a list's).
fn decode_tagged(version: &str, scope: &str, cursor: &str) -> Result<String, CursorError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError::TooLong);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CursorError::Malformed)?;
    let text = String::from_utf8(bytes).map_err(|_| CursorError::Malformed)?;
    let mut parts = text.splitn(3, '.');
    let (Some(v), Some(tag), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(CursorError::Malformed);
    };
    if v != version || key.is_empty() {
        return Err(CursorError::Malformed);
    }
    if tag != tagged(version, scope, key) {
        return Err(CursorError::WrongScope);
    }
    Ok(key.to_owned())
}

const LIST_CURSOR_VERSION: &str = "l1";

/// An opaque cursor for a list of the registry (`/devices`, `/rooms`, a
/// room's devices): the id of the last record returned, bound to `scope`
/// (the list and its filters, spelled canonically by the caller), so an
/// altered cursor, or one of another list, is refused.
pub fn encode_list_cursor(scope: &str, last_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{LIST_CURSOR_VERSION}.{}.{last_id}",
        tagged(LIST_CURSOR_VERSION, scope, last_id)
    ))
}

/// The last id a list cursor names (the caller parses it as its id type).
pub fn decode_list_cursor(scope: &str, cursor: &str) -> Result<String, CursorError> {
    decode_tagged(LIST_CURSOR_VERSION, scope, cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_cursor_round_trips_and_refuses_another_list_or_an_edit() {
        let c = encode_list_cursor("devices?prefix=a", "a-7");
        assert_eq!(decode_list_cursor("devices?prefix=a", &c).unwrap(), "a-7");
        assert_eq!(
            decode_list_cursor("devices?prefix=b", &c),
            Err(CursorError::WrongScope)
        );
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(&c).unwrap()).unwrap();
        let edited = URL_SAFE_NO_PAD.encode(text.replace("a-7", "a-8"));
        assert_eq!(
            decode_list_cursor("devices?prefix=a", &edited),
            Err(CursorError::WrongScope)
        );
        assert_eq!(
            decode_list_cursor("devices?prefix=a", "!!"),
            Err(CursorError::Malformed)
        );
    }

    #[test]
    fn rollup_keys_round_trip_and_no_reading_range_reaches_them() {
        let t = |s: &str| Timestamp::parse(s).unwrap();
        let hour = rollup_sk(Span::Hour, t("2026-11-22T01:00:00Z"));
        assert_eq!(hour, "RH#2026-11-22T01:00:00.000Z");
        assert_eq!(
            parse_rollup_sk(&hour),
            Some((Span::Hour, t("2026-11-22T01:00:00Z")))
        );
        assert_eq!(
            parse_rollup_sk("RD#2026-11-22T00:00:00.000Z").map(|(s, _)| s),
            Some(Span::Day)
        );
        // Not a span's start, not canonical, or not a rollup at all.
        assert_eq!(parse_rollup_sk("RD#2026-11-22T01:00:00.000Z"), None);
        assert_eq!(parse_rollup_sk("RH#2026-11-22T01:00:00Z"), None);
        assert_eq!(parse_rollup_sk("TS#2026-11-22T01:00:00.000Z"), None);
        assert_eq!(parse_reading_sk(&hour), None);
        // The widest reading range there is still sorts after every rollup key.
        let all = TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap();
        let (lo, _) = reading_sk_bounds(&all);
        assert!(rollup_sk(Span::Hour, Span::Hour.start_of(Timestamp::MAX)) < lo);
        assert!(rollup_sk(Span::Day, Span::Day.start_of(Timestamp::MAX)) < lo);
        // Whole spans inside a range only.
        let r = TimeRange::new(t("2026-11-21T10:30:00Z"), t("2026-11-24T00:00:00Z")).unwrap();
        assert_eq!(
            rollup_sk_bounds(Span::Day, &r),
            Some((
                "RD#2026-11-22T00:00:00.000Z".into(),
                "RD#2026-11-23T00:00:00.000Z".into()
            ))
        );
        let short = TimeRange::new(t("2026-11-21T10:30:00Z"), t("2026-11-21T11:15:00Z")).unwrap();
        assert_eq!(rollup_sk_bounds(Span::Hour, &short), None);
    }

    #[test]
    fn the_shard_is_seed_000_s_suffix() {
        // functools.reduce(lambda x,y:x*y, [ord(x) for x in 'Terui']) % 200 + 1 == 161
        assert_eq!(shard_of(&DeviceId::parse("Terui").unwrap(), 200), 161);
        let d = DeviceId::parse("meter-0001").unwrap();
        assert!((1..=11).contains(&shard_of(&d, 11)));
        assert_eq!(shard_of(&d, 1), 1);
        let t = Timestamp::parse("2026-11-22T01:02:03.004Z").unwrap();
        assert_eq!(all_time_sk(t, &d), "TS#2026-11-22T01:02:03.004Z#meter-0001");
        assert_eq!(all_time_pk(3), "ALL#3");
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn range() -> TimeRange {
        TimeRange::new(ts("2026-11-01T00:00:00Z"), ts("2026-11-02T00:00:00Z")).unwrap()
    }

    #[test]
    fn reading_keys_round_trip_and_reject_other_items() {
        let t = ts("2026-11-22T01:02:03.004Z");
        assert_eq!(reading_sk(t), "TS#2026-11-22T01:02:03.004Z");
        assert_eq!(parse_reading_sk(&reading_sk(t)), Some(t));
        assert_eq!(parse_reading_sk("meter-1"), None);
        assert_eq!(
            parse_reading_sk("TS#2026-11-22T01:02:03Z"),
            None,
            "non-canonical text is not a key"
        );
    }

    #[test]
    fn bounds_are_inclusive_of_from_and_exclusive_of_to() {
        let (lo, hi) = reading_sk_bounds(&range());
        assert_eq!(lo, "TS#2026-11-01T00:00:00.000Z");
        assert_eq!(hi, "TS#2026-11-01T23:59:59.999Z");
    }

    #[test]
    fn cursors_round_trip_within_their_scope_only() {
        let dev = DeviceId::parse("meter-1").unwrap();
        let other = DeviceId::parse("meter-2").unwrap();
        let r = range();
        let scope = CursorScope::Device {
            device: &dev,
            range: &r,
            descending: false,
        };
        let pos = Position {
            timestamp: ts("2026-11-01T12:00:00Z"),
            device_id: dev.clone(),
        };
        let c = scope.encode(&pos);
        assert_eq!(scope.decode(&c), Ok(pos.clone()));

        let wrong_device = CursorScope::Device {
            device: &other,
            range: &r,
            descending: false,
        };
        assert_eq!(wrong_device.decode(&c), Err(CursorError::WrongScope));
        let wrong_order = CursorScope::Device {
            device: &dev,
            range: &r,
            descending: true,
        };
        assert_eq!(wrong_order.decode(&c), Err(CursorError::WrongScope));
        let r2 = TimeRange::new(ts("2026-11-01T00:00:00Z"), ts("2026-11-03T00:00:00Z")).unwrap();
        let wrong_range = CursorScope::Device {
            device: &dev,
            range: &r2,
            descending: false,
        };
        assert_eq!(wrong_range.decode(&c), Err(CursorError::WrongScope));
    }

    #[test]
    fn tampered_or_garbage_cursors_are_rejected() {
        let dev = DeviceId::parse("meter-1").unwrap();
        let r = range();
        let scope = CursorScope::Device {
            device: &dev,
            range: &r,
            descending: false,
        };
        let pos = Position {
            timestamp: ts("2026-11-01T12:00:00Z"),
            device_id: dev.clone(),
        };
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(scope.encode(&pos)).unwrap()).unwrap();
        let moved = text.replace(
            &pos.timestamp.millis().to_string(),
            &(pos.timestamp.millis() + 1).to_string(),
        );
        assert_eq!(
            scope.decode(&URL_SAFE_NO_PAD.encode(moved)),
            Err(CursorError::WrongScope)
        );
        for junk in ["", "!!!", "YWJj", &URL_SAFE_NO_PAD.encode("c1.x.y.z")] {
            assert_eq!(scope.decode(junk), Err(CursorError::Malformed), "{junk:?}");
        }
        assert_eq!(
            scope.decode(&"A".repeat(MAX_CURSOR_LEN + 1)),
            Err(CursorError::TooLong)
        );
    }
}
