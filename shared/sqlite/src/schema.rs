//! The embedded store's schema, built from the quantity catalogue, and how a
//! value is stored. The plan and the measurements behind it are in
//! docs/embedded-store.md.
//!
//! - Devices and rooms are integer ids through `names`.
//! - One table per family of quantities (power, climate, meter, device), so a
//!   row holds only columns that its kind of device fills: a reading whose
//!   quantities span families is one row in each.
//! - Times are epoch milliseconds.
//! - A value is stored as an INTEGER count of thousandths when that is exact
//!   (`round(v·1000)/1000 == v`: 21.25, 45.5, 5210.125), which SQLite packs into
//!   2 to 4 bytes, and as its REAL otherwise. Reading divides by 1000, which
//!   gives back exactly `v` because that equality was checked on the way in.
//! - Box search reads an index on an expression, `zaddr(ts, temperature,
//!   humidity)`: the Z-order address of `keys::zorder`, computed by a SQL
//!   function, kept in the index only.

use domain::model::{Quantity, ReadingKind, Timestamp};
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;
use std::sync::OnceLock;
use storage::keys::zorder;

/// The sealed days' tables (`blocks.rs` writes and reads them).
const BLOCKS: &str = "CREATE TABLE IF NOT EXISTS blocks (
    key  INTEGER PRIMARY KEY,  -- device << 32 | day
    body BLOB NOT NULL         -- domain::block
);
CREATE TABLE IF NOT EXISTS block_tails (
    key  INTEGER PRIMARY KEY,  -- as blocks.key
    body BLOB NOT NULL         -- the block's bytes after those in blocks.body
);
CREATE TABLE IF NOT EXISTS day_segments (
    key  INTEGER NOT NULL,     -- as blocks.key
    seq  INTEGER NOT NULL,     -- 1, 2, ...: their order in the day
    body BLOB NOT NULL,        -- domain::block
    PRIMARY KEY (key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS block_spans (
    key      INTEGER PRIMARY KEY,  -- as blocks.key: a block's first day
    last_day INTEGER NOT NULL      -- its last day, when after its first
);\n";

/// `PRAGMA user_version` of this schema; `upgrade` brings earlier ones here:
///
/// 1. (no user_version) every item as DynamoDB JSON in `items`;
/// 2. the family tables, no rollups;
/// 3. hour and day rollups;
/// 4. sealed days in `blocks`; hour rollups computed, not stored.
/// 5. `day_segments`: history appended to a sealed day, merged by the sealer
///    (created on open; a version 4 file needs nothing else).
/// 6. `rollups.size`: a rollup's metered size, kept with its body (added by
///    `upgrade`; NULL in rollups written before, which are sized when read).
/// 7. `alert_rules` and `alert_states` (created on open; a version 6 file
///    needs nothing else).
/// 8. `alert_deliveries`: notifications waiting for their receivers
///    (created on open; a version 7 file needs nothing else).
/// 9. day rollups' bodies of version 3 (`storage::format::rollup_body`),
///    which a build before cannot read: a version 8 file needs nothing (its
///    bodies are still read), but a restore by an older build refuses a
///    version 9 file instead of failing on its rollups.
/// 10. `block_tails`: a long block's bytes after the head that `blocks`
///     keeps (`block_tail`); `upgrade` cuts a version 4 to 9 file's long
///     blocks once. A build before would read a cut block's head alone, so
///     a restore by one refuses a version 10 file.
/// 11. blocks of codec version 5 (`domain::block`: a meter's counter
///     predicted from its watts), which a build before cannot read: a
///     version 10 file needs nothing (its blocks are still read), but a
///     restore by an older build refuses a version 11 file.
/// 12. blocks of codec version 6 (a column's header without its sum) and
///     day rollups' bodies of version 4 (numbers written from those they
///     are near), which a build before cannot read: a version 11 file
///     needs nothing, but a restore by an older build refuses it.
/// 13. `block_spans`: a slow series' closed days merged into one block of
///     up to a week, whose day rollups are computed from it, not stored
///     (`block_spans.rs`). `upgrade` joins a version 4 to 12 file's slow
///     series' one-day blocks once. A build before would read such a block
///     as its first day alone, so a restore by one refuses a version 13
///     file.
/// 14. the tariff counters' columns in `readings_power` (added in place by
///     `upgrade`) and day rollups' bodies of version 6 (a tariff meter's),
///     which a build before cannot read: a restore by one refuses a
///     version 14 file.
pub const VERSION: i64 = 14;

/// The families, each with its table: every reading kind, in variant order.
pub const FAMILIES: [ReadingKind; 4] = ReadingKind::ALL;

/// Rows per multi-row INSERT (`Family::insert_many`): one statement's start,
/// bindings and reset are shared by this many rows.
pub const ROWS_PER_INSERT: usize = 50;

/// One family's table and its columns, with the statements that use them
/// (made once, so that no hot path formats SQL).
pub struct Family {
    pub kind: ReadingKind,
    pub table: String,
    /// The catalogue's quantities of the family, in catalogue order.
    pub columns: Vec<Quantity>,
    /// `INSERT INTO t (device, ts, room, c1..) VALUES (?, ?, ?, ?..)`: one row.
    pub insert: String,
    /// The same for `ROWS_PER_INSERT` rows.
    pub insert_many: String,
    /// `ts, room, c1..` of a device's rows `ts BETWEEN ?2 AND ?3`, ascending
    /// and descending. No `LIMIT ?`: a bound limit makes SQLite prepare the
    /// statement again on every run (the caller stops stepping instead).
    pub select: [String; 2],
    /// Deletes a device's row at one time.
    pub delete: String,
    /// The newest time of a device's rows.
    pub newest: String,
}

/// The families' tables, from the catalogue.
pub fn families() -> &'static [Family] {
    static ALL: OnceLock<Vec<Family>> = OnceLock::new();
    ALL.get_or_init(|| {
        FAMILIES
            .into_iter()
            .map(|kind| {
                let columns: Vec<Quantity> = Quantity::ALL
                    .into_iter()
                    .filter(|q| q.family() == kind)
                    .collect();
                let names = columns
                    .iter()
                    .map(|q| q.name())
                    .collect::<Vec<_>>()
                    .join(", ");
                let table = format!("readings_{}", kind.as_str());
                let tuple = format!("({})", vec!["?"; 3 + columns.len()].join(", "));
                let insert = |rows: usize| {
                    format!(
                        "INSERT INTO {table} (device, ts, room, {names}) VALUES {}",
                        vec![tuple.as_str(); rows].join(", ")
                    )
                };
                let select = |direction: &str| {
                    format!(
                        "SELECT ts, room, {names} FROM {table}
                         WHERE device = ?1 AND ts BETWEEN ?2 AND ?3 ORDER BY ts {direction}"
                    )
                };
                Family {
                    insert: insert(1),
                    insert_many: insert(ROWS_PER_INSERT),
                    select: [select("ASC"), select("DESC")],
                    delete: format!("DELETE FROM {table} WHERE device = ?1 AND ts = ?2"),
                    newest: format!(
                        "SELECT ts FROM {table} WHERE device = ?1 ORDER BY ts DESC LIMIT 1"
                    ),
                    table,
                    columns,
                    kind,
                }
            })
            .collect()
    })
}

/// For each quantity (by its catalogue position): its family's index in
/// `families()` and its column's index in that family.
pub fn slot(q: Quantity) -> (usize, usize) {
    static SLOTS: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        Quantity::ALL
            .into_iter()
            .map(|q| {
                let f = families()
                    .iter()
                    .position(|f| f.kind == q.family())
                    .expect("every family has a table");
                let c = families()[f]
                    .columns
                    .iter()
                    .position(|c| *c == q)
                    .expect("every quantity has a column");
                (f, c)
            })
            .collect()
    });
    slots[q.index()]
}

