//! Meta queries, answered from the registry: what Grafana's query editor
//! lists (databases, measurements, tag keys and values, field keys) and what
//! clients probe (retention policies).

use super::ast::{NameMatch, Source, Statement};
use super::condition::{self, Known};
use super::schema::{self, DEVICE_TAG, ROOM_TAG};
use super::{unsupported, Cell, Context, Series, StatementError};
use domain::model::DeviceId;
use domain::registry::RegistrySnapshot;
use std::collections::{BTreeMap, BTreeSet};
use storage::Store;

/// The database name we answer with; any name a client gives is the same data.
pub const DATABASE: &str = "ingester";

pub(super) async fn meta<S: Store>(
    cx: &Context<'_, S>,
    statement: &Statement,
) -> Result<Vec<Series>, StatementError> {
    let one = |name: &str, columns: &[&str], values: Vec<Vec<Cell>>| Series {
        name: name.into(),
        tags: None,
        columns: columns.iter().map(|c| c.to_string()).collect(),
        values,
    };
    let text = |s: &str| vec![Cell::Str(s.to_string())];
    Ok(match statement {
        Statement::Create => Vec::new(),
        Statement::ShowDatabases => {
            let mut names = BTreeSet::from([DATABASE]);
            names.extend(cx.db.filter(|d| !d.is_empty()));
            vec![one(
                "databases",
                &["name"],
                names.into_iter().map(text).collect(),
            )]
        }
        Statement::ShowRetentionPolicies => vec![one(
            "",
            &[
                "name",
                "duration",
                "shardGroupDuration",
                "replicaN",
                "default",
            ],
            vec![vec![
                Cell::Str("autogen".into()),
                Cell::Str("0s".into()),
                Cell::Str("168h0m0s".into()),
                Cell::Int(1),
                Cell::Bool(true),
            ]],
        )],
        Statement::ShowMeasurements {
            name,
            limit,
            offset,
        } => {
            let snapshot = cx.registry.everything(cx.store).await?;
            let names: Vec<Vec<Cell>> = schema::measurements(&snapshot)
                .into_iter()
                .filter(|m| name.as_ref().is_none_or(|n| n.matches(m)))
                .map(text)
                .collect();
            let names = page(names, *limit, *offset);
            if names.is_empty() {
                Vec::new()
            } else {
                vec![one("measurements", &["name"], names)]
            }
        }
        Statement::ShowTagKeys {
            from,
            limit,
            offset,
        } => {
            let snapshot = cx.registry.everything(cx.store).await?;
            per_measurement(&snapshot, from, |m| {
                let keys = schema::tags(&snapshot, m).into_iter().map(text).collect();
                Some((vec!["tagKey"], page(keys, *limit, *offset)))
            })
        }
        Statement::ShowFieldKeys {
            from,
            limit,
            offset,
        } => {
            let snapshot = cx.registry.everything(cx.store).await?;
            per_measurement(&snapshot, from, |m| {
                let keys = schema::fields(&snapshot, m)
                    .into_iter()
                    .map(|q| vec![Cell::Str(q.name().into()), Cell::Str("float".into())])
                    .collect();
                Some((vec!["fieldKey", "fieldType"], page(keys, *limit, *offset)))
            })
        }
        Statement::ShowTagValues {
            from,
            key,
            condition,
            limit,
            offset,
        } => {
            if let Some(c) = condition {
                if condition::needs_fields(c) {
                    return unsupported("SHOW TAG VALUES ... WHERE compares tags only");
                }
                condition::check(c)?;
            }
            let snapshot = cx.registry.everything(cx.store).await?;
            per_measurement(&snapshot, from, |m| {
                let values = tag_values(&snapshot, m, key, condition.as_ref());
                Some((vec!["key", "value"], page(values, *limit, *offset)))
            })
        }
        Statement::Select(_) => unreachable!("run() sends SELECT to select()"),
    })
}

fn page<T>(items: Vec<T>, limit: Option<usize>, offset: usize) -> Vec<T> {
    items
        .into_iter()
        .skip(offset)
        .take(limit.filter(|l| *l > 0).unwrap_or(usize::MAX))
        .collect()
}

/// One series per measurement of `from` (every measurement when empty).
fn per_measurement(
    snapshot: &RegistrySnapshot,
    from: &[Source],
    mut answer: impl FnMut(&str) -> Option<(Vec<&'static str>, Vec<Vec<Cell>>)>,
) -> Vec<Series> {
    schema::measurements(snapshot)
        .into_iter()
        .filter(|m| from.is_empty() || from.iter().any(|s| s.matches(m)))
        .filter_map(|m| {
            let (columns, values) = answer(m)?;
            (!values.is_empty()).then(|| Series {
                name: m.to_string(),
                tags: None,
                columns: columns.into_iter().map(String::from).collect(),
                values,
            })
        })
        .collect()
}

/// The (device, room) pairs of a measurement's devices: every room a device
/// has reported from, and "" for a device that has reported from none.
fn pairs<'a>(snapshot: &'a RegistrySnapshot, measurement: &str) -> Vec<(&'a str, &'a str)> {
    // Each device's rooms, gathered once: asking every room about every
    // device was rooms × devices, 142 s of a debug build at 100,000 devices.
    let mut reported_in: BTreeMap<&DeviceId, BTreeSet<&str>> = BTreeMap::new();
    for room in snapshot.rooms.values() {
        for device in &room.devices {
            reported_in
                .entry(device)
                .or_default()
                .insert(room.room_id.as_str());
        }
    }
    let mut out = Vec::new();
    for (id, device) in &snapshot.devices {
        if !device
            .quantities
            .iter()
            .any(|q| schema::measurement_of(*q) == measurement)
        {
            continue;
        }
        let mut rooms = reported_in.remove(id).unwrap_or_default();
        if let Some(room) = &device.room {
            rooms.insert(room.as_str());
        }
        if rooms.is_empty() {
            rooms.insert("");
        }
        out.extend(rooms.into_iter().map(|r| (id.as_str(), r)));
    }
    out
}

fn tag_values(
    snapshot: &RegistrySnapshot,
    measurement: &str,
    key: &NameMatch,
    condition: Option<&super::ast::Expr>,
) -> Vec<Vec<Cell>> {
    let mut found: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (device, room) in pairs(snapshot, measurement) {
        let admitted = condition.is_none_or(|c| {
            condition::eval(c, measurement, Known::Tags(device, room)) == Some(true)
        });
        if !admitted {
            continue;
        }
        if key.matches(DEVICE_TAG) {
            found.insert((DEVICE_TAG, device));
        }
        if key.matches(ROOM_TAG) && !room.is_empty() {
            found.insert((ROOM_TAG, room));
        }
    }
    found
        .into_iter()
        .map(|(k, v)| vec![Cell::Str(k.into()), Cell::Str(v.into())])
        .collect()
}
