//! Sealing: a device's closed day moves from hot rows into its block, in
//! one transaction, so a crash at any point leaves every reading either in
//! its rows or in its block; a day's segments (history appended in order)
//! are merged into its block the same way. A thread of a file's store seals
//! what closed every `EVERY`, and once more when the store closes, so a
//! stopped file has no segments; `seal_all` is also what converts a file
//! from an earlier version (all rows) on its first open.

use super::periodic::Periodic;
use super::write::Writer;
use super::{blocks, day_merge, db_err, names, schema};
use domain::model::Timestamp;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use storage::StoreError;

/// How often the background sealer looks for closed days.
const EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Reports (days sealed, days to seal), and says whether to go on: a
/// `Break` stops the pass between two days (a stop signal while a file
/// from an earlier version is converted; the next open resumes).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) -> ControlFlow<()> + Send);

/// Seals every device's days that are closed at `now_ms`, one device's day
/// to a transaction (the writer is free between them). A day that fails
/// (a row that does not decode) keeps its rows and stops that device's
/// sealing for this pass, with a warning; the other devices go on. Returns
/// the days sealed.
pub fn seal_all(
    writer: &Mutex<Writer>,
    now_ms: i64,
    progress: Option<Progress<'_>>,
) -> Result<usize, StoreError> {
    let lock = || writer.lock().unwrap_or_else(|p| p.into_inner());
    let (devices, total) = {
        let w = lock();
        let devices = names::devices(&w.conn)?;
        let total = match progress {
            Some(_) => closed_days(&w.conn, now_ms)?,
            None => 0,
        };
        (devices, total)
    };
    let mut done = 0;
    if let Some(report) = progress {
        if report(done, total).is_break() {
            return Ok(done);
        }
    }
    for (device, device_id) in devices {
        loop {
            let mut w = lock();
            let sealed = (|| -> Result<bool, StoreError> {
                let tx = w.conn.transaction().map_err(db_err)?;
                let day = match blocks::first_unsealed(&tx, device, now_ms)? {
                    Some(day) => day,
                    None => match blocks::first_segmented(&tx, device)? {
                        Some(day) => day,
                        None => return Ok(false),
                    },
                };
                day_merge::write_day(&tx, (device, &device_id), day, Vec::new())?;
                tx.commit().map_err(db_err)?;
                Ok(true)
            })();
            w.forget_day(device);
            match sealed {
                Ok(true) => done += 1,
                Ok(false) => break,
                Err(e) => {
                    // Its rows stay as they are, readable as before; the
                    // other devices are sealed all the same.
                    w.forget();
                    tracing::warn!(device = %device_id, error = %e, "sealing a day failed; its rows stay, the next pass retries");
                    break;
                }
            }
            drop(w);
            if let Some(report) = progress {
                if report(done, total.max(done)).is_break() {
                    return Ok(done);
                }
            }
        }
    }
    Ok(done)
}

/// How many (device, day) pairs have hot rows in days closed at `now_ms`, or
/// segments.
fn closed_days(conn: &rusqlite::Connection, now_ms: i64) -> Result<usize, StoreError> {
    let union: Vec<String> = schema::families()
        .iter()
        .map(|f| {
            format!(
                "SELECT device, ts / {} FROM {} WHERE ts < ?1",
                domain::model::DAY_MS,
                f.table
            )
        })
        .collect();
    let hot = conn
        .query_row(
            &format!("SELECT count(*) FROM ({})", union.join(" UNION ")),
            [blocks::closed_before(now_ms)],
            |r| r.get::<_, i64>(0),
        )
        .map_err(db_err)?;
    let segmented = conn
        .query_row("SELECT count(DISTINCT key) FROM day_segments", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(db_err)?;
    Ok((hot + segmented) as usize)
}

/// The background sealer of a file's store: a pass every `EVERY`, and a
/// last one when the store closes.
pub fn start(writer: Arc<Mutex<Writer>>) -> Result<Periodic, StoreError> {
    Periodic::start("sqlite-sealer", EVERY, writer, pass, |writer| pass(&writer))
}

fn pass(writer: &Arc<Mutex<Writer>>) {
    match seal_all(writer, Timestamp::now().millis(), None) {
        Ok(0) => {}
        Ok(days) => {
            tracing::info!(days, "sealed closed days (and merged segments) into blocks");
            if let Err(e) = release_free_pages(writer) {
                tracing::warn!(error = %e, "giving free pages back failed; they are reused");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "sealing failed; the rows stay, the next pass retries")
        }
    }
}

/// Gives the file's free pages back to the file system: what sealing left
/// (rows moved into blocks, segments merged into them), which would
/// otherwise stay in the file until later writes reuse them. Only a file
/// with incremental auto-vacuum (every new one) can; on another this does
/// nothing.
pub fn release_free_pages(writer: &Mutex<Writer>) -> Result<(), StoreError> {
    let w = writer.lock().unwrap_or_else(|p| p.into_inner());
    // It frees a page a step: stepped to its end.
    let mut stmt = w
        .conn
        .prepare("PRAGMA incremental_vacuum")
        .map_err(db_err)?;
    let mut steps = stmt.query([]).map_err(db_err)?;
    while steps.next().map_err(db_err)?.is_some() {}
    Ok(())
}
