//! DynamoDB's size of an SDK item (docs/cost.md): the same rule as
//! `storage::format::billing`, over `AttributeValue`s, for what the adapter and the
//! cost test hold as SDK items.

use aws_sdk_dynamodb::types::AttributeValue;
use storage::format::billing::number_size;

/// DynamoDB's size of an attribute value.
pub fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::L(items) => 3 + items.iter().map(|i| 1 + value_size(i)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// DynamoDB's size of an item: its attribute names and values.
pub fn item_size<'a>(item: impl IntoIterator<Item = (&'a String, &'a AttributeValue)>) -> usize {
    item.into_iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading_item;
    use domain::aggregate::rollup::spans;
    use domain::model::{DeviceId, Measurement, Reading, RoomId, Span, Timestamp};
    use storage::format::billing::{reading_size, rollup_size};
    use storage::format::rollup::Stored;
    use storage::Indexes;

    #[test]
    fn a_reading_s_size_is_its_item_s() {
        let none = Indexes {
            room_time: false,
            box_search: false,
            all_devices: false,
        };
        for (i, m) in [
            Measurement::climate(RoomId::parse("bedroom").unwrap(), 21.37, 45.0).unwrap(),
            Measurement::power(5123.456, 0.0, -120.5).unwrap(),
            Measurement::power(1e-3, 100.0, 350.0).unwrap(),
        ]
        .into_iter()
        .enumerate()
        {
            let r = Reading {
                device_id: DeviceId::parse(&format!("device-{i}")).unwrap(),
                timestamp: Timestamp::from_millis(1_795_219_200_000).unwrap(),
                measurement: m,
            };
            let item = reading_item(&r, &storage::Expiry::NEVER, 11, none);
            assert_eq!(reading_size(&r), item_size(&item), "{r:?}");
        }
    }

    #[test]
    fn a_rollup_s_size_is_its_item_s() {
        let device = DeviceId::parse("meter-1").unwrap();
        let readings: Vec<Reading> = (0..90)
            .map(|m| Reading {
                device_id: device.clone(),
                timestamp: Timestamp::from_millis(1_795_219_200_000 + m * 60_000).unwrap(),
                measurement: Measurement::power(
                    5123.456 + m as f64 * 0.013,
                    1.0,
                    -120.5 + m as f64,
                )
                .unwrap(),
            })
            .collect();
        for rollup in spans(Span::Hour, Default::default(), readings.iter()) {
            let item = super::super::rollups::rollup_item(&device, &rollup).unwrap();
            assert_eq!(
                rollup_size(device.as_str().len(), &Stored::from(&rollup)),
                item_size(&item),
                "{rollup:?}"
            );
        }
    }
}
