//! Storage: a small trait over the table, which each engine's crate
//! (`dynamodb`, `sqlite`) implements; the key encoding (`keys`) and the one
//! backoff (`retry`). The use cases above see readings and registry
//! records, never engine types.

pub mod alerts;
mod capabilities;
mod error;
mod expiry;
pub mod format;
pub mod keys;
pub mod metering;
mod range;
mod readings;
mod registry;
pub mod retry;
mod rollups;
mod stream_positions;
mod upkeep;
mod write_report;
mod z_index;

pub use alerts::Alerts;
pub use capabilities::Capabilities;
pub use domain::indexes::Indexes;
pub use domain::model::FastMap;
pub use domain::registry::{DeviceRecord, DeviceUpdate, RegistrySnapshot, RoomRecord, RoomUpdate};
pub use domain::registry_list::{
    DeviceFilter, DeviceListRequest, DevicePage, RoomFilter, RoomListRequest, RoomPage,
};
pub use domain::retention::Retention;
pub use domain::rollup_upkeep::{Keeping, Marker, RollupSpans, RollupWrites};
pub use error::StoreError;
pub use expiry::{now_epoch_seconds, Expiry, LATE_RAW_GRACE_SECONDS};
pub use range::{after_position, merge_pages, Order, Page, RangeRequest};
pub use readings::ReadingStore;
pub use registry::RegistryStore;
pub use rollups::RollupStore;
pub use stream_positions::{ShardPosition, StreamPositions};
pub use upkeep::Upkeep;
pub use write_report::{Deduped, WriteReport};
pub use z_index::{SealedPage, ZIndex, ZPage, ZRangeRequest};

/// The storage operations the service needs, in parts by what their callers
/// need; every engine passes the same contract tests. `Clone` and
/// `'static` so that a background task (the registry refresh) can hold one.
pub trait Store:
    ReadingStore + RollupStore + RegistryStore + Alerts + Clone + Send + Sync + 'static
{
    /// What this engine does on its own (`Capabilities`).
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::Measurement;
    use domain::model::{DeviceId, Reading, TimeRange, Timestamp};

    fn power(dev: &str, ts: &str, kwh: f64) -> Reading {
        Reading {
            device_id: DeviceId::parse(dev).unwrap(),
            timestamp: Timestamp::parse(ts).unwrap(),
            measurement: Measurement::power(kwh, 0.0, 0.0).unwrap(),
        }
    }

    #[test]
    fn dedup_keeps_the_last_reading_per_key_and_maps_failures_back() {
        let rs = vec![
            power("a", "2026-11-01T00:00:00Z", 1.0),
            power("b", "2026-11-01T00:00:00Z", 2.0),
            power("a", "2026-11-01T09:00:00+09:00", 3.0), // same key as #0
            power("a", "2026-11-01T00:00:01Z", 4.0),
        ];
        let d = Deduped::new(&rs);
        assert_eq!(d.winners, vec![2, 1, 3]);
        assert_eq!(d.duplicates(), 1);
        let report = d.report(&[0]);
        assert_eq!(
            report.unwritten,
            vec![0, 2],
            "both readings with the failed key are unwritten"
        );
        assert_eq!(report.items_written, 2);
        assert_eq!(d.report(&[]).unwritten, Vec::<usize>::new());
    }

    fn t(h: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + h * 3_600_000).unwrap()
    }

    fn r(a: i64, b: i64) -> TimeRange {
        TimeRange::new(t(a), t(b)).unwrap()
    }

    #[test]
    fn a_position_narrows_each_device_s_range() {
        let a = DeviceId::parse("a").unwrap();
        let b = DeviceId::parse("b").unwrap();
        let c = DeviceId::parse("c").unwrap();
        let p = crate::keys::Position {
            timestamp: t(3),
            device_id: b.clone(),
        };
        let ms = |h: i64, d: i64| t(h).saturating_add_millis(d);
        let asc = |d: &DeviceId| after_position(&r(0, 10), Order::Asc, Some(&p), d).unwrap();
        assert_eq!(asc(&a).from(), ms(3, 1));
        assert_eq!(asc(&b).from(), ms(3, 1));
        assert_eq!(asc(&c).from(), t(3));
        let desc = |d: &DeviceId| after_position(&r(0, 10), Order::Desc, Some(&p), d).unwrap();
        assert_eq!(desc(&a).to(), ms(3, 1));
        assert_eq!(desc(&b).to(), t(3));
        assert_eq!(desc(&c).to(), t(3));
        assert_eq!(
            after_position(&r(0, 10), Order::Asc, None, &a),
            Some(r(0, 10))
        );
    }
}
