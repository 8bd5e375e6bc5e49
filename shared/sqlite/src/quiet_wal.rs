//! When the checkpointer may cut the WAL to nothing: it has stayed the same
//! for a while, every frame of it copied into the database file. The
//! writer's own checkpoint lets the WAL start over, but the file keeps the
//! size a burst gave it (up to 32 MB, then `journal_size_limit`'s 8 MB after
//! the next write); a quiet store needs none of it.

use std::time::{Duration, Instant};

/// What the checkpointer saw of the WAL, tick after tick.
pub struct QuietWal {
    quiet_for: Duration,
    /// Frames in the WAL at the last tick, and since when it held them.
    seen: Option<(i64, Instant)>,
}

impl QuietWal {
    pub fn new(quiet_for: Duration) -> Self {
        QuietWal {
            quiet_for,
            seen: None,
        }
    }

    /// After a PASSIVE checkpoint found `frames` in the WAL, `copied` of
    /// them in the file, at `now`: whether the WAL is worth cutting. An
    /// empty WAL is not (it was cut already, or never written).
    pub fn is_quiet(&mut self, frames: i64, copied: i64, now: Instant) -> bool {
        match self.seen {
            Some((seen, since)) if seen == frames => {
                frames > 0 && copied == frames && now.duration_since(since) >= self.quiet_for
            }
            _ => {
                self.seen = Some((frames, now));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_secs(5);

    #[test]
    fn a_wal_unchanged_and_copied_for_the_quiet_period_is_cut() {
        let t0 = Instant::now();
        let mut wal = QuietWal::new(QUIET);
        assert!(!wal.is_quiet(800, 800, t0));
        assert!(!wal.is_quiet(800, 800, t0 + Duration::from_secs(4)));
        assert!(wal.is_quiet(800, 800, t0 + QUIET));
        // Until it is cut, every tick says so (a cut a reader held off is
        // tried again).
        assert!(wal.is_quiet(800, 800, t0 + Duration::from_secs(6)));
    }

    #[test]
    fn a_write_starts_the_quiet_period_over() {
        let t0 = Instant::now();
        let mut wal = QuietWal::new(QUIET);
        assert!(!wal.is_quiet(800, 800, t0));
        assert!(!wal.is_quiet(900, 900, t0 + Duration::from_secs(4)));
        assert!(!wal.is_quiet(900, 900, t0 + Duration::from_secs(8)));
        assert!(wal.is_quiet(900, 900, t0 + Duration::from_secs(9)));
    }

    #[test]
    fn frames_not_yet_in_the_file_or_an_empty_wal_are_left() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(60);
        let mut wal = QuietWal::new(QUIET);
        assert!(!wal.is_quiet(800, 700, t0));
        assert!(!wal.is_quiet(800, 700, later));
        let mut empty = QuietWal::new(QUIET);
        assert!(!empty.is_quiet(0, 0, t0));
        assert!(!empty.is_quiet(0, 0, later));
    }
}
