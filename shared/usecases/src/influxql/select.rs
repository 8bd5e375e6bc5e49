//! `SELECT`: raw readings as rows, or aggregates per `GROUP BY time` window
//! and tag, with InfluxDB 1.x's fill, order and limits. Windows that are the
//! stats route's buckets (1m, 5m, 15m, 1h, UTC or local days) over a
//! condition on `device_id` alone are answered by the stats use case, so from
//! rollups wherever it can (`query::stats`); anything else folds the readings.

mod fold;
mod plan;
mod rows;
use super::ast::{FieldExpr, Fill, Func, GroupTag, Select, Source};
use super::condition::{self, Known, TimeBounds};
use super::schema::{self, DEVICE_TAG, ROOM_TAG, TAGS};
use super::window::Windows;
use super::{unsupported, Context, Series, StatementError};
use crate::query::{self, Partition, StatsQuery};
use domain::model::{DeviceId, Quantity, Reading, TimeRange, Timestamp, Zone};
use fold::{fold, Acc, Folded, SeriesKey};
use plan::{plan, Column};
use rows::finish;
use storage::Store;

/// Most rows one statement may return before `LIMIT`: a raw year of a
/// sensor a minute is half of it.
pub const MAX_ROWS: usize = 1_000_000;
/// Most windows one series may span with a fill other than `none`.
pub const MAX_WINDOWS: usize = 100_000;

/// What InfluxDB refuses whatever the data: aggregates beside raw fields,
/// windows without an aggregate.
fn validate(select: &Select) -> Result<(), StatementError> {
    let transforms: Vec<bool> = select
        .fields
        .iter()
        .filter_map(|f| match &f.expr {
            FieldExpr::Transform(_, inner) => Some(matches!(**inner, FieldExpr::Call(..))),
            _ => None,
        })
        .collect();
    if !transforms.is_empty() {
        if transforms.len() < select.fields.len() {
            return unsupported("difference() beside other fields is not supported");
        }
        let of_aggregates = transforms.iter().filter(|a| **a).count();
        if of_aggregates > 0 && of_aggregates < transforms.len() {
            return unsupported("mixing aggregate and non-aggregate queries is not supported");
        }
        return match (of_aggregates > 0, select.every.is_some()) {
            (true, false) => {
                unsupported("difference() of an aggregate requires a GROUP BY interval")
            }
            (false, true) => {
                unsupported("aggregate function required inside the call to difference()")
            }
            _ => Ok(()),
        };
    }
    let calls = select
        .fields
        .iter()
        .filter(|f| matches!(f.expr, FieldExpr::Call(..)))
        .count();
    if calls > 0 && calls < select.fields.len() {
        return unsupported("mixing aggregate and non-aggregate queries is not supported");
    }
    if calls == 0 && select.every.is_some() {
        return unsupported("GROUP BY requires at least one aggregate function");
    }
    Ok(())
}

