//! `SELECT`: raw readings as rows, or aggregates per `GROUP BY time` window
//! and tag, with InfluxDB 1.x's fill, order and limits. Windows that are the
//! stats route's buckets (1m, 5m, 15m, 1h, UTC or local days) over a
//! condition on `device_id` alone are answered by the stats use case, so from
//! rollups wherever it can (`query::stats`); anything else folds the readings.

use super::ast::{Field, FieldExpr, Fill, Func, GroupTag, Select, Source, Transform};
use super::condition::{self, Known, TimeBounds};
use super::schema::{self, Var, DEVICE_TAG, ROOM_TAG, TAGS};
use super::window::Windows;
use super::{unsupported, Cell, Context, Series, StatementError};
use crate::query::{self, Partition, StatsQuery};
use domain::aggregate::FieldStats;
use domain::model::{DeviceId, Quantity, Reading, TimeRange, Timestamp, Zone};
use domain::registry::RegistrySnapshot;
use std::collections::BTreeMap;
use storage::Store;

/// Most rows one statement may return before `LIMIT`: a raw year of a
/// sensor a minute is half of it.
pub const MAX_ROWS: usize = 1_000_000;
/// Most windows one series may span with a fill other than `none`.
pub const MAX_WINDOWS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Field(Quantity),
    Tag(&'static str),
    /// A field or tag the measurement does not have.
    Nothing,
    Aggregate(Func, Option<Quantity>),
}

struct Plan {
    names: Vec<String>,
    columns: Vec<Column>,
    /// A column's `difference()`, applied to its rows in time order.
    transforms: Vec<Option<Transform>>,
    aggregate: bool,
}

/// The columns of a statement in one measurement; `None` when it has none of the fields.
fn plan(
    select: &Select,
    measurement: &str,
    snapshot: &RegistrySnapshot,
    grouped: &[String],
) -> Result<Option<Plan>, StatementError> {
    let mut named: Vec<(String, Column)> = Vec::new();
    let mut transforms: Vec<Option<Transform>> = Vec::new();
    for Field { expr, alias } in &select.fields {
        // A difference is computed over the column it wraps, and named after itself.
        let (expr, alias, transform) = match expr {
            FieldExpr::Transform(t, inner) => (
                &**inner,
                Some(alias.clone().unwrap_or_else(|| t.name().to_string())),
                Some(*t),
            ),
            e => (e, alias.clone(), None),
        };
        match expr {
            FieldExpr::Wildcard => {
                let mut all: Vec<(String, Column)> = schema::fields(snapshot, measurement)
                    .into_iter()
                    .map(|q| (q.name().to_string(), Column::Field(q)))
                    .collect();
                all.extend(
                    schema::tags(snapshot, measurement)
                        .into_iter()
                        .filter(|t| !grouped.iter().any(|g| g == t))
                        .map(|t| (t.to_string(), Column::Tag(t))),
                );
                all.sort_by(|a, b| a.0.cmp(&b.0));
                named.extend(all);
            }
            FieldExpr::Ref(v) => {
                let column = match schema::resolve(v, measurement) {
                    Var::Time => continue,
                    Var::Tag(t) => Column::Tag(t),
                    Var::Field(q) => Column::Field(q),
                    Var::NoTag | Var::NoField => Column::Nothing,
                };
                named.push((alias.clone().unwrap_or_else(|| v.name.clone()), column));
            }
            FieldExpr::Call(func, Some(v)) => {
                let q = match schema::resolve(v, measurement) {
                    Var::Field(q) => Some(q),
                    Var::Tag(_) | Var::NoTag | Var::Time => {
                        return unsupported(format!(
                            "{}() of {}: functions take a field",
                            func.name(),
                            v.name
                        ))
                    }
                    Var::NoField => None,
                };
                let name = alias.clone().unwrap_or_else(|| func.name().to_string());
                named.push((name, Column::Aggregate(*func, q)));
            }
            FieldExpr::Call(func, None) => {
                for q in schema::fields(snapshot, measurement) {
                    let prefix = alias.as_deref().unwrap_or(func.name());
                    named.push((
                        format!("{prefix}_{}", q.name()),
                        Column::Aggregate(*func, Some(q)),
                    ));
                }
            }
            FieldExpr::Transform(..) => {
                return unsupported("nested functions are not supported");
            }
        }
        transforms.resize(named.len(), transform);
    }
    // `validate` made the fields all aggregates or none.
    let aggregate = named
        .iter()
        .any(|(_, c)| matches!(c, Column::Aggregate(..)));
    if !named.is_empty() && named.iter().all(|(_, c)| matches!(c, Column::Tag(_))) {
        return unsupported("statement must have at least one field in select clause");
    }
    // None of the fields is this measurement's: it has no series.
    if !named
        .iter()
        .any(|(_, c)| matches!(c, Column::Field(_) | Column::Aggregate(_, Some(_))))
    {
        return Ok(None);
    }
    // Repeated names get `_1`, `_2`, as InfluxDB names them.
    let mut names: Vec<String> = Vec::new();
    for (name, _) in &named {
        let mut unique = name.clone();
        let mut n = 0;
        while names.contains(&unique) {
            n += 1;
            unique = format!("{name}_{n}");
        }
        names.push(unique);
    }
    Ok(Some(Plan {
        names,
        columns: named.into_iter().map(|(_, c)| c).collect(),
        transforms,
        aggregate,
    }))
}

