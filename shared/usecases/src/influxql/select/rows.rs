//! A series' windows as rows of an answer: values, `fill()`, the
//! difference transforms, `ORDER BY` and `LIMIT`.

use super::super::ast::{Fill, Func, Select, Transform};
use super::super::window::Windows;
use super::super::{Cell, Series};
use super::fold::Folded;
use super::fold::SeriesKey;
use super::plan::Column;
use super::plan::Plan;
use domain::model::TimeRange;

/// Rows of each series: windows enumerated and filled, order, LIMIT and OFFSET.
pub(super) fn finish(
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

pub(super) fn fill_rows(rows: &mut [Vec<Cell>], fill: Fill, funcs: &[Option<Func>]) {
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
pub(super) fn differences(
    rows: Vec<Vec<Cell>>,
    transforms: &[Option<Transform>],
) -> Vec<Vec<Cell>> {
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

pub(super) fn as_f64(c: &Cell) -> f64 {
    match c {
        Cell::Float(f) => *f,
        Cell::Int(i) => *i as f64,
        _ => f64::NAN,
    }
}

pub(super) fn order_and_limit(select: &Select, mut values: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    if select.descending {
        values.reverse();
    }
    values
        .into_iter()
        .skip(select.offset)
        .take(select.limit.filter(|l| *l > 0).unwrap_or(usize::MAX))
        .collect()
}
