//! Readings or rollups folded into each series' windows.

use super::super::ast::Func;
use super::super::schema::{self};
use super::super::window::Windows;
use super::super::Cell;
use super::plan::Column;
use super::plan::Plan;
use super::{group_value, series_key};
use domain::aggregate::FieldStats;
use domain::model::Reading;
use std::collections::BTreeMap;

/// A column's fold over one window: the bucket statistics the stats route
/// keeps (`FieldStats`), and what the selectors and the median need besides.
#[derive(Debug, Clone)]
pub(super) struct Acc {
    pub(super) stats: FieldStats,
    /// When the minimum and the maximum were (the earliest of equal ones).
    pub(super) min_at: i64,
    pub(super) max_at: i64,
    pub(super) first: (i64, f64),
    pub(super) last: (i64, f64),
    /// Every value, for the median only.
    pub(super) values: Vec<f64>,
}

impl Acc {
    pub(super) fn new(t: i64, v: f64, keep: bool) -> Self {
        Self {
            stats: FieldStats::new(v),
            min_at: t,
            max_at: t,
            first: (t, v),
            last: (t, v),
            values: if keep { vec![v] } else { Vec::new() },
        }
    }

    pub(super) fn add(&mut self, t: i64, v: f64, keep: bool) {
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
    pub(super) fn merge_stats(acc: &mut Option<Acc>, at: i64, s: &FieldStats) {
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

    pub(super) fn cell(&mut self, func: Func) -> Cell {
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
    pub(super) fn selected_at(&self, func: Func) -> Option<i64> {
        match func {
            Func::Min => Some(self.min_at),
            Func::Max => Some(self.max_at),
            Func::First => Some(self.first.0),
            Func::Last => Some(self.last.0),
            _ => None,
        }
    }
}

pub(super) type SeriesKey = Vec<String>;

/// What the readings of one measurement fold into.
#[derive(Default)]
pub(super) struct Folded {
    pub(super) rows: BTreeMap<SeriesKey, Vec<(i64, Vec<Cell>)>>,
    pub(super) windows: BTreeMap<SeriesKey, BTreeMap<i64, Vec<Option<Acc>>>>,
    pub(super) row_count: usize,
    /// The last reading's series: readings come device by device, so a key
    /// is allocated when the series changes, not for every reading.
    pub(super) last_key: SeriesKey,
}

impl Folded {
    /// Makes `last_key` the series of `r`.
    pub(super) fn key_of(&mut self, grouped: &[String], r: &Reading) {
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

pub(super) fn fold(
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