/// A column's fold over one window: the bucket statistics the stats route
/// keeps (`FieldStats`), and what the selectors and the median need besides.
#[derive(Debug, Clone)]
struct Acc {
    stats: FieldStats,
    /// When the minimum and the maximum were (the earliest of equal ones).
    min_at: i64,
    max_at: i64,
    first: (i64, f64),
    last: (i64, f64),
    /// Every value, for the median only.
    values: Vec<f64>,
}

impl Acc {
    fn new(t: i64, v: f64, keep: bool) -> Self {
        Self {
            stats: FieldStats::new(v),
            min_at: t,
            max_at: t,
            first: (t, v),
            last: (t, v),
            values: if keep { vec![v] } else { Vec::new() },
        }
    }

    fn add(&mut self, t: i64, v: f64, keep: bool) {
        // Ties go to the earliest point, as InfluxDB's selectors do.
        if v < self.stats.min || (v == self.stats.min && t < self.min_at) {
            self.min_at = t;
        }
        if v > self.stats.max || (v == self.stats.max && t < self.max_at) {
            self.max_at = t;
        }
        self.stats.add(v);
        if t < self.first.0 {
            self.first = (t, v);
        }
        if t >= self.last.0 {
            self.last = (t, v);
        }
        if keep {
            self.values.push(v);
        }
    }

    /// A bucket of the stats use case, starting at `at` (mean, sum, count,
    /// min, max and spread only: `Func::from_tallies`).
    fn merge_stats(acc: &mut Option<Acc>, at: i64, s: &FieldStats) {
        match acc {
            Some(a) => a.stats.merge(s),
            None => {
                *acc = Some(Acc {
                    stats: *s,
                    min_at: at,
                    max_at: at,
                    first: (at, f64::NAN),
                    last: (at, f64::NAN),
                    values: Vec::new(),
                })
            }
        }
    }

    fn cell(&mut self, func: Func) -> Cell {
        match func {
            Func::Mean => Cell::Float(self.stats.mean()),
            Func::Sum => Cell::Float(self.stats.sum),
            Func::Count => Cell::Int(self.stats.count as i64),
            Func::Min => Cell::Float(self.stats.min),
            Func::Max => Cell::Float(self.stats.max),
            Func::Spread => Cell::Float(self.stats.max - self.stats.min),
            Func::First => Cell::Float(self.first.1),
            Func::Last => Cell::Float(self.last.1),
            Func::Median => {
                let v = &mut self.values;
                v.sort_by(f64::total_cmp);
                let n = v.len();
                Cell::Float(if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                })
            }
        }
    }

    /// The time of the point a selector chose.
    fn selected_at(&self, func: Func) -> Option<i64> {
        match func {
            Func::Min => Some(self.min_at),
            Func::Max => Some(self.max_at),
            Func::First => Some(self.first.0),
            Func::Last => Some(self.last.0),
            _ => None,
        }
    }
}

type SeriesKey = Vec<String>;

/// What the readings of one measurement fold into.
#[derive(Default)]
struct Folded {
    rows: BTreeMap<SeriesKey, Vec<(i64, Vec<Cell>)>>,
    windows: BTreeMap<SeriesKey, BTreeMap<i64, Vec<Option<Acc>>>>,
    row_count: usize,
    /// The last reading's series: readings come device by device, so a key
    /// is allocated when the series changes, not for every reading.
    last_key: SeriesKey,
}

impl Folded {
    /// Makes `last_key` the series of `r`.
    fn key_of(&mut self, grouped: &[String], r: &Reading) {
        let same = self.last_key.len() == grouped.len()
            && grouped
                .iter()
                .zip(&self.last_key)
                .all(|(g, k)| k == group_value(g, r));
        if !same {
            self.last_key = series_key(grouped, |g| group_value(g, r));
        }
    }
}

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