pub(super) async fn select<S: Store>(
    cx: &Context<'_, S>,
    select: &Select,
) -> Result<Vec<Series>, StatementError> {
    validate(select)?;
    let mut bounds = TimeBounds::default();
    let condition = match select.condition.clone() {
        Some(c) => condition::split_time(c, cx.now, &mut bounds)?,
        None => None,
    };
    if let Some(c) = &condition {
        condition::check(c)?;
    }
    let windows = match select.every {
        Some((every, offset)) => {
            if every % 1_000_000 != 0 || offset % 1_000_000 != 0 {
                return unsupported("GROUP BY time() intervals are whole milliseconds here");
            }
            if bounds.from.is_none() {
                return unsupported(
                    "aggregate functions with GROUP BY time require a WHERE time clause with a lower limit",
                );
            }
            Some(Windows {
                every: every / 1_000_000,
                offset: offset / 1_000_000,
                tz: match &select.tz {
                    // The parser checked the name against the same database.
                    Some(name) => match Zone::named(name) {
                        Some(zone) => Some(zone),
                        None => return unsupported(format!("unable to find time zone {name}")),
                    },
                    None => None,
                },
            })
        }
        None => None,
    };
    let from = bounds.from.unwrap_or(0).max(Timestamp::MIN.millis());
    let default_to = if windows.is_some() {
        cx.now.millis() + 1
    } else {
        Timestamp::MAX.millis()
    };
    let to = bounds.to.unwrap_or(default_to).min(Timestamp::MAX.millis());
    let range = match (Timestamp::from_millis(from), Timestamp::from_millis(to)) {
        (Ok(f), Ok(t)) if f < t => TimeRange::new(f, t).expect("from < to"),
        _ => return Ok(Vec::new()),
    };
    let snapshot = cx.registry.everything(cx.store).await?;
    let measurements: Vec<&str> = schema::measurements(&snapshot)
        .into_iter()
        .filter(|m| select.from.iter().any(|s: &Source| s.matches(m)))
        .collect();
    let mut out = Vec::new();
    for measurement in measurements {
        // `GROUP BY *` is every tag key the measurement has.
        let mut grouped: Vec<String> = Vec::new();
        for g in &select.group_tags {
            match g {
                GroupTag::All => grouped.extend(
                    schema::tags(&snapshot, measurement)
                        .into_iter()
                        .map(String::from),
                ),
                GroupTag::Name(n) => grouped.push(n.clone()),
            }
        }
        grouped.sort();
        grouped.dedup();
        let Some(plan) = plan(select, measurement, &snapshot, &grouped)? else {
            continue;
        };
        if let Some(w) = &windows {
            let spans = (range.to().millis() - w.start_of(range.from().millis())) / w.every;
            if select.fill != Fill::None && spans as usize > MAX_WINDOWS {
                return unsupported(format!(
                    "GROUP BY time() gives {spans} windows, more than {MAX_WINDOWS}: narrow the time range or widen the interval"
                ));
            }
        }
        let devices: Vec<DeviceId> = snapshot
            .devices
            .values()
            .filter(|d| {
                plan.columns.iter().any(|c| match c {
                    Column::Field(q) | Column::Aggregate(_, Some(q)) => d.quantities.contains(q),
                    _ => false,
                })
            })
            .filter(|d| {
                condition.as_ref().is_none_or(|c| {
                    condition::eval(c, measurement, Known::Device(d.device_id.as_str()))
                        != Some(false)
                })
            })
            .map(|d| d.device_id.clone())
            .collect();
        // What the stats use case (rollups) can answer: per device, over a
        // condition on `device_id`; or, for temperature and humidity (which
        // rooms have rollups of), per room, over a condition on `room`.
        let tallies = plan.aggregate
            && plan.columns.iter().all(|c| match c {
                Column::Aggregate(f, _) => f.from_tallies(),
                _ => false,
            });
        let over_devices = tallies
            && condition
                .as_ref()
                .is_none_or(|c| condition::only_tag(c, measurement, DEVICE_TAG))
            && grouped.iter().all(|g| g == DEVICE_TAG);
        let over_rooms = tallies
            && !over_devices
            && plan.columns.iter().all(|c| {
                matches!(
                    c,
                    Column::Aggregate(_, Some(Quantity::Temperature | Quantity::Humidity))
                )
            })
            && condition
                .as_ref()
                .is_none_or(|c| condition::only_tag(c, measurement, ROOM_TAG))
            && grouped.iter().all(|g| g == ROOM_TAG);
        let partitions: Vec<(Partition<'_>, &str)> = if over_devices {
            devices
                .iter()
                .map(|d| (Partition::Device(d), d.as_str()))
                .collect()
        } else if over_rooms {
            snapshot
                .rooms
                .keys()
                .filter(|r| {
                    condition.as_ref().is_none_or(|c| {
                        condition::eval(c, measurement, Known::Tags("", r.as_str())) == Some(true)
                    })
                })
                .map(|r| (Partition::Room(r), r.as_str()))
                .collect()
        } else {
            Vec::new()
        };
        let stats_windows = windows
            .filter(|_| over_devices || over_rooms)
            .and_then(|w| w.as_bucketing(range.from().millis(), range.to().millis()));
        let folded = match stats_windows {
            Some(bucketing) => {
                let mut folded = Folded::default();
                for (partition, tag) in &partitions {
                    let q = StatsQuery { range, bucketing };
                    let answer = Box::pin(query::stats(cx.store, *partition, &q)).await?;
                    let key = series_key(&grouped, |_| tag);
                    let series = folded.windows.entry(key).or_default();
                    for bucket in &answer.buckets {
                        let at = bucket.start.millis();
                        let accs = series
                            .entry(at)
                            .or_insert_with(|| vec![None; plan.columns.len()]);
                        for (acc, column) in accs.iter_mut().zip(&plan.columns) {
                            if let Column::Aggregate(_, Some(q)) = column {
                                if let Some(s) = bucket.fields.get(q.name()) {
                                    Acc::merge_stats(acc, at, s);
                                }
                            }
                        }
                    }
                }
                folded
            }
            None => {
                let mut folded = Folded::default();
                let keep_values = plan
                    .columns
                    .iter()
                    .any(|c| matches!(c, Column::Aggregate(Func::Median, _)));
                for device in &devices {
                    let mut too_many = false;
                    Box::pin(query::each_reading(
                        cx.store,
                        &Partition::Device(device),
                        range,
                        |r| {
                            if too_many {
                                return;
                            }
                            let admitted = condition.as_ref().is_none_or(|c| {
                                condition::eval(c, measurement, Known::Reading(r)) == Some(true)
                            });
                            if admitted {
                                fold(
                                    &mut folded,
                                    &plan,
                                    &grouped,
                                    windows.as_ref(),
                                    range.from().millis(),
                                    r,
                                    keep_values,
                                );
                                too_many = folded.row_count > MAX_ROWS;
                            }
                        },
                    ))
                    .await?;
                    if too_many {
                        return unsupported(format!(
                            "more than {MAX_ROWS} rows: add a LIMIT, or aggregate with GROUP BY time()"
                        ));
                    }
                }
                folded
            }
        };
        out.extend(finish(
            select,
            measurement,
            &plan,
            &grouped,
            windows.as_ref(),
            range,
            folded,
        ));
    }
    // SLIMIT and SOFFSET count series over the whole statement.
    let series = out
        .into_iter()
        .skip(select.soffset)
        .take(select.slimit.filter(|l| *l > 0).unwrap_or(usize::MAX))
        .collect();
    Ok(series)
}

/// A series' key: the value of each grouped tag ("" for a tag no reading has).
fn series_key<'r>(grouped: &[String], tag: impl Fn(&str) -> &'r str) -> SeriesKey {
    grouped
        .iter()
        .map(|g| {
            if TAGS.contains(&g.as_str()) {
                tag(g).to_string()
            } else {
                String::new()
            }
        })
        .collect()
}

/// A reading's value of a grouped tag.
fn group_value<'r>(g: &str, r: &'r Reading) -> &'r str {
    if TAGS.contains(&g) {
        schema::tag_value(g, r)
    } else {
        ""
    }
}
