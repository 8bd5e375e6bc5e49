//! Version 1 files, converted once when opened. Version 1 kept every item
//! whole, as DynamoDB JSON, in one `items` table (readings, and the `DEVICE`
//! and `ROOM` registry items), perhaps with a `change_log` whose newest
//! readings its registry consumer had not applied yet. Its readings become
//! rows of the family tables (sealed into blocks after) and its registry items become records, through
//! the DynamoDB adapter's item codec (the shape version 1 stored: the only
//! place the embedded store reads it); pending change-log readings are
//! applied to the registry by `domain::registry::plan`. All of it is one
//! transaction: an interruption leaves the version 1 file as it was, and an
//! item that does not decode stops the migration with an error naming it,
//! rather than dropping it.

use super::super::names::Names;
use super::super::write::{put_readings, Cache};
use super::super::{db_err, registry, schema};
use super::{build_rollups, has_table, Moved};
use domain::model::Reading;
use dynamodb::item::{DeviceItem, ReadingItem, RoomItem};
use rusqlite::Connection;
use serde::de::DeserializeOwned;
use storage::{now_epoch_seconds, StoreError};

fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let item: serde_dynamo::Item = serde_json::from_str(text).map_err(|e| e.to_string())?;
    serde_dynamo::from_item(item).map_err(|e| e.to_string())
}

/// The `now` the readings are written at: no day is closed then, so they
/// become rows, which the sealer moves into blocks afterwards a day at a
/// time (resumably, with progress), as for a version 3 file.
const ROWS_ONLY: i64 = i64::MIN;

/// Rows between writes while migrating: bounds the memory a large file needs.
const BATCH: usize = 10_000;

pub(super) fn from_items(conn: &mut Connection) -> Result<Moved, StoreError> {
    let tx = conn.transaction().map_err(db_err)?;
    tx.execute_batch(&schema::create()).map_err(db_err)?;
    let (mut names, mut cache) = (Names::default(), Cache::default());
    let mut moved = Moved::default();
    let now = now_epoch_seconds();
    let corrupt = |pk: &str, sk: &str, e: String| {
        StoreError::Corrupt(format!(
            "version 1 item pk={pk:?} sk={sk:?} does not decode ({e}); the file is unchanged"
        ))
    };
    {
        let mut stmt = tx
            .prepare("SELECT pk, sk, item FROM items ORDER BY pk, sk")
            .map_err(db_err)?;
        let mut rows = stmt.query([]).map_err(db_err)?;
        let mut batch: Vec<Reading> = Vec::with_capacity(BATCH);
        while let Some(row) = rows.next().map_err(db_err)? {
            let (pk, sk, text): (String, String, String) = (
                row.get(0).map_err(db_err)?,
                row.get(1).map_err(db_err)?,
                row.get(2).map_err(db_err)?,
            );
            if pk == storage::keys::DEVICE_PARTITION {
                let record = decode::<DeviceItem>(&text)
                    .and_then(DeviceItem::into_record)
                    .map_err(|e| corrupt(&pk, &sk, e))?;
                registry::put_device(&tx, &mut names, &record)?;
                moved.devices += 1;
            } else if pk == storage::keys::ROOM_PARTITION {
                let record = decode::<RoomItem>(&text)
                    .and_then(RoomItem::into_record)
                    .map_err(|e| corrupt(&pk, &sk, e))?;
                registry::put_room(&tx, &mut names, &record)?;
                moved.rooms += 1;
            } else {
                let item = decode::<ReadingItem>(&text).map_err(|e| corrupt(&pk, &sk, e))?;
                if item.expires_at.is_some_and(|e| e <= now) {
                    moved.expired += 1;
                    continue;
                }
                batch.push(item.into_reading().map_err(|e| corrupt(&pk, &sk, e))?);
                if batch.len() == BATCH {
                    put_readings(&tx, &mut names, &mut cache, batch.iter(), ROWS_ONLY)?;
                    moved.readings += batch.len();
                    batch.clear();
                }
            }
        }
        put_readings(&tx, &mut names, &mut cache, batch.iter(), ROWS_ONLY)?;
        moved.readings += batch.len();
    }
    moved.pending = pending_change_log(&tx, &mut names)?;
    tx.execute_batch(
        "DROP TABLE items; DROP TABLE IF EXISTS change_log; DROP TABLE IF EXISTS checkpoints;
         DROP TABLE IF EXISTS settings;",
    )
    .map_err(db_err)?;
    build_rollups(&tx)?;
    tx.pragma_update(None, "user_version", schema::VERSION)
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    Ok(moved)
}

/// A version 1 file from before the registry was kept in the write
/// transaction may have a change log: the readings its registry consumer had
/// not applied yet (past its checkpoint) are applied now, so a reading
/// written just before the upgrade still reaches the registry.
fn pending_change_log(tx: &Connection, names: &mut Names) -> Result<usize, StoreError> {
    if !has_table(tx, "change_log")? {
        return Ok(0);
    }
    let checkpoint = if has_table(tx, "checkpoints")? {
        "(SELECT seq FROM checkpoints WHERE consumer = 'registry')"
    } else {
        "NULL"
    };
    let mut stmt = tx
        .prepare(&format!(
            "SELECT new_image FROM change_log
             WHERE new_image IS NOT NULL AND seq > coalesce({checkpoint}, 0) ORDER BY seq"
        ))
        .map_err(db_err)?;
    let images: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .map_err(db_err)?
        .collect::<Result<_, _>>()
        .map_err(db_err)?;
    // Registry items changed too, and are in the log; only readings count, as
    // in the stream handler.
    let readings: Vec<Reading> = images
        .iter()
        .filter_map(|text| {
            decode::<ReadingItem>(text)
                .ok()
                .and_then(|item| item.into_reading().ok())
        })
        .collect();
    let plan = domain::registry::plan(readings.iter().enumerate());
    registry::apply_plan(tx, names, &mut registry::Records::default(), &plan)?;
    Ok(readings.len())
}