fn fold(
    folded: &mut Folded,
    plan: &Plan,
    grouped: &[String],
    windows: Option<&Windows>,
    from: i64,
    r: &Reading,
    keep_values: bool,
) {
    let t = r.timestamp.millis();
    if !plan.aggregate {
        let cells: Vec<Cell> = plan
            .columns
            .iter()
            .map(|c| match c {
                Column::Field(q) => r.get(*q).map_or(Cell::Null, Cell::Float),
                Column::Tag(tag) => Cell::Str(schema::tag_value(tag, r).to_string()),
                _ => Cell::Null,
            })
            .collect();
        let any_field = plan
            .columns
            .iter()
            .zip(&cells)
            .any(|(c, v)| matches!(c, Column::Field(_)) && *v != Cell::Null);
        if any_field {
            folded.key_of(grouped, r);
            match folded.rows.get_mut(&folded.last_key) {
                Some(rows) => rows.push((t, cells)),
                None => {
                    folded
                        .rows
                        .insert(folded.last_key.clone(), vec![(t, cells)]);
                }
            }
            folded.row_count += 1;
        }
        return;
    }
    let at = windows.map_or(from, |w| w.start_of(t));
    let mut present = plan.columns.iter().filter_map(|c| match c {
        Column::Aggregate(_, Some(q)) => r.get(*q),
        _ => None,
    });
    if present.next().is_none() {
        return;
    }
    folded.key_of(grouped, r);
    if !folded.windows.contains_key(&folded.last_key) {
        folded
            .windows
            .insert(folded.last_key.clone(), BTreeMap::new());
    }
    let series = folded
        .windows
        .get_mut(&folded.last_key)
        .expect("inserted above");
    let accs = series.entry(at).or_insert_with(|| {
        folded.row_count += 1;
        vec![None; plan.columns.len()]
    });
    for (acc, column) in accs.iter_mut().zip(&plan.columns) {
        if let Column::Aggregate(func, Some(q)) = column {
            if let Some(v) = r.get(*q) {
                let keep = keep_values && *func == Func::Median;
                match acc {
                    Some(a) => a.add(t, v, keep),
                    None => *acc = Some(Acc::new(t, v, keep)),
                }
            }
        }
    }
}

/// Rows of each series: windows enumerated and filled, order, LIMIT and OFFSET.
fn finish(
    select: &Select,
    measurement: &str,
    plan: &Plan,
    grouped: &[String],
    windows: Option<&Windows>,
    range: TimeRange,
    folded: Folded,
) -> Vec<Series> {
    let mut columns = vec!["time".to_string()];
    columns.extend(plan.names.iter().cloned());
    let tags_of = |key: &SeriesKey| {
        (!grouped.is_empty()).then(|| grouped.iter().cloned().zip(key.iter().cloned()).collect())
    };
    let mut out = Vec::new();
    if !plan.aggregate {
        for (key, mut rows) in folded.rows {
            // Devices were read one after another: merge them into time order.
            rows.sort_by_key(|(t, _)| *t);
            let values = rows
                .into_iter()
                .map(|(t, cells)| {
                    let mut row = vec![Cell::Time(t)];
                    row.extend(cells);
                    row
                })
                .collect();
            out.push(Series {
                name: measurement.to_string(),
                tags: tags_of(&key),
                columns: columns.clone(),
                values: order_and_limit(select, differences(values, &plan.transforms)),
            });
        }
        return out;
    }
    let fill = select.fill;
    let funcs: Vec<Option<Func>> = plan
        .columns
        .iter()
        .map(|c| match c {
            Column::Aggregate(f, _) => Some(*f),
            _ => None,
        })
        .collect();
    for (key, mut accs_by_window) in folded.windows {
        let starts: Vec<i64> = match (windows, fill) {
            (Some(w), f) if f != Fill::None => {
                let mut starts = Vec::new();
                let mut s = w.start_of(range.from().millis());
                while s < range.to().millis() {
                    starts.push(s);
                    s = w.next(s);
                }
                starts
            }
            _ => accs_by_window.keys().copied().collect(),
        };
        let mut values: Vec<Vec<Cell>> = Vec::with_capacity(starts.len());
        for start in starts {
            let mut time = start;
            let cells: Vec<Cell> = match accs_by_window.get_mut(&start) {
                Some(accs) => accs
                    .iter_mut()
                    .zip(&funcs)
                    .map(|(acc, f)| match (acc, f) {
                        (Some(a), Some(f)) => {
                            if windows.is_none() && funcs.len() == 1 {
                                if let Some(at) = a.selected_at(*f) {
                                    time = at;
                                }
                            }
                            a.cell(*f)
                        }
                        _ => Cell::Null,
                    })
                    .collect(),
                None => vec![Cell::Null; funcs.len()],
            };
            let mut row = vec![Cell::Time(time)];
            row.extend(cells);
            values.push(row);
        }
        if fill == Fill::None {
            // A window with points of the series but none of the selected
            // fields (a meter's hour without its sold counter) has no row,
            // as in InfluxDB, where each field is its own series.
            values.retain(|row| row[1..].iter().any(|c| *c != Cell::Null));
        }
        fill_rows(&mut values, fill, &funcs);
        let values = differences(values, &plan.transforms);
        if values.is_empty() {
            continue;
        }
        out.push(Series {
            name: measurement.to_string(),
            tags: tags_of(&key),
            columns: columns.clone(),
            values: order_and_limit(select, values),
        });
    }
    out
}

