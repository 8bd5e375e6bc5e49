//! InfluxQL, so that Grafana's InfluxDB data source (and any InfluxDB 1.x
//! client) reads us as an InfluxDB: the statements it sends (`parse`), the
//! schema it sees (`schema`: one measurement per reading family, the catalogue's
//! quantities as fields, `device_id` and `room` as tags), meta queries answered
//! from the registry (`meta`) and `SELECT` answered from readings, or from the
//! stats use case (rollups) where the windows are its buckets (`select`).
//! docs/influxql.md is the user's view.

mod condition;
mod meta;
mod schema;
mod select;
pub mod window;

use crate::registry::RegistryCache;
use ast::Statement;
use domain::model::Timestamp;
pub use influxql_parser::{ast, parse};
pub use influxql_parser::{parse_query, ParseError, MAX_STATEMENTS};
use std::collections::BTreeMap;
use storage::{Store, StoreError};

/// One value of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    /// Epoch milliseconds; the edge writes it as RFC 3339 or in `epoch` units.
    Time(i64),
    Float(f64),
    Int(i64),
    Str(String),
    Bool(bool),
}

/// A series of an answer: InfluxDB 1.x's `name`, `tags`, `columns`, `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// `None` where the statement groups by no tag (the key is then left out).
    pub tags: Option<BTreeMap<String, String>>,
    pub columns: Vec<String>,
    pub values: Vec<Vec<Cell>>,
}

/// The answer to one statement: series, or an error that InfluxDB would
/// report inside the result (the other statements still answer).
#[derive(Debug, Clone, PartialEq)]
pub struct StatementResult {
    pub series: Vec<Series>,
    pub error: Option<String>,
}

/// Why a statement could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// Outside the subset, or a query that cannot be answered (InfluxDB's message).
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn unsupported<T>(message: impl Into<String>) -> Result<T, StatementError> {
    Err(StatementError::Unsupported(message.into()))
}

/// What a statement runs against.
pub struct Context<'a, S> {
    pub store: &'a S,
    pub registry: &'a RegistryCache,
    pub now: Timestamp,
    /// The `db` parameter, shown by `SHOW DATABASES` beside our own name.
    pub db: Option<&'a str>,
}

/// Runs one statement. A store failure is an error of the whole request
/// (the edge answers 503); anything else is this statement's error.
pub async fn run<S: Store>(
    cx: &Context<'_, S>,
    statement: &Statement,
) -> Result<StatementResult, StoreError> {
    let answer = match statement {
        Statement::Select(select) => select::select(cx, select).await,
        other => meta::meta(cx, other).await,
    };
    match answer {
        Ok(series) => Ok(StatementResult {
            series,
            error: None,
        }),
        Err(StatementError::Unsupported(message)) => Ok(StatementResult {
            series: Vec::new(),
            error: Some(message),
        }),
        Err(StatementError::Store(e)) => Err(e),
    }
}
