//! A write transaction on the one writer: readings written as at a time,
//! and what became of them.

use super::db_err;
use super::write::Writer;
use crate::{names, registry, rollup_spans, write};
use domain::model::{Reading, Span};
use rusqlite::Connection;
use storage::{Deduped, StoreError, WriteReport};

/// Runs `change` in one write transaction of `writer`; a failure rolls it
/// back whole (and the writer forgets what it cached).
pub(crate) fn write_with<T>(
    writer: &mut Writer,
    change: impl FnOnce(&Connection, &mut names::Names, &mut write::Cache) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let result = (|| {
        let (conn, names, cache) = writer.parts();
        let tx = conn.transaction().map_err(db_err)?;
        let value = change(&tx, names, cache)?;
        tx.commit().map_err(db_err)?;
        Ok(value)
    })();
    if result.is_err() {
        writer.forget();
    }
    result
}

/// Writes readings as at `now_ms` (which tells the closed days, written into
/// blocks, from the open ones, rows), with their rollups and registry, in
/// one transaction of `writer`.
pub(crate) fn write_readings_with(
    writer: &mut Writer,
    readings: &[Reading],
    now_ms: i64,
) -> WriteReport {
    let deduped = Deduped::new(readings);
    let result = write_with(writer, |tx, names, cache| {
        let touched = write::put_readings(
            tx,
            names,
            cache,
            deduped.winners.iter().map(|&i| &readings[i]),
            now_ms,
        )?;
        // The rollups, in the same transaction, per device in time order:
        // the rollups use case, whose primitives here answer at once.
        for (id, batch) in touched {
            let mut newest = cache.spans.remove(&(id, Span::Day));
            let mut spans = rollup_spans::TxSpans {
                tx,
                device: id,
                device_id: &batch.readings[0].device_id,
                now_ms,
            };
            domain::rollup_upkeep::at_once(domain::rollup_upkeep::keep(
                &mut spans,
                &mut newest,
                &batch.readings,
                batch.appended,
            ))?;
            if let Some(newest) = newest {
                cache.spans.insert((id, Span::Day), newest);
            }
        }
        // The registry, in the same transaction: what the stream Lambda
        // would do with these records, planned by the same code.
        let plan = domain::registry::plan(deduped.winners.iter().map(|&i| (i, &readings[i])));
        registry::apply_plan(tx, names, &mut cache.registry, &plan)
    });
    match result {
        Ok(()) => deduped.report(&[]),
        Err(err) => {
            // One transaction: all or nothing, so every reading is unwritten.
            tracing::error!(error = %err, "sqlite write failed");
            deduped.report(&(0..deduped.winners.len()).collect::<Vec<_>>())
        }
    }
}