/// The schema, compacted (`compact`).
pub fn create() -> String {
    let mut sql = String::from(
        "CREATE TABLE IF NOT EXISTS names (
            id   INTEGER PRIMARY KEY,
            kind INTEGER NOT NULL,   -- 0 device, 1 room
            text TEXT NOT NULL,
            UNIQUE (kind, text)
        );\n",
    );
    for family in families() {
        let cols: Vec<&str> = family.columns.iter().map(|q| q.name()).collect();
        sql += &format!(
            "CREATE TABLE IF NOT EXISTS {} (
                device INTEGER NOT NULL,
                ts     INTEGER NOT NULL,
                room   INTEGER,
                {},
                PRIMARY KEY (device, ts)
            ) WITHOUT ROWID;\n",
            family.table,
            cols.join(", ")
        );
    }
    // The registry, kept in the write transaction. Types and quantities are
    // their catalogue names (space-separated), never positions, so a catalogue
    // that grows never reinterprets them.
    sql += "CREATE TABLE IF NOT EXISTS devices (
            id         INTEGER PRIMARY KEY,   -- its id in names
            name       TEXT,
            room       INTEGER,               -- room of its latest reading that had one
            types      TEXT NOT NULL DEFAULT '',
            quantities TEXT NOT NULL DEFAULT '',
            first_seen INTEGER,
            last_seen  INTEGER,
            latest     TEXT                   -- the latest reading, as answers show it
        );
        CREATE TABLE IF NOT EXISTS rooms (
            id         INTEGER PRIMARY KEY,
            name       TEXT,
            first_seen INTEGER,
            last_seen  INTEGER,
            latest     TEXT
        );
        CREATE TABLE IF NOT EXISTS room_devices (
            room   INTEGER NOT NULL,
            device INTEGER NOT NULL,
            PRIMARY KEY (room, device)
        ) WITHOUT ROWID;\n";
    // Day rollups (docs/rollups.md): span 1 (0 was an hour, before version
    // 4); the body is the stored shape, postcard-encoded, and `size` its
    // DynamoDB size (`billing::stored_size`), which a read meters: sizing
    // the bodies of a year of daily stats was a fifth of its server time.
    sql += "CREATE TABLE IF NOT EXISTS rollups (
            device INTEGER NOT NULL,
            span   INTEGER NOT NULL,
            start  INTEGER NOT NULL,
            body   BLOB NOT NULL,
            size   INTEGER,
            PRIMARY KEY (device, span, start)
        ) WITHOUT ROWID;\n";
    sql += BLOCKS;
    sql += ALERTS;
    // Not a partial index (`WHERE temperature IS NOT NULL ...`, before
    // version 4): SQLite tests whether a query's terms imply a partial
    // index's condition by their bound values, and then prepares every
    // statement on the table again each time it is run with new values (10 %
    // of ingest's time). It holds the hot rows only; zaddr is NULL for a row
    // without both values.
    sql += Z_INDEX;
    compact(&sql)
}

