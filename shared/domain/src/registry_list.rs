//! Lists of the registry a page at a time (issue 76): which devices and
//! rooms a list's filters admit, in what order, and where a page ends. Both
//! engines read pages in id order (DynamoDB's sort key, SQLite's `names`
//! index) and keep what [`DeviceFilter::admits`] admits, so a filter means
//! the same on each.

use crate::model::{DeviceId, ReadingKind, RoomId, Timestamp};
use crate::registry::{DeviceRecord, RoomRecord};

/// What a fleet operator narrows a device list by; every part given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceFilter {
    /// Devices that have reported in this room (the room's device list,
    /// as `/rooms/{id}` gives it).
    pub room: Option<RoomId>,
    /// Devices that have sent a reading of this type.
    pub kind: Option<ReadingKind>,
    /// Devices whose id begins with this text (byte for byte).
    pub prefix: Option<String>,
    /// Devices whose last reading is older than this, or that never sent one.
    pub silent_since: Option<Timestamp>,
    /// Devices whose id or name holds this text, in any case (what a
    /// person types into a search box).
    pub text: Option<String>,
}

/// Whether `id` or `name` holds `text`, in any case (ASCII: ids are).
fn holds_text(text: &str, id: &str, name: Option<&str>) -> bool {
    let text = text.to_lowercase();
    id.to_ascii_lowercase().contains(&text)
        || name.is_some_and(|n| n.to_lowercase().contains(&text))
}

impl DeviceFilter {
    /// Whether `d` is listed. The room part is the engine's to apply (it
    /// reads the room's devices); this checks the rest.
    pub fn admits(&self, d: &DeviceRecord) -> bool {
        self.kind.is_none_or(|k| d.types.contains(&k))
            && self
                .prefix
                .as_deref()
                .is_none_or(|p| d.device_id.as_str().starts_with(p))
            && self
                .silent_since
                .is_none_or(|t| d.last_seen.is_none_or(|seen| seen < t))
            && self
                .text
                .as_deref()
                .is_none_or(|t| holds_text(t, d.device_id.as_str(), d.name.as_deref()))
    }

    /// The filter's parts as text, in one order: what a cursor is bound to.
    pub fn canonical(&self) -> String {
        format!(
            "room={};type={};prefix={};silent_since={};text={}",
            self.room.as_ref().map_or("", |r| r.as_str()),
            self.kind.map_or("", |k| k.as_str()),
            self.prefix.as_deref().unwrap_or(""),
            self.silent_since
                .map_or(String::new(), |t| t.millis().to_string()),
            self.text.as_deref().unwrap_or(""),
        )
    }
}

/// Rooms are narrowed by their id's beginning, and by text in their id or name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoomFilter {
    pub prefix: Option<String>,
    pub text: Option<String>,
}

impl RoomFilter {
    pub fn admits(&self, r: &RoomRecord) -> bool {
        self.prefix
            .as_deref()
            .is_none_or(|p| r.room_id.as_str().starts_with(p))
            && self
                .text
                .as_deref()
                .is_none_or(|t| holds_text(t, r.room_id.as_str(), r.name.as_deref()))
    }

    pub fn canonical(&self) -> String {
        format!(
            "prefix={};text={}",
            self.prefix.as_deref().unwrap_or(""),
            self.text.as_deref().unwrap_or("")
        )
    }
}

/// One page of a list: at most `limit` records after `after`, in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest<F, Id> {
    pub filter: F,
    /// The last id of the page before (from a cursor).
    pub after: Option<Id>,
    pub limit: usize,
}

pub type DeviceListRequest = ListRequest<DeviceFilter, DeviceId>;
pub type RoomListRequest = ListRequest<RoomFilter, RoomId>;

/// Records of one page, and the id to go on after when more may follow:
/// the last record's, or, where an engine stopped reading before it filled
/// the page (a sparse filter over a large fleet), the last id it read.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage<T, Id> {
    pub items: Vec<T>,
    pub next: Option<Id>,
}

/// A record's id, for the page's `next`.
pub trait Listed {
    type Id: Clone;
    fn id(&self) -> &Self::Id;
}

