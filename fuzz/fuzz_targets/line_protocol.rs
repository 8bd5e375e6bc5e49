//! Line protocol → readings: never panics; what it accepts is within the
//! documented limits (times in the window, one reading per device and time,
//! no more readings than lines), and the fast parser for plain lines never
//! changes an answer.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shared::ingest::line_protocol::{parse, parse_without_fast_path, Precision};
use shared::model::Timestamp;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let precision = [
        Precision::Nanoseconds,
        Precision::Microseconds,
        Precision::Milliseconds,
        Precision::Seconds,
        Precision::Minutes,
        Precision::Hours,
    ][first as usize % 6];
    let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
    let parsed = parse(text, precision, now, |_| None);
    assert_eq!(parsed, parse_without_fast_path(text, precision, now, |_| None));
    if let Ok(lines) = parsed {
        assert!(lines.readings.len() + lines.skipped <= text.split('\n').count());
        let mut keys = BTreeSet::new();
        for r in &lines.readings {
            assert!(r.timestamp.millis() >= 946_684_800_000);
            assert!(r.timestamp <= now.saturating_add_millis(24 * 3600 * 1000));
            assert!(keys.insert((r.device_id.clone(), r.timestamp)), "one reading per key");
            assert!(!r.measurement.values().is_empty());
        }
    }
});
