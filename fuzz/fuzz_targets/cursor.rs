//! Cursor decoding: never panics; an accepted cursor is canonical (it
//! re-encodes to itself) and points inside its range.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shared::keys::CursorScope;
use shared::model::{DeviceId, TimeRange, Timestamp};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let device = DeviceId::parse("meter-1").unwrap();
    let range = TimeRange::new(
        Timestamp::parse("2026-11-01T00:00:00Z").unwrap(),
        Timestamp::parse("2026-12-01T00:00:00Z").unwrap(),
    )
    .unwrap();
    for descending in [false, true] {
        let scope = CursorScope::Device { device: &device, range: &range, descending };
        if let Ok(pos) = scope.decode(text) {
            assert!(range.contains(pos.timestamp));
            assert_eq!(scope.encode(&pos), text);
        }
    }
});