impl Listed for DeviceRecord {
    type Id = DeviceId;
    fn id(&self) -> &DeviceId {
        &self.device_id
    }
}

impl Listed for RoomRecord {
    type Id = RoomId;
    fn id(&self) -> &RoomId {
        &self.room_id
    }
}

impl<T: Listed> ListPage<T, T::Id> {
    /// The first `limit` of `items` (read in id order, one more than a page
    /// where more exist). `stopped_at`: the reader stopped before the end,
    /// after reading this id.
    pub fn of(mut items: Vec<T>, limit: usize, stopped_at: Option<T::Id>) -> Self {
        if items.len() > limit {
            items.truncate(limit);
            let next = items.last().map(|r| r.id().clone());
            return Self { items, next };
        }
        Self {
            items,
            next: stopped_at,
        }
    }
}

pub type DevicePage = ListPage<DeviceRecord, DeviceId>;
pub type RoomPage = ListPage<RoomRecord, RoomId>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn device(id: &str, kind: ReadingKind, last_seen: Option<i64>) -> DeviceRecord {
        let mut d = DeviceRecord::empty(&DeviceId::parse(id).unwrap());
        d.types = BTreeSet::from([kind]);
        d.last_seen = last_seen.map(|ms| Timestamp::from_millis(ms).unwrap());
        d
    }

    #[test]
    fn every_part_of_a_filter_must_hold() {
        let meter = device("meter-1", ReadingKind::Power, Some(1_000));
        let quiet = device("sensor-1", ReadingKind::Climate, None);
        let none = DeviceFilter::default();
        assert!(none.admits(&meter) && none.admits(&quiet));
        let power = DeviceFilter {
            kind: Some(ReadingKind::Power),
            ..Default::default()
        };
        assert!(power.admits(&meter) && !power.admits(&quiet));
        let prefix = DeviceFilter {
            prefix: Some("sensor".into()),
            ..Default::default()
        };
        assert!(!prefix.admits(&meter) && prefix.admits(&quiet));
        let silent = |ms| DeviceFilter {
            silent_since: Some(Timestamp::from_millis(ms).unwrap()),
            ..Default::default()
        };
        assert!(silent(1_001).admits(&meter), "last seen before");
        assert!(!silent(1_000).admits(&meter), "seen at the time itself");
        assert!(silent(0).admits(&quiet), "never seen is silent");
        let both = DeviceFilter {
            kind: Some(ReadingKind::Power),
            prefix: Some("sensor".into()),
            ..Default::default()
        };
        assert!(!both.admits(&meter) && !both.admits(&quiet));
        let mut named = device("s-7", ReadingKind::Climate, None);
        named.name = Some("Küche Nord".into());
        let text = |t: &str| DeviceFilter {
            text: Some(t.into()),
            ..Default::default()
        };
        assert!(text("küche").admits(&named), "a name, in any case");
        assert!(text("S-7").admits(&named), "an id, in any case");
        assert!(!text("süd").admits(&named));
    }

    #[test]
    fn filters_that_differ_are_spelled_apart() {
        let a = DeviceFilter {
            prefix: Some("a".into()),
            ..Default::default()
        };
        let b = DeviceFilter {
            room: Some(RoomId::parse("a").unwrap()),
            ..Default::default()
        };
        assert_ne!(a.canonical(), b.canonical());
        assert_ne!(a.canonical(), DeviceFilter::default().canonical());
    }

    #[test]
    fn a_page_says_where_to_go_on() {
        let d = |id: &str| device(id, ReadingKind::Power, None);
        let id = |s: &str| DeviceId::parse(s).unwrap();
        let full = DevicePage::of(vec![d("a"), d("b"), d("c")], 2, None);
        assert_eq!(full.items.len(), 2);
        assert_eq!(full.next, Some(id("b")), "after the page's last");
        assert_eq!(DevicePage::of(vec![d("a"), d("b")], 2, None).next, None);
        assert_eq!(
            DevicePage::of(vec![d("a")], 2, Some(id("q"))).next,
            Some(id("q")),
            "a reader that stopped early goes on after what it read"
        );
    }
}
