//! `alerts replay`: rules evaluated over stored readings as if time had run,
//! one evaluation every `every` from `from` to `to`, each seeing what was
//! known at its moment: each device's latest reading up to it, and the kWh
//! bought over an energy rule's window. The same step as the live
//! evaluation (`domain::alerts::States`); vmalert's `-replay.timeFrom`
//! does the same on VictoriaMetrics.

use crate::alerts::watched::watched;
use domain::aggregate::counter::{counted_between, Counter};
use domain::alerts::{Condition, DeviceView, Devices, Event, Rule, States};
use domain::model::{DeviceId, Reading, ReadingKind, RoomId, TimeRange, Timestamp, DAY_MS};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use storage::{Order, RangeRequest, Store, StoreError};

/// One device's readings, and how far an evaluation has come through them.
struct DeviceHistory {
    id: DeviceId,
    readings: Vec<Reading>,
    types: BTreeSet<ReadingKind>,
    /// Readings before this index are at or before the evaluation's time.
    seen: usize,
    /// The latest of those with a room.
    room: Option<RoomId>,
}

/// What is known of every device at the evaluation's time.
struct History(BTreeMap<DeviceId, DeviceHistory>);

impl History {
    fn advance_to(&mut self, t: Timestamp) {
        for d in self.0.values_mut() {
            while d.seen < d.readings.len() && d.readings[d.seen].timestamp <= t {
                if let Some(room) = d.readings[d.seen].room() {
                    d.room = Some(room.clone());
                }
                d.seen += 1;
            }
        }
    }

    /// kWh bought by a device over `(from, to]`, from what is known by then.
    fn counted(
        &self,
        device: &DeviceId,
        counter: Counter,
        from: Timestamp,
        to: Timestamp,
    ) -> Option<f64> {
        let d = self.0.get(device)?;
        counted_between(&d.readings[..d.seen], counter, from, to)
    }
}

impl Devices for History {
    fn all(&self) -> Vec<DeviceView<'_>> {
        self.0.keys().filter_map(|id| self.get(id)).collect()
    }

    fn get(&self, id: &DeviceId) -> Option<DeviceView<'_>> {
        let d = self.0.get(id).filter(|d| d.seen > 0)?;
        Some(DeviceView {
            id: &d.id,
            room: d.room.as_ref(),
            types: &d.types,
            latest: d.readings.get(d.seen - 1),
        })
    }
}

/// How far before `from` a replay reads: enough for each rule's window and
/// quiet time, and a day for the latest values.
fn lookback(rules: &[Rule]) -> i64 {
    rules
        .iter()
        .map(|r| match r.condition {
            Condition::Energy { window, .. } => window.as_millis() as i64,
            Condition::NoData { quiet } => quiet.as_millis() as i64,
            Condition::Threshold { .. } => 0,
        })
        .fold(DAY_MS, i64::max)
}

/// Every transition of every rule's series, evaluated every `every` over
/// `range` (its start included, its end not).
pub async fn replay<S: Store>(
    store: &S,
    rules: &[Rule],
    range: TimeRange,
    every: Duration,
) -> Result<Vec<Event>, StoreError> {
    let every_ms = (every.as_millis() as i64).max(1);
    let read_from =
        Timestamp::from_millis(range.from().millis() - lookback(rules)).unwrap_or(Timestamp::MIN);
    let read = TimeRange::new(read_from, range.to()).unwrap_or(range);
    let registry = watched(store, rules, &States::default()).await?;
    let mut history = History(BTreeMap::new());
    for id in registry.devices.keys() {
        let mut request = RangeRequest {
            range: read,
            order: Order::Asc,
            limit: 1000,
            after: None,
        };
        let mut readings = Vec::new();
        loop {
            let page = store.device_readings(id, &request).await?;
            readings.extend(page.readings);
            match page.next {
                Some(next) => request.after = Some(next),
                None => break,
            }
        }
        let types = readings.iter().map(|r| r.kind()).collect();
        history.0.insert(
            id.clone(),
            DeviceHistory {
                id: id.clone(),
                readings,
                types,
                seen: 0,
                room: None,
            },
        );
    }
    let mut states = States::default();
    let mut events = Vec::new();
    let mut t = range.from();
    while t < range.to() {
        history.advance_to(t);
        let known = &history;
        events.extend(
            states.evaluate(rules, known, t, |rule, device| match rule.condition {
                Condition::Energy {
                    window, counter, ..
                } => {
                    let from =
                        Timestamp::from_millis(t.millis() - window.as_millis() as i64).ok()?;
                    known.counted(device, counter, from, t)
                }
                _ => None,
            }),
        );
        match Timestamp::from_millis(t.millis() + every_ms) {
            Ok(next) => t = next,
            Err(_) => break,
        }
    }
    Ok(events)
}
