//! The energy answer: each counter's amount per bucket and in total.

use super::stats::cost;
use super::stats::header;
use domain::aggregate::EnergyBucket;
use domain::model::DeviceId;
use serde_json::{json, Value};
use usecases::query::Aggregate;
use usecases::query::StatsQuery;

/// Energy per bucket, with totals and the number of counter resets; gas
/// and water (m³) beside, and each tariff's kWh of a two-tariff meter, for
/// a device that has those counters.
pub fn energy(device: &DeviceId, q: &StatsQuery, a: &Aggregate<EnergyBucket>) -> Value {
    use domain::aggregate::counter::Counter;
    /// Each counter's name in the answer, as `<unit>_<what>`.
    const NAMES: [(Counter, &str); 8] = [
        (Counter::Bought, "kwh_bought"),
        (Counter::Sold, "kwh_sold"),
        (Counter::Gas, "m3_gas"),
        (Counter::Water, "m3_water"),
        (Counter::BoughtT1, "kwh_bought_t1"),
        (Counter::BoughtT2, "kwh_bought_t2"),
        (Counter::SoldT1, "kwh_sold_t1"),
        (Counter::SoldT2, "kwh_sold_t2"),
    ];
    let mut m = header(("device_id", device.as_str()), q);
    cost(&mut m, a);
    let buckets = &a.buckets;
    let round = |v: f64| (v * 1e6).round() / 1e6;
    for (c, name) in NAMES {
        // The electricity totals always (0 for a gas meter, as before); a
        // volume's or a tariff's where its buckets have it (each has, where
        // the device has the counter).
        let total: Option<f64> = match buckets.is_empty() {
            true => Counter::ELECTRICITY.contains(&c).then_some(0.0),
            false => buckets.iter().map(|b| b.amount(c)).sum(),
        };
        if let Some(total) = total {
            m.insert(name.into(), json!(round(total)));
        }
    }
    m.insert(
        "resets".into(),
        json!(buckets.iter().map(|b| b.resets).sum::<u32>()),
    );
    let buckets: Vec<Value> = buckets
        .iter()
        .map(|b| {
            let mut o = serde_json::Map::new();
            o.insert("start".into(), json!(b.start.to_string()));
            o.insert("end".into(), json!(b.end.to_string()));
            for (c, name) in NAMES {
                if let Some(v) = b.amount(c) {
                    o.insert(name.into(), json!(v));
                }
            }
            o.insert("resets".into(), json!(b.resets));
            Value::Object(o)
        })
        .collect();
    m.insert("buckets".into(), Value::Array(buckets));
    Value::Object(m)
}
