//! What a SELECT reads and computes, from its fields: the columns of its
//! answer and the quantities behind them.

use super::super::ast::{Field, FieldExpr, Func, Select, Transform};
use super::super::schema::{self, Var};
use super::super::{unsupported, StatementError};
use domain::model::Quantity;
use domain::registry::RegistrySnapshot;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Column {
    Field(Quantity),
    Tag(&'static str),
    /// A field or tag the measurement does not have.
    Nothing,
    Aggregate(Func, Option<Quantity>),
}

pub(super) struct Plan {
    pub(super) names: Vec<String>,
    pub(super) columns: Vec<Column>,
    /// A column's `difference()`, applied to its rows in time order.
    pub(super) transforms: Vec<Option<Transform>>,
    pub(super) aggregate: bool,
}

/// The columns of a statement in one measurement; `None` when it has none of the fields.
pub(super) fn plan(
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
