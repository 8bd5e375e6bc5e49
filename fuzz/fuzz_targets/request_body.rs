//! `POST /readings` body parsing: never panics; what it accepts round-trips;
//! the reader of plain bodies answers as serde_json's path does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shared::model::{Reading, Timestamp};
use shared::registry::KnownRooms;

fuzz_target!(|data: &[u8]| {
    let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
    let answer = shared::ingest::json::parse_batch(data, now, &KnownRooms::default());
    assert_eq!(
        answer,
        shared::ingest::json::parse_batch_without_fast_path(data, now, &KnownRooms::default())
    );
    if let Ok(readings) = answer {
        assert!(readings.len() <= shared::ingest::MAX_READINGS);
        for r in &readings {
            // An accepted reading serialises to a body that parses back to itself.
            let json = serde_json::to_value(r).unwrap();
            let again = Reading::from_json(&json, now, |_| None).expect("accepted readings re-parse");
            assert_eq!(&again, r);
        }
    }
});
