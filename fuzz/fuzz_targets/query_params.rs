//! Query-string parsing of the range and aggregate routes, as the Router's
//! `Params` extractor does it: never panics; what it accepts is within the
//! documented limits.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shared::api::params::{self, RangeParams, StatsParams};
use shared::model::Timestamp;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
    if let Ok(p) = params::parse::<RangeParams>(text) {
        if let Ok(q) = params::readings_query(&p, now, params::MAX_LIMIT) {
            assert!((1..=params::MAX_LIMIT).contains(&q.limit));
            assert!(q.range.from() < q.range.to());
        }
    }
    if let Ok(p) = params::parse::<StatsParams>(text) {
        if let Ok(q) = params::stats_query(&p, now) {
            assert!(q.bucketing.max_buckets(&q.range) <= shared::domain::aggregate::MAX_BUCKETS);
        }
    }
});
