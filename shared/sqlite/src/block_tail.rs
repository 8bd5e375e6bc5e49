//! Where a sealed block is cut so that its rows fill their pages (schema
//! version 10).
//!
//! SQLite keeps a row of up to about a page in its leaf page, whole: a page
//! holds as many rows as fit and the rest of it stays empty. A noisy
//! meter's day (2.7 KB) filled one 4 KB page of two thirds, a noisy
//! sensor's (1.5 KB) two of three quarters: 28 % of a year's file was empty
//! pages' room (docs/BENCHMARKS.md). So a block longer than a sixth of a
//! page keeps, in `blocks`, a head of exactly the length at which `k` rows
//! fill a page (the largest such length it reaches, `k` from 2 to 6), and
//! the rest of its bytes, its tail, in `block_tails` under the same key,
//! where the short tails of many days share pages. A block is read whole:
//! its head, then its tail. (A file from before version 10 has its long
//! blocks cut when it is opened, `upgrade`.)

/// What a `blocks` row takes in its leaf page besides its body's bytes: a
/// cell pointer (2), the payload's length (2) and the key (up to 7, a
/// device number under 2^17) as varints, and the record's header (3).
const ROW_BYTES: usize = 14;

/// A leaf page's header.
const LEAF_HEADER: usize = 8;

/// Rows a page may be cut for, most first: a shorter body is kept whole.
const MOST_ROWS: usize = 6;

/// The length of the head kept in `blocks` for a block of `len` bytes in a
/// file of `page_size` pages: `len` itself when it is short enough for
/// `MOST_ROWS` rows to a page, else the longest length at most `len` at
/// which `k` rows fill a page.
pub fn head_len(len: usize, page_size: usize) -> usize {
    let room = page_size.saturating_sub(LEAF_HEADER);
    let filling = |k: usize| (room / k).saturating_sub(ROW_BYTES);
    if len <= filling(MOST_ROWS) {
        return len;
    }
    (2..=MOST_ROWS)
        .map(filling)
        .find(|head| *head <= len)
        .unwrap_or(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    #[test]
    fn a_short_block_is_kept_whole() {
        for len in [1, 100, 667] {
            assert_eq!(head_len(len, PAGE), len);
        }
    }

    #[test]
    fn a_longer_block_keeps_the_head_at_which_rows_fill_a_page() {
        // The noisy sensor's day: three heads to a page.
        assert_eq!(head_len(1535, PAGE), 1348);
        // The noisy meter's: two.
        assert_eq!(head_len(2709, PAGE), 2030);
        // The household meter's: three.
        assert_eq!(head_len(1690, PAGE), 1348);
        // Past a page: two heads, the rest in the tail.
        assert_eq!(head_len(9000, PAGE), 2030);
        // Exactly a filling length: whole.
        assert_eq!(head_len(1008, PAGE), 1008);
    }

    #[test]
    fn heads_fill_their_pages_in_any_page_size() {
        for page in [1024, 4096, 8192, 65536] {
            for len in (1..3 * page).step_by(37) {
                let head = head_len(len, page);
                assert!(head <= len);
                let per_page = (page - LEAF_HEADER) / (head + ROW_BYTES);
                assert!(per_page >= 1, "{page} {len}");
                // Either kept whole (short) or cut where `per_page` rows
                // leave less room than one more row of the next length down.
                if head < len {
                    let left = page - LEAF_HEADER - per_page * (head + ROW_BYTES);
                    assert!(left < per_page + ROW_BYTES, "{page} {len}: {left}");
                }
            }
        }
    }
}
