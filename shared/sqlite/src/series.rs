//! A device's readings as every read sees them: its hot rows (`rows`) and
//! its sealed days (`blocks`) merged, in time order. The two never hold the
//! same day; where they would (a file damaged by hand), the hot row wins.
//! Every read of readings goes through here.

use super::blocks;
use super::rows::{self, Bounds};
use domain::block;
use domain::model::{ClimateBox, DeviceId, Quantity, Reading, RoomId};
use rusqlite::Connection;
use std::cmp::Ordering;
use storage::keys::zorder::ZKey;
use storage::{Order, SealedPage, StoreError, ZPage, ZRangeRequest};

/// Two lists of one device's readings, each in `order`, merged: at most `n`,
/// `first` winning a time both have.
fn merge(first: Vec<Reading>, second: Vec<Reading>, order: Order, n: usize) -> Vec<Reading> {
    if second.is_empty() {
        return first.into_iter().take(n).collect();
    }
    if first.is_empty() {
        return second.into_iter().take(n).collect();
    }
    let mut out = Vec::with_capacity(n.min(first.len() + second.len()));
    let (mut a, mut b) = (first.into_iter().peekable(), second.into_iter().peekable());
    while out.len() < n {
        let pick = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => {
                let c = x.timestamp.cmp(&y.timestamp);
                match order {
                    Order::Asc => c,
                    Order::Desc => c.reverse(),
                }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match pick {
            Ordering::Less => out.extend(a.next()),
            Ordering::Greater => out.extend(b.next()),
            Ordering::Equal => {
                out.extend(a.next());
                b.next();
            }
        }
    }
    out
}

/// At most `n` of a device's readings in `bounds`, in `order`.
pub fn device_readings(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
    bounds: Bounds,
    order: Order,
    n: usize,
) -> Result<Vec<Reading>, StoreError> {
    let hot = if hot_rows_within(conn, device, bounds)? {
        rows::device_readings(conn, device, device_id, bounds, order, n)?
    } else {
        Vec::new()
    };
    let (sealed, _) = blocks::readings(conn, device, device_id, bounds, order, n, None)?;
    Ok(merge(hot, sealed, order, n))
}

/// At most `n` of a device's readings in a room (those written with that
/// room), as the `room-time` index holds them: temperature and humidity only.
pub fn room_readings(
    conn: &Connection,
    (room, room_id): (i64, &RoomId),
    (device, device_id): (i64, &DeviceId),
    bounds: Bounds,
    order: Order,
    n: usize,
) -> Result<Vec<Reading>, StoreError> {
    let hot = if hot_rows_within(conn, device, bounds)? {
        rows::room_readings(conn, (room, room_id), (device, device_id), bounds, order, n)?
    } else {
        Vec::new()
    };
    let mut in_room = |r: Reading| domain::room_presence::room_view(room_id, r);
    let (sealed, _) = blocks::readings(
        conn,
        device,
        device_id,
        bounds,
        order,
        n,
        Some(&mut in_room),
    )?;
    Ok(merge(hot, sealed, order, n))
}

/// Whether any of a device's hot rows may lie within `bounds`. Most reads
/// of history fall wholly in sealed days; a min/max of the rows (an index
/// lookup) spares them the ordered row query, which SQLite prepares again on
/// every run once its parameters are bound (docs/BENCHMARKS.md).
pub fn hot_rows_within(conn: &Connection, device: i64, bounds: Bounds) -> Result<bool, StoreError> {
    Ok(HotSpan::of(conn, device)?.within(bounds))
}

/// The times of a device's first and last hot rows, read once for a
/// caller that asks `hot_rows_within` of many days (a zone's year of
/// hours asked it 366 times).
pub struct HotSpan(Option<(i64, i64)>);

impl HotSpan {
    pub fn of(conn: &Connection, device: i64) -> Result<Self, StoreError> {
        Ok(HotSpan(rows::time_span(conn, device)?))
    }

    /// Whether any of the rows may lie within `bounds`.
    pub fn within(&self, bounds: Bounds) -> bool {
        self.0
            .is_some_and(|(lo, hi)| lo <= bounds.hi && hi >= bounds.lo)
    }
}

/// The times of a device's first and last readings.
pub fn time_span(
    conn: &Connection,
    device: i64,
    device_id: &DeviceId,
) -> Result<Option<(i64, i64)>, StoreError> {
    let hot = rows::time_span(conn, device)?;
    let sealed = blocks::time_span(conn, device, device_id)?;
    Ok(match (hot, sealed) {
        (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        (one, other) => one.or(other),
    })
}

/// One read of the Z-order index of some devices' hot rows (one device, or
/// a room's), as DynamoDB's Query with `Limit` reads one index partition:
/// at most `request.limit` entries in Z order, expired ones counted and
/// dropped. Sealed days are not in the index: `sealed_in_box` finds them.
pub fn z_range(
    conn: &Connection,
    devices: &[(i64, DeviceId)],
    room: Option<i64>,
    request: &ZRangeRequest<'_>,
    keep_from: Option<i64>,
) -> Result<ZPage, StoreError> {
    let mut found = rows::z_candidates(conn, devices, room, request)?;
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let more = found.len() > request.limit;
    found.truncate(request.limit);
    let mut page = ZPage {
        scanned: found.len(),
        last_read: if more {
            found.last().map(|f| f.0.clone())
        } else {
            None
        },
        items: Vec::with_capacity(found.len()),
    };
    for (key, ts, (device, device_id)) in found {
        if keep_from.is_some_and(|k| ts < k) {
            continue; // expired: read, then dropped, as DynamoDB's TTL filter does
        }
        let whole = rows::device_readings(
            conn,
            *device,
            device_id,
            Bounds { lo: ts, hi: ts },
            Order::Asc,
            1,
        )?;
        if let Some(r) = whole.into_iter().next() {
            page.items.push((key, r));
        }
    }
    Ok(page)
}

/// The sealed readings of some devices (one, or a room's: then those taken
/// in it) inside a box, in Z order after `after`, at most `limit`. A block is
/// decoded only when its header's times, temperatures and humidities meet
/// the box; every reading decoded is counted.
pub fn sealed_in_box(
    conn: &Connection,
    devices: &[(i64, DeviceId)],
    room: Option<&RoomId>,
    inside: &ClimateBox,
    after: Option<&ZKey>,
    limit: usize,
    keep_from: Option<i64>,
) -> Result<SealedPage, StoreError> {
    let meets = |header: &block::BlockHeader| {
        let overlaps = |q: Quantity, (lo, hi): (f64, f64)| {
            header
                .quantities
                .iter()
                .any(|s| s.quantity == q && s.min <= hi && s.max >= lo)
        };
        header.last >= inside.range.from()
            && header.first < inside.range.to()
            && overlaps(Quantity::Temperature, inside.temperature)
            && overlaps(Quantity::Humidity, inside.humidity)
    };
    let mut page = SealedPage::default();
    let days =
        blocks::day_of(inside.range.from().millis())..=blocks::day_of(inside.range.last().millis());
    for (device, device_id) in devices {
        // A day with segments has a header per row: it is read once, when
        // the first of them meets the box.
        let mut read_day = None;
        for (day, header) in blocks::headers(conn, *device, device_id, days.clone())? {
            if read_day == Some(day) || !meets(&header) {
                continue;
            }
            read_day = Some(day);
            // A block of several days is read to its last day.
            let bounds = Bounds {
                hi: blocks::day_bounds(day).hi.max(header.last.millis()),
                ..blocks::day_bounds(day)
            };
            let (readings, decoded) = blocks::readings(
                conn,
                *device,
                device_id,
                bounds,
                Order::Asc,
                usize::MAX,
                None,
            )?;
            page.decoded += decoded;
            for r in readings {
                if !inside.contains(&r)
                    || room.is_some_and(|id| r.room() != Some(id))
                    || keep_from.is_some_and(|k| r.timestamp.millis() < k)
                {
                    continue;
                }
                let (Some(t), Some(h)) = (r.get(Quantity::Temperature), r.get(Quantity::Humidity))
                else {
                    continue;
                };
                let key = ZKey::of(device_id, r.timestamp, t, h);
                if after.is_some_and(|a| key <= *a) {
                    continue;
                }
                page.items.push((key, r));
            }
        }
    }
    page.items.sort_by(|a, b| a.0.cmp(&b.0));
    page.items.truncate(limit);
    Ok(page)
}