/// `sql` without its comments and indentation. SQLite keeps each
/// statement's text in `sqlite_schema`: with them the schema took three
/// pages of every file (12 KB), without them one. (No statement here has a
/// `--` or a run of spaces inside a literal.)
fn compact(sql: &str) -> String {
    sql.lines()
        .map(|line| line.split("--").next().unwrap_or_default())
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Alert rules, as put, the series that are not inactive, and the
/// notifications waiting for their receivers (docs/alerts.md).
pub const ALERTS: &str = "CREATE TABLE IF NOT EXISTS alert_rules (
        name TEXT PRIMARY KEY,
        rule TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS alert_states (
        rule        TEXT NOT NULL,
        device      TEXT NOT NULL,
        firing      INTEGER NOT NULL,
        since       INTEGER NOT NULL,
        quiet_since INTEGER,
        value       REAL,
        notified    INTEGER,
        PRIMARY KEY (rule, device)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS alert_deliveries (
        receiver      TEXT NOT NULL,
        rule          TEXT NOT NULL,
        device        TEXT NOT NULL,
        notification  TEXT NOT NULL,  -- domain::alerts::Notification as JSON
        queued_at     INTEGER NOT NULL,
        attempts      INTEGER NOT NULL,
        next_attempt  INTEGER NOT NULL,
        last_error    TEXT,
        failing_since INTEGER,
        PRIMARY KEY (receiver, rule, device)
    ) WITHOUT ROWID;\n";

/// The Z-order index of the climate rows.
pub const Z_INDEX: &str = "CREATE INDEX IF NOT EXISTS readings_climate_z
    ON readings_climate (device, zaddr(ts, temperature, humidity));\n";

/// A value as stored: exact thousandths as an INTEGER, else the REAL.
pub fn stored_value(v: f64) -> Value {
    let thousandths = (v * 1000.0).round();
    if thousandths.abs() < 9.0e15 && thousandths / 1000.0 == v {
        Value::Integer(thousandths as i64)
    } else {
        Value::Real(v)
    }
}

/// The value back from what `stored_value` stored.
pub fn read_value(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64 / 1000.0),
        ValueRef::Real(r) => Some(r),
        _ => None,
    }
}

/// The 96-bit Z-order address as 12 big-endian bytes, so that byte order is
/// address order: what the `zaddr` SQL function returns.
pub fn address_bytes(address: u128) -> Vec<u8> {
    address.to_be_bytes()[4..].to_vec()
}

/// Registers `zaddr(ts, temperature, humidity)` on a connection: every
/// connection that writes climate rows or reads the index needs it.
pub fn register_zaddr(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "zaddr",
        3,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let ts = ctx.get_raw(0).as_i64()?;
            let (Some(t), Some(h)) = (read_value(ctx.get_raw(1)), read_value(ctx.get_raw(2)))
            else {
                return Ok(None);
            };
            let Ok(ts) = Timestamp::from_millis(ts) else {
                return Ok(None);
            };
            Ok(Some(address_bytes(zorder::address(ts, t, h))))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every value comes back exactly, thousandths or not.
        #[test]
        fn values_come_back_exactly(v in prop_oneof![
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            (-1_000_000_000i64..1_000_000_000).prop_map(|t| t as f64 / 1000.0),
            (-100_000i64..100_000).prop_map(|t| t as f64 / 100.0),
        ]) {
            let stored = stored_value(v);
            let back = match &stored {
                Value::Integer(i) => read_value(ValueRef::Integer(*i)),
                Value::Real(r) => read_value(ValueRef::Real(*r)),
                _ => None,
            };
            // Bit for bit, but for -0, which validation turns into 0 anyway.
            prop_assert_eq!(back, Some(v));
            prop_assert!(v == 0.0 || back.unwrap().to_bits() == v.to_bits());
        }
    }

    #[test]
    fn every_quantity_has_one_column() {
        let columns: usize = families().iter().map(|f| f.columns.len()).sum();
        assert_eq!(columns, Quantity::ALL.len());
        for q in Quantity::ALL {
            let (f, c) = slot(q);
            assert_eq!(families()[f].columns[c], q);
        }
    }
}
