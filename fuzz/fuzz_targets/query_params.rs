//! Query-string parsing of the range and aggregate routes: never panics; what
//! it accepts is within the documented limits.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shared::aws_lambda_events::query_map::QueryMap;
use shared::model::Timestamp;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut params: HashMap<String, Vec<String>> = HashMap::new();
    for pair in text.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        params.entry(k.to_owned()).or_default().push(v.to_owned());
    }
    let params = QueryMap::from(params);
    let now = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
    if let Ok(q) = shared::api::params::readings_query(&params, now) {
        assert!((1..=1000).contains(&q.limit));
        assert!(q.range.from() < q.range.to());
    }
    if let Ok(q) = shared::api::params::stats_query(&params, now) {
        assert!(q.bucketing.max_buckets(&q.range) <= shared::aggregate::MAX_BUCKETS);
    }
});
