//! The statements of InfluxQL this server answers, as the parser builds them.
//! Time literals are already nanoseconds since the epoch (InfluxQL's unit);
//! the executor turns them into our milliseconds.

use regex_lite::Regex;

#[derive(Debug, Clone)]
pub enum Statement {
    ShowDatabases,
    ShowMeasurements {
        name: Option<NameMatch>,
        limit: Option<usize>,
        offset: usize,
    },
    ShowTagKeys {
        from: Vec<Source>,
        limit: Option<usize>,
        offset: usize,
    },
    ShowTagValues {
        from: Vec<Source>,
        key: NameMatch,
        condition: Option<Expr>,
        limit: Option<usize>,
        offset: usize,
    },
    ShowFieldKeys {
        from: Vec<Source>,
        limit: Option<usize>,
        offset: usize,
    },
    ShowRetentionPolicies,
    /// `CREATE DATABASE` / `CREATE RETENTION POLICY`: one store, nothing to create.
    Create,
    Select(Box<Select>),
}

/// How a name (a measurement, a tag key) is matched.
#[derive(Debug, Clone)]
pub enum NameMatch {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    Regex(Regex),
    NotRegex(Regex),
}

impl NameMatch {
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameMatch::Eq(n) => n == name,
            NameMatch::NotEq(n) => n != name,
            NameMatch::In(ns) => ns.iter().any(|n| n == name),
            NameMatch::Regex(r) => r.is_match(name),
            NameMatch::NotRegex(r) => !r.is_match(name),
        }
    }
}

/// A measurement in `FROM`: a name (its `"db"."rp".` prefix dropped) or a regex.
#[derive(Debug, Clone)]
pub enum Source {
    Name(String),
    Regex(Regex),
}

impl Source {
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Source::Name(n) => n == name,
            Source::Regex(r) => r.is_match(name),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Select {
    pub fields: Vec<Field>,
    pub from: Vec<Source>,
    pub condition: Option<Expr>,
    /// `GROUP BY time(every, offset)`, nanoseconds.
    pub every: Option<(i64, i64)>,
    pub group_tags: Vec<GroupTag>,
    pub fill: Fill,
    pub descending: bool,
    pub limit: Option<usize>,
    pub offset: usize,
    pub slimit: Option<usize>,
    pub soffset: usize,
    /// `tz('...')`: an IANA zone name the database has, as written.
    pub tz: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GroupTag {
    Name(String),
    /// `GROUP BY *`: every tag.
    All,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub expr: FieldExpr,
    pub alias: Option<String>,
}

#[derive(Debug, Clone)]
pub enum FieldExpr {
    /// `*`
    Wildcard,
    Ref(VarRef),
    /// `mean(x)`, `count(*)`; the argument `None` is `*`.
    Call(Func, Option<VarRef>),
    /// `difference(x)`, `non_negative_difference(max(x))`: of a field
    /// (`Ref`) or of one aggregate (`Call`).
    Transform(Transform, Box<FieldExpr>),
}

/// Differences between successive points of a series, in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Difference,
    /// Negative differences (a counter reset) are left out.
    NonNegativeDifference,
}

impl Transform {
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "difference" => Some(Transform::Difference),
            "non_negative_difference" => Some(Transform::NonNegativeDifference),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Transform::Difference => "difference",
            Transform::NonNegativeDifference => "non_negative_difference",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Mean,
    Min,
    Max,
    Sum,
    Count,
    First,
    Last,
    Spread,
    Median,
}

impl Func {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "mean" => Func::Mean,
            "min" => Func::Min,
            "max" => Func::Max,
            "sum" => Func::Sum,
            "count" => Func::Count,
            "first" => Func::First,
            "last" => Func::Last,
            "spread" => Func::Spread,
            "median" => Func::Median,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Func::Mean => "mean",
            Func::Min => "min",
            Func::Max => "max",
            Func::Sum => "sum",
            Func::Count => "count",
            Func::First => "first",
            Func::Last => "last",
            Func::Spread => "spread",
            Func::Median => "median",
        }
    }

    /// A selector returns one of the points (and, alone, its time).
    pub fn is_selector(self) -> bool {
        matches!(self, Func::Min | Func::Max | Func::First | Func::Last)
    }

    /// Answerable from a bucket's count, sum, min and max (so from rollups).
    pub fn from_tallies(self) -> bool {
        matches!(
            self,
            Func::Mean | Func::Min | Func::Max | Func::Sum | Func::Count | Func::Spread
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cast {
    Tag,
    Field,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VarRef {
    pub name: String,
    pub cast: Option<Cast>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    Null,
    None,
    Previous,
    Linear,
    Value(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    And,
    Or,
    Eq,
    NotEq,
    Lt,
    Lte,
    Gt,
    Gte,
    Match,
    NotMatch,
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone)]
pub enum Expr {
    Binary(Box<Expr>, Op, Box<Expr>),
    Var(VarRef),
    Str(String),
    Number(f64),
    Integer(i64),
    /// A duration literal, nanoseconds.
    Duration(i64),
    Regex(Regex),
    Bool(bool),
    /// `now()`
    Now,
}
