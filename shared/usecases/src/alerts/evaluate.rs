//! One live evaluation of the stored rules (docs/alerts.md): the rules and
//! the series states read from the store, every rule observed against the
//! registry entries its scope names (`watched`: each device's latest reading) and, for an energy rule, the
//! device's readings over its window with the counter's reading before it;
//! what changed written back, so that a restart or a cold start neither
//! forgets a firing series nor reports its transition twice. What receivers
//! are due is queued for each (`deliver` sends it) before the states are
//! written: a crash between the two queues it again, and the newer
//! notification replaces the older.

use crate::alerts::watched::watched;
use crate::notify::Receivers;
use domain::aggregate::counter::{counted_between, Counter};
use domain::alerts::notification::due;
use domain::alerts::{Condition, Delivery, Event, Rule, RuleError};
use domain::model::{DeviceId, Reading, TimeRange, Timestamp};
use domain::registry::RegistrySnapshot;
use std::collections::BTreeMap;
use storage::alerts::changes;
use storage::{Alerts, Order, RangeRequest, Store, StoreError};

/// What an evaluation did.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    pub events: Vec<Event>,
    /// Notifications queued, one per receiver each.
    pub queued: usize,
    /// Stored rules that no longer parse (written by a later version?): skipped.
    pub broken: Vec<(String, RuleError)>,
}

/// The stored rules, parsed; those that fail are set aside.
pub async fn rules<S: Alerts>(
    store: &S,
) -> Result<(Vec<Rule>, Vec<(String, RuleError)>), StoreError> {
    let mut good = Vec::new();
    let mut broken = Vec::new();
    for (name, json) in store.alert_rules().await? {
        let parsed = serde_json::from_str(&json)
            .map_err(|e| RuleError {
                field: "rule".into(),
                message: e.to_string(),
            })
            .and_then(|v| Rule::parse(&name, &v));
        match parsed {
            Ok(rule) => good.push(rule),
            Err(e) => broken.push((name, e)),
        }
    }
    Ok((good, broken))
}

/// What each device an energy rule names counted (kWh, or m³) over the
/// rule's window to `now`.
async fn energy<S: Store>(
    store: &S,
    rules: &[Rule],
    registry: &RegistrySnapshot,
    now: Timestamp,
) -> Result<BTreeMap<(String, DeviceId), f64>, StoreError> {
    let mut out = BTreeMap::new();
    for rule in rules {
        let Condition::Energy {
            window, counter, ..
        } = rule.condition
        else {
            continue;
        };
        let from = Timestamp::from_millis(now.millis() - window.as_millis() as i64)
            .unwrap_or(Timestamp::MIN);
        let Ok(window_range) =
            TimeRange::new(from.saturating_add_millis(1), now.saturating_add_millis(1))
        else {
            continue;
        };
        for device in domain::alerts::devices_in(&rule.scope, registry) {
            // The reference: the counter's last reading at or before the
            // window, however long ago (a meter may report hourly); then
            // the window's readings.
            let mut readings: Vec<Reading> = reference(store, &device, counter, from)
                .await?
                .into_iter()
                .collect();
            let mut request = RangeRequest {
                range: window_range,
                order: Order::Asc,
                limit: 1000,
                after: None,
            };
            loop {
                let page = store.device_readings(&device, &request).await?;
                readings.extend(page.readings);
                match page.next {
                    Some(next) => request.after = Some(next),
                    None => break,
                }
            }
            if let Some(counted) = counted_between(&readings, counter, from, now) {
                out.insert((rule.name.clone(), device), counted);
            }
        }
    }
    Ok(out)
}

/// The device's last reading at or before `at` that carries the bought
/// counter, among its last 100 (readings of watts alone come between),
/// read newest first a few at a time: a meter's latest usually has it, and
/// DynamoDB charges a query for every item it reads.
async fn reference<S: Store>(
    store: &S,
    device: &DeviceId,
    counter: Counter,
    at: Timestamp,
) -> Result<Option<Reading>, StoreError> {
    let Ok(range) = TimeRange::new(Timestamp::MIN, at.saturating_add_millis(1)) else {
        return Ok(None);
    };
    let mut request = RangeRequest {
        range,
        order: Order::Desc,
        limit: 4,
        after: None,
    };
    let mut looked = 0;
    while looked < 100 {
        let page = store.device_readings(device, &request).await?;
        looked += page.readings.len();
        if let Some(found) = page
            .readings
            .into_iter()
            .find(|r| r.get(counter.quantity()).is_some())
        {
            return Ok(Some(found));
        }
        match page.next {
            Some(next) => request.after = Some(next),
            None => break,
        }
        request.limit = 32;
    }
    Ok(None)
}

/// Evaluates every stored rule at `now` against the registry entries the
/// rules watch (`watched`), queuing what `receivers` are due.
pub async fn evaluate<S: Store + Alerts>(
    store: &S,
    now: Timestamp,
    receivers: &Receivers,
) -> Result<Evaluated, StoreError> {
    let (rules, broken) = rules(store).await?;
    let before = store.alert_states().await?;
    let registry = &watched(store, &rules, &before).await?;
    let kwh = energy(store, &rules, registry, now).await?;
    let mut after = before.clone();
    let events = after.evaluate(&rules, registry, now, |rule, device| {
        kwh.get(&(rule.name.clone(), device.clone())).copied()
    });
    let mut queued = Vec::new();
    if !receivers.list.is_empty() {
        let told = due(
            &rules,
            registry,
            &before,
            &mut after,
            &events,
            now,
            receivers.repeat_interval,
        );
        for r in &receivers.list {
            queued.extend(told.iter().map(|n| Delivery::new(r.name(), n.clone(), now)));
        }
        store.queue_deliveries(&queued).await?;
    }
    store.save_alert_states(&changes(&before, &after)).await?;
    Ok(Evaluated {
        events,
        queued: queued.len(),
        broken,
    })
}
