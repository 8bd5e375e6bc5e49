//! InfluxQL, the subset Grafana's InfluxDB data source sends (docs/influxql.md),
//! parsed into statements: a crate of its own that depends on no other
//! crate of ours, as InfluxDB 3 keeps its parser. The use case that answers
//! the statements is `usecases::influxql`.
//!
//! - `ast`: the statements, expressions and conditions;
//! - `parse`: the text into them, with InfluxDB's error messages.

pub mod ast;
pub mod parse;

pub use parse::{parse_query, ParseError, MAX_STATEMENTS};