fn fill_rows(rows: &mut [Vec<Cell>], fill: Fill, funcs: &[Option<Func>]) {
    for col in 1..=funcs.len() {
        match fill {
            // count() is 0 where a window has none of its field, as InfluxDB
            // reports it; the other fills replace that 0.
            Fill::Null => {
                if funcs[col - 1] == Some(Func::Count) {
                    for row in rows.iter_mut() {
                        if row[col] == Cell::Null {
                            row[col] = Cell::Int(0);
                        }
                    }
                }
            }
            Fill::None => {}
            Fill::Value(v) => {
                for row in rows.iter_mut() {
                    if row[col] == Cell::Null {
                        row[col] = if funcs[col - 1] == Some(Func::Count) && v.fract() == 0.0 {
                            Cell::Int(v as i64)
                        } else {
                            Cell::Float(v)
                        };
                    }
                }
            }
            Fill::Previous => {
                let mut last = Cell::Null;
                for row in rows.iter_mut() {
                    if row[col] == Cell::Null {
                        row[col] = last.clone();
                    } else {
                        last = row[col].clone();
                    }
                }
            }
            Fill::Linear => {
                let known: Vec<(usize, i64, f64)> = rows
                    .iter()
                    .enumerate()
                    .filter_map(|(i, row)| match (&row[0], &row[col]) {
                        (Cell::Time(t), Cell::Float(v)) => Some((i, *t, *v)),
                        (Cell::Time(t), Cell::Int(v)) => Some((i, *t, *v as f64)),
                        _ => None,
                    })
                    .collect();
                for pair in known.windows(2) {
                    let ((i0, t0, v0), (i1, t1, v1)) = (pair[0], pair[1]);
                    for row in rows.iter_mut().take(i1).skip(i0 + 1) {
                        if let Cell::Time(t) = row[0] {
                            let v = v0 + (v1 - v0) * (t - t0) as f64 / (t1 - t0) as f64;
                            row[col] = if funcs[col - 1] == Some(Func::Count) {
                                Cell::Int(v as i64)
                            } else {
                                Cell::Float(v)
                            };
                        }
                    }
                }
            }
        }
    }
}

/// `difference()` and `non_negative_difference()` of the columns that have
/// one, over rows in time order, as InfluxDB computes them: each value less
/// the previous value of its column (nulls skipped, a second point at the
/// same time ignored), at the later time; a row is kept where a column has a
/// difference (a negative one is dropped by `non_negative_difference`).
fn differences(rows: Vec<Vec<Cell>>, transforms: &[Option<Transform>]) -> Vec<Vec<Cell>> {
    if transforms.iter().all(Option::is_none) {
        return rows;
    }
    let mut previous: Vec<Option<(i64, Cell)>> = vec![None; transforms.len()];
    let mut out = Vec::new();
    for row in rows {
        let Cell::Time(t) = row[0] else { continue };
        let mut next = vec![row[0].clone()];
        let mut any = false;
        for (i, transform) in transforms.iter().enumerate() {
            let cell = &row[i + 1];
            let Some(transform) = transform else {
                next.push(cell.clone());
                continue;
            };
            let number = matches!(cell, Cell::Float(_) | Cell::Int(_));
            if !number || previous[i].as_ref().is_some_and(|(at, _)| *at == t) {
                next.push(Cell::Null);
                continue;
            }
            let diff = match (&previous[i], cell) {
                (Some((_, Cell::Int(p))), Cell::Int(v)) => Some(Cell::Int(v - p)),
                (Some((_, p)), v) => Some(Cell::Float(as_f64(v) - as_f64(p))),
                (None, _) => None,
            };
            previous[i] = Some((t, cell.clone()));
            let keep = diff.filter(|d| *transform == Transform::Difference || as_f64(d) >= 0.0);
            any |= keep.is_some();
            next.push(keep.unwrap_or(Cell::Null));
        }
        if any {
            out.push(next);
        }
    }
    out
}

fn as_f64(c: &Cell) -> f64 {
    match c {
        Cell::Float(f) => *f,
        Cell::Int(i) => *i as f64,
        _ => f64::NAN,
    }
}

fn order_and_limit(select: &Select, mut values: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    if select.descending {
        values.reverse();
    }
    values
        .into_iter()
        .skip(select.offset)
        .take(select.limit.filter(|l| *l > 0).unwrap_or(usize::MAX))
        .collect()
}
