//! A time-range read: its request, its page, and how pages of disjoint
//! sets merge.

use crate::keys::Position;
use domain::model::{DeviceId, Reading, TimeRange};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// One page of a time-range query.
#[derive(Debug, Clone)]
pub struct RangeRequest {
    pub range: TimeRange,
    pub order: Order,
    /// At most this many readings (1..=1000, checked by the caller).
    pub limit: usize,
    /// Start after this key (from a cursor).
    pub after: Option<Position>,
}

#[derive(Debug, Clone, Default)]
pub struct Page {
    pub readings: Vec<Reading>,
    /// Set when more readings may follow.
    pub next: Option<Position>,
}

impl Page {
    /// A page of readings; when the query stopped before the end of its range,
    /// the next page starts after the last reading here.
    pub fn of(readings: Vec<Reading>, more: bool) -> Self {
        let next = if more {
            readings.last().map(|r| Position {
                timestamp: r.timestamp,
                device_id: r.device_id.clone(),
            })
        } else {
            None
        };
        Page { readings, next }
    }
}

/// The part of `range` after `after` for one device's readings, in `order`:
/// positions order by (time, device), so at the position's own time only
/// devices after it (before it, descending) remain.
pub fn after_position(
    range: &TimeRange,
    order: Order,
    after: Option<&Position>,
    device: &DeviceId,
) -> Option<TimeRange> {
    let Some(p) = after else {
        return Some(*range);
    };
    match order {
        Order::Asc => {
            let from = if *device > p.device_id {
                p.timestamp
            } else {
                p.timestamp.saturating_add_millis(1)
            };
            TimeRange::new(from.max(range.from()), range.to()).ok()
        }
        Order::Desc => {
            let to = if *device < p.device_id {
                p.timestamp.saturating_add_millis(1)
            } else {
                p.timestamp
            };
            TimeRange::new(range.from(), to.min(range.to())).ok()
        }
    }
}

/// Merges pages of disjoint sets of readings (shards, devices) that were each
/// read with `request`: the first `request.limit` of the merge in (time,
/// device) order, with `next` set when more may follow in any of them.
pub fn merge_pages(pages: Vec<Page>, request: &RangeRequest) -> Page {
    let more_in_a_page = pages.iter().any(|p| p.next.is_some());
    let mut readings: Vec<Reading> = pages.into_iter().flat_map(|p| p.readings).collect();
    readings.sort_by(|a, b| {
        let order = (a.timestamp, &a.device_id).cmp(&(b.timestamp, &b.device_id));
        match request.order {
            Order::Asc => order,
            Order::Desc => order.reverse(),
        }
    });
    let more = more_in_a_page || readings.len() > request.limit;
    readings.truncate(request.limit);
    Page::of(readings, more)
}
