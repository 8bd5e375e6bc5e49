//! What the WAL index (the `-shm` file beside a store in WAL mode) says of
//! the database file: whether it holds every frame of the WAL, so that the
//! file's own bytes are a reader's snapshot. The backup copies such a file
//! as it is (`backup`), without SQLite reading it page by page.
//!
//! The index's layout is SQLite's documented file format
//! (<https://www.sqlite.org/walformat.html>, "The WAL-Index Format"), in the
//! machine's byte order: two copies of a 48-byte header (a writer updates
//! one, then the other; a reader that finds them different reads again),
//! then the checkpoint's record, whose first word is `nBackfill`, the frames
//! already copied into the database file.
//!
//! Why it is enough, for a connection that is inside a read transaction
//! when it asks (SQLite's `wal.c`): such a reader either reads the database
//! file alone (read mark 0, taken only when every frame was copied) and no
//! checkpoint may copy a frame into the file until it ends, or it reads
//! frames up to its mark `M`, no checkpoint may copy a frame past `M`, and
//! the WAL may not start over. `nBackfill` only grows and never passes `M`,
//! and the WAL's last frame, read after the transaction began, is at least
//! `M`. So if the two are equal, both are `M`: the file holds the snapshot,
//! and nothing writes to it until the transaction ends.

use std::path::{Path, PathBuf};

/// The file beside a store's, named by appending `suffix` to its name:
/// SQLite's `-wal` and `-shm`, and the backup's and restore's own.
pub(super) fn wal_of(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Bytes of one copy of the index's header.
const HEADER: usize = 48;
/// The header's version (`WALINDEX_MAX_VERSION`).
const VERSION: u32 = 3_007_000;
/// Where the header keeps `isInit` and `mxFrame`, the WAL's last valid frame.
const IS_INIT: usize = 12;
const MX_FRAME: usize = 16;
/// Where the checkpoint's record keeps `nBackfill`.
const N_BACKFILL: usize = 2 * HEADER;

/// Whether the database file at `db` holds every frame of its WAL, as its
/// WAL index says now: `false` if there is no index or it cannot be read, or
/// its two headers differ (a writer is updating them).
pub(super) fn file_holds_every_frame(db: &Path) -> bool {
    let shm = wal_of(db, "-shm");
    let mut bytes = [0u8; N_BACKFILL + 4];
    // Held open (`held_files`): closing it would drop the read mark this
    // process holds in it, the very lock the answer depends on.
    let read = super::held_files::held_open(&shm).and_then(|file| {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(&mut bytes, 0)
    });
    read.is_ok() && holds_every_frame(&bytes)
}

/// [`file_holds_every_frame`] on the index's first bytes.
fn holds_every_frame(bytes: &[u8; N_BACKFILL + 4]) -> bool {
    let word =
        |at: usize| u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (first, second) = bytes[..2 * HEADER].split_at(HEADER);
    first == second
        && word(0) == VERSION
        && bytes[IS_INIT] == 1
        && word(MX_FRAME) == word(N_BACKFILL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn index(mx_frame: u32, backfilled: u32, second_differs: bool) -> [u8; N_BACKFILL + 4] {
        let mut b = [0u8; N_BACKFILL + 4];
        for copy in 0..2 {
            let at = copy * HEADER;
            b[at..at + 4].copy_from_slice(&VERSION.to_ne_bytes());
            b[at + IS_INIT] = 1;
            b[at + MX_FRAME..at + MX_FRAME + 4].copy_from_slice(&mx_frame.to_ne_bytes());
        }
        if second_differs {
            b[HEADER + MX_FRAME] ^= 1;
        }
        b[N_BACKFILL..].copy_from_slice(&backfilled.to_ne_bytes());
        b
    }

    #[test]
    fn every_frame_copied_only_when_the_counts_agree_and_the_headers_match() {
        assert!(holds_every_frame(&index(0, 0, false)));
        assert!(holds_every_frame(&index(40, 40, false)));
        assert!(!holds_every_frame(&index(41, 40, false)));
        assert!(!holds_every_frame(&index(40, 40, true)));
        let mut uninitialised = index(0, 0, false);
        uninitialised[IS_INIT] = 0;
        uninitialised[HEADER + IS_INIT] = 0;
        assert!(!holds_every_frame(&uninitialised));
    }

    /// SQLite's own index, as a writer and a checkpoint leave it.
    #[test]
    fn sqlite_s_index_says_whether_the_file_holds_every_frame() {
        let dir = crate::tests::temp_dir("wal-index");
        let db = dir.join("s.db");
        assert!(!file_holds_every_frame(&db), "no index yet");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE t(x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        assert!(!file_holds_every_frame(&db), "frames not yet copied");
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .unwrap();
        assert!(file_holds_every_frame(&db), "after a checkpoint");
        conn.execute_batch("INSERT INTO t VALUES (2)").unwrap();
        assert!(!file_holds_every_frame(&db), "a frame written since");
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        assert!(file_holds_every_frame(&db), "the WAL cut to nothing");
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
