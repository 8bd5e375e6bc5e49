//! Copying one store into another (`ingester-local migrate`), through the
//! storage interface alone, so it is the same code in both directions. The
//! CLI keeps the checkpoint and the progress; this is what it asks of the
//! two stores.
//!
//! * Readings go device by device in time order, a page at a time, with
//!   the same idempotent puts as ingest: a reading copied twice is stored once.
//!   Where the target writes batches as hour blocks, closed hours go as blocks.
//! * The registry goes through the same monotonic updates the stream
//!   handler uses, with the names users gave; then the alert rules.
//!
//! Readings hidden by retention (expired, not yet deleted) are not copied.

use domain::model::{DeviceId, Name, Reading, TimeRange, Timestamp};
use storage::keys::Position;
use storage::{Alerts, DeviceUpdate, Order, RangeRequest, RegistrySnapshot, RoomUpdate, Store};

/// A page copied: how many readings, the last one's time, and whether the
/// device has more after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCopied {
    pub copied: usize,
    pub last: Timestamp,
    pub more: bool,
}

fn everything() -> TimeRange {
    TimeRange::new(Timestamp::MIN, Timestamp::MAX).expect("MIN is before MAX")
}

fn page_request(device: &DeviceId, after: Option<Timestamp>, page: usize) -> RangeRequest {
    RangeRequest {
        range: everything(),
        order: Order::Asc,
        limit: page,
        after: after.map(|timestamp| Position {
            timestamp,
            device_id: device.clone(),
        }),
    }
}

/// The source's registry: the devices to copy and the records to carry.
pub async fn source_registry<A: Store>(from: &A) -> Result<RegistrySnapshot, String> {
    from.load_registry()
        .await
        .map_err(|e| format!("reading the source registry: {e}"))
}

/// Copies the page of `device`'s readings after `after` (from its first
/// when `None`); `None` when there is none left.
pub async fn copy_page<A: Store, B: Store>(
    from: &A,
    to: &B,
    device: &DeviceId,
    after: Option<Timestamp>,
    page: usize,
) -> Result<Option<PageCopied>, String> {
    let got = from
        .device_readings(device, &page_request(device, after, page))
        .await
        .map_err(|e| format!("reading {device}: {e}"))?;
    let Some(last) = got.readings.last().map(|r| r.timestamp) else {
        return Ok(None);
    };
    write_all(to, &got.readings).await?;
    Ok(Some(PageCopied {
        copied: got.readings.len(),
        last,
        more: got.next.is_some(),
    }))
}

/// Writes a page. The target's adapter owns retries (on DynamoDB, within
/// its operation budget); what it still could not store stops the copy,
/// which resumes from the checkpoint when run again.
async fn write_all<B: Store>(to: &B, readings: &[Reading]) -> Result<(), String> {
    // Closed hours as blocks where the target takes them (docs/batches.md):
    // a migrated history costs a write a device-hour, not one a reading.
    let report = if to.capabilities().hour_blocks_from_batches {
        crate::ingest::hour_blocks::write(
            to,
            readings.to_vec(),
            Timestamp::now(),
            Default::default(),
        )
        .await
    } else {
        to.write_readings(readings).await
    };
    if report.unwritten.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} readings could not be written to the target; run again to resume",
        report.unwritten.len()
    ))
}

/// Carries every device's and room's record, and the names users gave.
pub async fn copy_registry<B: Store>(registry: &RegistrySnapshot, to: &B) -> Result<(), String> {
    for d in registry.devices.values() {
        if let (Some(first_seen), Some(latest)) = (d.first_seen, &d.latest) {
            let update = DeviceUpdate {
                device_id: d.device_id.clone(),
                first_seen,
                latest: latest.clone(),
                types: d.types.clone(),
                quantities: d.quantities.clone(),
                room: d.room.clone(),
            };
            to.apply_device_update(&update)
                .await
                .map_err(|e| format!("registry of {}: {e}", d.device_id))?;
        }
        if d.name.is_some() || (d.latest.is_none() && d.room.is_some()) {
            let name = d.name.as_deref().map(Name::parse).transpose();
            let name = name.map_err(|e| format!("name of {}: {e}", d.device_id))?;
            to.set_device_profile(&d.device_id, name.as_ref(), d.room.as_ref())
                .await
                .map_err(|e| format!("name of {}: {e}", d.device_id))?;
        }
    }
    for r in registry.rooms.values() {
        if let (Some(first_seen), Some(latest)) = (r.first_seen, &r.latest) {
            let update = RoomUpdate {
                room_id: r.room_id.clone(),
                first_seen,
                latest: latest.clone(),
                devices: r.devices.clone(),
                // The table's stream brings each migrated reading to the
                // registry function, which writes its presence.
                presence: Default::default(),
                record: true,
            };
            to.apply_room_update(&update)
                .await
                .map_err(|e| format!("registry of room {}: {e}", r.room_id))?;
        }
        if let Some(name) = &r.name {
            let name = Name::parse(name).map_err(|e| format!("name of room {}: {e}", r.room_id))?;
            to.set_room_name(&r.room_id, Some(&name))
                .await
                .map_err(|e| format!("name of room {}: {e}", r.room_id))?;
        }
    }
    Ok(())
}

/// The alert rules as they were put (docs/alerts.md); series states are not
/// copied: the target's first evaluation finds what fires.
pub async fn copy_alert_rules<A: Alerts, B: Alerts>(from: &A, to: &B) -> Result<(), String> {
    let rules = from
        .alert_rules()
        .await
        .map_err(|e| format!("reading the source's alert rules: {e}"))?;
    for (name, json) in rules {
        to.put_alert_rule(&name, &json)
            .await
            .map_err(|e| format!("alert rule {name}: {e}"))?;
    }
    Ok(())
}

/// A device's readings in a store, counted a page at a time.
pub async fn count<S: Store>(store: &S, device: &DeviceId, page: usize) -> Result<u64, String> {
    let mut total = 0;
    let mut after = None;
    loop {
        let request = RangeRequest {
            range: everything(),
            order: Order::Asc,
            limit: page,
            after,
        };
        let got = store
            .device_readings(device, &request)
            .await
            .map_err(|e| format!("counting {device}: {e}"))?;
        total += got.readings.len() as u64;
        match got.next {
            Some(next) => after = Some(next),
            None => return Ok(total),
        }
    }
}
