//! InfluxQL text → statements: a scanner and a recursive-descent parser for
//! the subset Grafana's InfluxDB data source writes (docs/influxql.md). An
//! error says what was found, what was expected and where, in InfluxDB's words
//! (`found X, expected Y at line 1, char N`).

use crate::ast::*;
use regex_lite::Regex;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

/// Every statement of a query (separated by `;`).
pub fn parse_query(text: &str) -> Result<Vec<Statement>, ParseError> {
    let mut p = Parser::new(text);
    let mut out = Vec::new();
    loop {
        while p.eat_symbol(";") {}
        if p.at_end() {
            break;
        }
        out.push(p.statement()?);
        if !p.at_end() && !p.eat_symbol(";") {
            return Err(p.unexpected("; or the end of the query"));
        }
    }
    if out.is_empty() {
        return Err(ParseError {
            message: "missing required parameter \"q\"".into(),
        });
    }
    Ok(out)
}

/// Most statements one request may hold; most rows or windows are bounded elsewhere.
pub const MAX_STATEMENTS: usize = 50;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword; `true` when it was double-quoted.
    Ident(String, bool),
    Str(String),
    Int(i64),
    Num(f64),
    /// A duration literal, nanoseconds.
    Dur(i64),
    Sym(&'static str),
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s, _) => s.clone(),
            Tok::Str(s) => format!("'{s}'"),
            Tok::Int(i) => i.to_string(),
            Tok::Num(n) => n.to_string(),
            Tok::Dur(d) => format!("{d}ns"),
            Tok::Sym(s) => (*s).to_string(),
            Tok::End => "EOF".into(),
        }
    }
}

const SYMBOLS: [&str; 20] = [
    "::", "=~", "!~", "!=", "<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",",
    ";", ".", "%",
];

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    /// How deep the expression being read is nested (parentheses, signs).
    depth: usize,
}

/// Deepest nesting of an expression: a query is text from the network, and
/// the parser recurses once a level.
const MAX_DEPTH: usize = 64;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            depth: 0,
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        loop {
            let r = self.rest();
            let trimmed = r.trim_start();
            self.pos += r.len() - trimmed.len();
            if let Some(after) = trimmed.strip_prefix("--") {
                self.pos += 2 + after.find('\n').unwrap_or(after.len());
                continue;
            }
            break;
        }
    }

    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.rest().is_empty()
    }

    fn location(&self, at: usize) -> String {
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("line {line}, char {col}")
    }

    fn error_at(&self, at: usize, message: String) -> ParseError {
        ParseError {
            message: format!("{message} at {}", self.location(at)),
        }
    }

    fn unexpected(&mut self, expected: &str) -> ParseError {
        self.skip_ws();
        let at = self.pos;
        let found = self.peek().map_or_else(|e| e.message, |t| t.describe());
        self.error_at(at, format!("found {found}, expected {expected}"))
    }

    /// The next token, without consuming it.
    fn peek(&mut self) -> Result<Tok, ParseError> {
        let save = self.pos;
        let t = self.next();
        self.pos = save;
        t
    }

    fn next(&mut self) -> Result<Tok, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let r = self.rest();
        let Some(c) = r.chars().next() else {
            return Ok(Tok::End);
        };
        if c.is_ascii_alphabetic() || c == '_' {
            let len = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            self.pos += len;
            return Ok(Tok::Ident(r[..len].to_string(), false));
        }
        if c == '"' || c == '\'' {
            let (s, len) = quoted(r, c)
                .ok_or_else(|| self.error_at(start, format!("unterminated {c}quoted{c} text")))?;
            self.pos += len;
            return Ok(if c == '"' {
                Tok::Ident(s, true)
            } else {
                Tok::Str(s)
            });
        }
        if c.is_ascii_digit() {
            let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let after = &r[digits..];
            if after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit()) {
                let frac = after[1..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after.len() - 1);
                let len = digits + 1 + frac;
                self.pos += len;
                return r[..len].parse().map(Tok::Num).map_err(|_| {
                    self.error_at(start, format!("unable to parse number {}", &r[..len]))
                });
            }
            let n: i64 = r[..digits].parse().map_err(|_| {
                self.error_at(start, format!("unable to parse integer {}", &r[..digits]))
            })?;
            // A duration: digits and a unit, with no space.
            let unit_len = after
                .find(|c: char| !c.is_alphabetic())
                .unwrap_or(after.len());
            if unit_len > 0 {
                let unit = &after[..unit_len];
                let per: i64 = match unit {
                    "ns" => 1,
                    "u" | "µ" | "us" => 1_000,
                    "ms" => 1_000_000,
                    "s" => 1_000_000_000,
                    "m" => 60_000_000_000,
                    "h" => 3_600_000_000_000,
                    "d" => 86_400_000_000_000,
                    "w" => 604_800_000_000_000,
                    _ => {
                        return Err(self.error_at(start, format!("invalid duration unit {unit:?}")))
                    }
                };
                self.pos += digits + unit_len;
                return n
                    .checked_mul(per)
                    .map(Tok::Dur)
                    .ok_or_else(|| self.error_at(start, "duration out of range".into()));
            }
            self.pos += digits;
            return Ok(Tok::Int(n));
        }
        for s in SYMBOLS {
            if r.starts_with(s) {
                self.pos += s.len();
                return Ok(Tok::Sym(s));
            }
        }
        Err(self.error_at(start, format!("found {c}, expected a statement")))
    }

    fn eat_symbol(&mut self, s: &str) -> bool {
        match self.peek() {
            Ok(Tok::Sym(t)) if t == s => {
                let _ = self.next();
                true
            }
            _ => false,
        }
    }

    fn expect_symbol(&mut self, s: &'static str) -> Result<(), ParseError> {
        if self.eat_symbol(s) {
            Ok(())
        } else {
            Err(self.unexpected(s))
        }
    }

    /// Consumes the keyword (unquoted, any case) when it comes next.
    fn eat_keyword(&mut self, kw: &str) -> bool {
        match self.peek() {
            Ok(Tok::Ident(s, false)) if s.eq_ignore_ascii_case(kw) => {
                let _ = self.next();
                true
            }
            _ => false,
        }
    }

    fn expect_keyword(&mut self, kw: &str) -> Result<(), ParseError> {
        if self.eat_keyword(kw) {
            Ok(())
        } else {
            Err(self.unexpected(kw))
        }
    }

    fn ident(&mut self) -> Result<String, ParseError> {
        match self.peek()? {
            Tok::Ident(s, _) => {
                self.next()?;
                Ok(s)
            }
            _ => Err(self.unexpected("identifier")),
        }
    }

    /// An identifier or a 'string' (SHOW TAG VALUES accepts both for a key).
    fn name(&mut self) -> Result<String, ParseError> {
        match self.peek()? {
            Tok::Ident(s, _) | Tok::Str(s) => {
                self.next()?;
                Ok(s)
            }
            _ => Err(self.unexpected("identifier")),
        }
    }

    fn unsigned(&mut self, what: &str) -> Result<usize, ParseError> {
        match self.peek()? {
            Tok::Int(n) if n >= 0 => {
                self.next()?;
                Ok(n as usize)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// A `/regex/`, read straight from the text (a `/` is division elsewhere).
    fn regex(&mut self) -> Result<Regex, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let r = self.rest();
        if !r.starts_with('/') {
            return Err(self.unexpected("regex"));
        }
        let mut pattern = String::new();
        let mut chars = r[1..].char_indices();
        loop {
            match chars.next() {
                None => return Err(self.error_at(start, "unterminated regex".into())),
                Some((i, '/')) => {
                    self.pos += 1 + i + 1;
                    break;
                }
                Some((_, '\\')) => match chars.next() {
                    Some((_, '/')) => pattern.push('/'),
                    Some((_, c)) => {
                        pattern.push('\\');
                        pattern.push(c);
                    }
                    None => return Err(self.error_at(start, "unterminated regex".into())),
                },
                Some((_, c)) => pattern.push(c),
            }
        }
        regex_lite::RegexBuilder::new(&pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| self.error_at(start, format!("invalid regex /{pattern}/: {e}")))
    }

    fn statement(&mut self) -> Result<Statement, ParseError> {
        let at = {
            self.skip_ws();
            self.pos
        };
        if self.eat_keyword("SELECT") {
            return Ok(Statement::Select(Box::new(self.select()?)));
        }
        if self.eat_keyword("SHOW") {
            return self.show();
        }
        if self.eat_keyword("CREATE") {
            if !(self.eat_keyword("DATABASE")
                || (self.eat_keyword("RETENTION") && self.eat_keyword("POLICY")))
            {
                return Err(self.unexpected("DATABASE or RETENTION POLICY"));
            }
            // The rest of the statement names and tunes what would be created.
            while !matches!(self.peek()?, Tok::End | Tok::Sym(";")) {
                self.next()?;
            }
            return Ok(Statement::Create);
        }
        let found = self.peek()?.describe();
        Err(self.error_at(
            at,
            format!("found {found}, expected SELECT, SHOW or CREATE (this server answers reads; docs/influxql.md lists what)"),
        ))
    }

    fn show(&mut self) -> Result<Statement, ParseError> {
        if self.eat_keyword("DATABASES") {
            return Ok(Statement::ShowDatabases);
        }
        if self.eat_keyword("MEASUREMENTS") {
            self.on_database()?;
            let mut name = None;
            if self.eat_keyword("WITH") {
                self.expect_keyword("MEASUREMENT")?;
                name = Some(self.name_match(false)?);
            }
            self.no_where("SHOW MEASUREMENTS")?;
            let (limit, offset) = self.limit_offset()?;
            return Ok(Statement::ShowMeasurements {
                name,
                limit,
                offset,
            });
        }
        if self.eat_keyword("RETENTION") {
            self.expect_keyword("POLICIES")?;
            self.on_database()?;
            return Ok(Statement::ShowRetentionPolicies);
        }
        if self.eat_keyword("FIELD") {
            self.expect_keyword("KEYS")?;
            self.on_database()?;
            let from = self.optional_from()?;
            let (limit, offset) = self.limit_offset()?;
            return Ok(Statement::ShowFieldKeys {
                from,
                limit,
                offset,
            });
        }
        if self.eat_keyword("TAG") {
            if self.eat_keyword("KEYS") {
                self.on_database()?;
                let from = self.optional_from()?;
                self.no_where("SHOW TAG KEYS")?;
                let (limit, offset) = self.limit_offset()?;
                return Ok(Statement::ShowTagKeys {
                    from,
                    limit,
                    offset,
                });
            }
            self.expect_keyword("VALUES")?;
            self.on_database()?;
            let from = self.optional_from()?;
            self.expect_keyword("WITH")?;
            self.expect_keyword("KEY")?;
            let key = self.name_match(true)?;
            let condition = if self.eat_keyword("WHERE") {
                Some(self.expr()?)
            } else {
                None
            };
            let (limit, offset) = self.limit_offset()?;
            return Ok(Statement::ShowTagValues {
                from,
                key,
                condition,
                limit,
                offset,
            });
        }
        Err(self.unexpected(
            "DATABASES, MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS or RETENTION POLICIES",
        ))
    }

    /// A `WHERE` on a meta query that this server cannot filter by: refused.
    fn no_where(&mut self, statement: &str) -> Result<(), ParseError> {
        self.skip_ws();
        let at = self.pos;
        if self.eat_keyword("WHERE") {
            return Err(self.error_at(
                at,
                format!("WHERE on {statement} is not supported (docs/influxql.md)"),
            ));
        }
        Ok(())
    }

    /// `ON db`: one store, every database name is the same data.
    fn on_database(&mut self) -> Result<(), ParseError> {
        if self.eat_keyword("ON") {
            self.ident()?;
        }
        Ok(())
    }

    /// `= name`, `!= name`, `=~ /re/`, `!~ /re/`, and with `allow_in` `IN (a, b)`.
    fn name_match(&mut self, allow_in: bool) -> Result<NameMatch, ParseError> {
        if allow_in && self.eat_keyword("IN") {
            self.expect_symbol("(")?;
            let mut names = vec![self.name()?];
            while self.eat_symbol(",") {
                names.push(self.name()?);
            }
            self.expect_symbol(")")?;
            return Ok(NameMatch::In(names));
        }
        match self.next()? {
            Tok::Sym("=") => Ok(NameMatch::Eq(self.name()?)),
            Tok::Sym("!=") | Tok::Sym("<>") => Ok(NameMatch::NotEq(self.name()?)),
            Tok::Sym("=~") => Ok(NameMatch::Regex(self.regex()?)),
            Tok::Sym("!~") => Ok(NameMatch::NotRegex(self.regex()?)),
            _ => Err(self.unexpected("=, !=, =~ or !~")),
        }
    }

    fn limit_offset(&mut self) -> Result<(Option<usize>, usize), ParseError> {
        let mut limit = None;
        let mut offset = 0;
        if self.eat_keyword("LIMIT") {
            limit = Some(self.unsigned("an integer")?);
        }
        if self.eat_keyword("OFFSET") {
            offset = self.unsigned("an integer")?;
        }
        Ok((limit, offset))
    }

    fn optional_from(&mut self) -> Result<Vec<Source>, ParseError> {
        if self.eat_keyword("FROM") {
            self.sources()
        } else {
            Ok(Vec::new())
        }
    }

    fn sources(&mut self) -> Result<Vec<Source>, ParseError> {
        let mut out = vec![self.source()?];
        while self.eat_symbol(",") {
            out.push(self.source()?);
        }
        Ok(out)
    }

    /// `m`, `"rp"."m"`, `"db"."rp"."m"`, `db..m` or `/re/`.
    fn source(&mut self) -> Result<Source, ParseError> {
        self.skip_ws();
        if self.rest().starts_with('/') {
            return Ok(Source::Regex(self.regex()?));
        }
        let mut last = self.ident()?;
        while self.eat_symbol(".") {
            self.skip_ws();
            if self.rest().starts_with('/') {
                return Ok(Source::Regex(self.regex()?));
            }
            if self.eat_symbol(".") {
                // `db..m`: the default retention policy.
            }
            last = self.ident()?;
        }
        Ok(Source::Name(last))
    }

    fn select(&mut self) -> Result<Select, ParseError> {
        let mut fields = vec![self.field()?];
        while self.eat_symbol(",") {
            fields.push(self.field()?);
        }
        self.skip_ws();
        if self.eat_keyword("INTO") {
            return Err(self.unexpected("FROM (SELECT ... INTO is not supported)"));
        }
        self.expect_keyword("FROM")?;
        self.skip_ws();
        if self.rest().starts_with('(') {
            return Err(self.unexpected("a measurement (subqueries are not supported)"));
        }
        let from = self.sources()?;
        let mut select = Select {
            fields,
            from,
            condition: None,
            every: None,
            group_tags: Vec::new(),
            fill: Fill::Null,
            descending: false,
            limit: None,
            offset: 0,
            slimit: None,
            soffset: 0,
            tz: None,
        };
        if self.eat_keyword("WHERE") {
            select.condition = Some(self.expr()?);
        }
        if self.eat_keyword("GROUP") {
            self.expect_keyword("BY")?;
            loop {
                self.group_item(&mut select)?;
                if !self.eat_symbol(",") {
                    break;
                }
            }
        }
        if self.eat_keyword("FILL") {
            select.fill = self.fill()?;
        }
        if self.eat_keyword("ORDER") {
            self.expect_keyword("BY")?;
            self.expect_keyword("time")?;
            if self.eat_keyword("DESC") {
                select.descending = true;
            } else {
                self.eat_keyword("ASC");
            }
        }
        if self.eat_keyword("LIMIT") {
            select.limit = Some(self.unsigned("an integer")?);
        }
        if self.eat_keyword("OFFSET") {
            select.offset = self.unsigned("an integer")?;
        }
        if self.eat_keyword("SLIMIT") {
            select.slimit = Some(self.unsigned("an integer")?);
        }
        if self.eat_keyword("SOFFSET") {
            select.soffset = self.unsigned("an integer")?;
        }
        if self.eat_keyword("TZ") {
            self.expect_symbol("(")?;
            self.skip_ws();
            let at = self.pos;
            let name = match self.next()? {
                Tok::Str(s) => s,
                _ => return Err(self.error_at(at, "expected a 'time zone' in tz()".into())),
            };
            // The same database as the zones the answer is computed in
            // (jiff's, embedded): a name it has resolves there.
            if !name.eq_ignore_ascii_case("UTC") && jiff::tz::TimeZone::get(&name).is_err() {
                return Err(self.error_at(at, format!("unable to find time zone {name}")));
            }
            select.tz = Some(name);
            self.expect_symbol(")")?;
        }
        Ok(select)
    }

    fn group_item(&mut self, select: &mut Select) -> Result<(), ParseError> {
        self.skip_ws();
        let at = self.pos;
        if self.eat_symbol("*") {
            select.group_tags.push(GroupTag::All);
            return Ok(());
        }
        let (name, quoted) = match self.next()? {
            Tok::Ident(s, q) => (s, q),
            _ => {
                self.pos = at;
                return Err(self.unexpected("time(), a tag key or *"));
            }
        };
        if !quoted && name.eq_ignore_ascii_case("time") && self.eat_symbol("(") {
            let every = match self.next()? {
                Tok::Dur(d) if d > 0 => d,
                _ => return Err(self.error_at(at, "time() needs a positive duration".into())),
            };
            let mut offset = 0;
            if self.eat_symbol(",") {
                let negative = self.eat_symbol("-");
                offset = match self.next()? {
                    Tok::Dur(d) => d,
                    Tok::Int(0) => 0,
                    _ => return Err(self.error_at(at, "time()'s offset must be a duration".into())),
                };
                if negative {
                    offset = -offset;
                }
            }
            self.expect_symbol(")")?;
            if select.every.is_some() {
                return Err(self.error_at(at, "multiple time dimensions".into()));
            }
            select.every = Some((every, offset));
            return Ok(());
        }
        if self.eat_symbol("::") {
            self.ident()?;
        }
        select.group_tags.push(GroupTag::Name(name));
        Ok(())
    }

    fn fill(&mut self) -> Result<Fill, ParseError> {
        self.expect_symbol("(")?;
        let at = self.pos;
        let negative = self.eat_symbol("-");
        let sign = if negative { -1.0 } else { 1.0 };
        let fill = match self.next()? {
            Tok::Ident(s, false) if !negative && s.eq_ignore_ascii_case("null") => Fill::Null,
            Tok::Ident(s, false) if !negative && s.eq_ignore_ascii_case("none") => Fill::None,
            Tok::Ident(s, false) if !negative && s.eq_ignore_ascii_case("previous") => {
                Fill::Previous
            }
            Tok::Ident(s, false) if !negative && s.eq_ignore_ascii_case("linear") => Fill::Linear,
            Tok::Int(n) => Fill::Value(sign * n as f64),
            Tok::Num(n) => Fill::Value(sign * n),
            _ => {
                return Err(self.error_at(
                    at,
                    "fill() takes null, none, previous, linear or a number".into(),
                ))
            }
        };
        self.expect_symbol(")")?;
        Ok(fill)
    }

    fn field(&mut self) -> Result<Field, ParseError> {
        self.skip_ws();
        let at = self.pos;
        let expr = if self.eat_symbol("*") {
            FieldExpr::Wildcard
        } else {
            let (name, quoted) = match self.next()? {
                Tok::Ident(s, q) => (s, q),
                _ => {
                    self.pos = at;
                    return Err(self.unexpected("a field, a function or *"));
                }
            };
            match Transform::parse(&name) {
                Some(t) if !quoted && self.eat_symbol("(") => {
                    let inner = self.call_or_ref(t.name())?;
                    if self.eat_symbol(",") {
                        return Err(
                            self.error_at(at, format!("{}() takes one argument here", t.name()))
                        );
                    }
                    self.expect_symbol(")")?;
                    FieldExpr::Transform(t, Box::new(inner))
                }
                _ => {
                    self.pos = at;
                    self.call_or_ref("")?
                }
            }
        };
        if let Ok(Tok::Sym(s @ ("+" | "-" | "*" | "/" | "%"))) = self.peek() {
            self.skip_ws();
            let at = self.pos;
            return Err(self.error_at(at, format!("arithmetic ({s}) in a field is not supported")));
        }
        let alias = if self.eat_keyword("AS") {
            Some(self.ident()?)
        } else {
            None
        };
        Ok(Field { expr, alias })
    }

    /// A field (`x`, `"x"::field`) or a function of one (`mean(x)`, `count(*)`);
    /// `outer` names the function this is the argument of, if any.
    fn call_or_ref(&mut self, outer: &str) -> Result<FieldExpr, ParseError> {
        self.skip_ws();
        let at = self.pos;
        let (name, quoted) = match self.next()? {
            Tok::Ident(s, q) => (s, q),
            _ => {
                self.pos = at;
                return Err(self.unexpected(if outer.is_empty() {
                    "a field, a function or *"
                } else {
                    "a field or an aggregate"
                }));
            }
        };
        if quoted || !self.eat_symbol("(") {
            return Ok(FieldExpr::Ref(self.cast(name)?));
        }
        let Some(func) = Func::parse(&name) else {
            let what = if Transform::parse(&name).is_some() && !outer.is_empty() {
                format!("{outer}() of {name}(): nested functions are not supported")
            } else {
                format!(
                    "function {} is not supported: mean, min, max, sum, count, first, last, spread, median, difference and non_negative_difference are (docs/influxql.md)",
                    name.to_ascii_lowercase()
                )
            };
            return Err(self.error_at(at, what));
        };
        self.skip_ws();
        let arg = if self.eat_symbol("*") {
            if !outer.is_empty() {
                return Err(self.error_at(
                    at,
                    format!("{outer}() of {}(*) is not supported", func.name()),
                ));
            }
            None
        } else {
            let inner = self.pos;
            match self.peek()? {
                Tok::Ident(s, q) => {
                    self.next()?;
                    if !q && self.eat_symbol("(") {
                        return Err(self.error_at(
                            inner,
                            format!(
                                "{}() of {s}(): nested functions are not supported",
                                func.name()
                            ),
                        ));
                    }
                    Some(self.cast(s)?)
                }
                _ => return Err(self.unexpected("a field key or *")),
            }
        };
        if self.eat_symbol(",") {
            return Err(self.error_at(at, format!("{}() takes one argument", func.name())));
        }
        self.expect_symbol(")")?;
        Ok(FieldExpr::Call(func, arg))
    }

    fn cast(&mut self, name: String) -> Result<VarRef, ParseError> {
        let cast = if self.eat_symbol("::") {
            let at = self.pos;
            let c = self.ident()?;
            match c.to_ascii_lowercase().as_str() {
                "tag" => Some(Cast::Tag),
                "field" | "float" | "integer" => Some(Cast::Field),
                _ => return Err(self.error_at(at, format!("cast ::{c} is not supported"))),
            }
        } else {
            None
        };
        Ok(VarRef { name, cast })
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.binary(0)
    }

    /// Precedence climbing: OR, AND, comparisons, + -, * /.
    fn binary(&mut self, level: u8) -> Result<Expr, ParseError> {
        const LEVELS: [&[(&str, Op)]; 5] = [
            &[("OR", Op::Or)],
            &[("AND", Op::And)],
            &[
                ("=~", Op::Match),
                ("!~", Op::NotMatch),
                ("!=", Op::NotEq),
                ("<>", Op::NotEq),
                ("<=", Op::Lte),
                (">=", Op::Gte),
                ("=", Op::Eq),
                ("<", Op::Lt),
                (">", Op::Gt),
            ],
            &[("+", Op::Add), ("-", Op::Sub)],
            &[("*", Op::Mul), ("/", Op::Div)],
        ];
        if level as usize == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        'more: loop {
            for (text, op) in LEVELS[level as usize] {
                let matched = if text.chars().all(|c| c.is_ascii_alphabetic()) {
                    self.eat_keyword(text)
                } else {
                    self.eat_symbol(text)
                };
                if matched {
                    let rhs = if matches!(op, Op::Match | Op::NotMatch) {
                        Expr::Regex(self.regex()?)
                    } else {
                        self.binary(level + 1)?
                    };
                    lhs = Expr::Binary(Box::new(lhs), *op, Box::new(rhs));
                    continue 'more;
                }
            }
            return Ok(lhs);
        }
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let at = self.pos;
        if self.depth >= MAX_DEPTH {
            return Err(self.error_at(at, format!("expression nested more than {MAX_DEPTH} deep")));
        }
        self.depth += 1;
        let e = self.unary_inner(at);
        self.depth -= 1;
        e
    }

    fn unary_inner(&mut self, at: usize) -> Result<Expr, ParseError> {
        if self.eat_symbol("-") {
            return match self.unary()? {
                Expr::Integer(i) => Ok(Expr::Integer(-i)),
                Expr::Number(n) => Ok(Expr::Number(-n)),
                Expr::Duration(d) => Ok(Expr::Duration(-d)),
                _ => Err(self.error_at(at, "unary minus needs a number".into())),
            };
        }
        if self.eat_symbol("(") {
            let e = self.expr()?;
            self.expect_symbol(")")?;
            return Ok(e);
        }
        match self.next()? {
            Tok::Ident(s, false) if s.eq_ignore_ascii_case("now") && self.eat_symbol("(") => {
                self.expect_symbol(")")?;
                Ok(Expr::Now)
            }
            Tok::Ident(s, false) if s.eq_ignore_ascii_case("true") => Ok(Expr::Bool(true)),
            Tok::Ident(s, false) if s.eq_ignore_ascii_case("false") => Ok(Expr::Bool(false)),
            Tok::Ident(s, false) if self.peek() == Ok(Tok::Sym("(")) => {
                Err(self.error_at(at, format!("function {s}() in WHERE is not supported")))
            }
            Tok::Ident(s, _) => Ok(Expr::Var(self.cast(s)?)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Int(i) => Ok(Expr::Integer(i)),
            Tok::Num(n) => Ok(Expr::Number(n)),
            Tok::Dur(d) => Ok(Expr::Duration(d)),
            _ => {
                self.pos = at;
                Err(self.unexpected("identifier, string, number, duration or now()"))
            }
        }
    }
}

/// A quoted text starting at `r[0]` (`q`): its value and its length in `r`.
fn quoted(r: &str, q: char) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = r.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    e if e == q || e == '\\' => out.push(e),
                    e => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            c if c == q => return Some((out, i + 1)),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(q: &str) -> Statement {
        let mut all = parse_query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    fn select(q: &str) -> Select {
        match one(q) {
            Statement::Select(s) => *s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn grafana_s_dashboard_query_parses_whole() {
        let s = select(
            r#"SELECT mean("temperature") AS "t", max("humidity"::field) FROM "autogen"."climate" WHERE ("room"::tag =~ /^kitchen$/ AND "device_id" != 'x') AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(5m, 1m), "device_id" fill(linear) ORDER BY time DESC LIMIT 10 OFFSET 2 SLIMIT 3 SOFFSET 1 tz('Europe/Berlin')"#,
        );
        assert_eq!(s.fields.len(), 2);
        assert!(
            matches!(&s.fields[0].expr, FieldExpr::Call(Func::Mean, Some(v)) if v.name == "temperature")
        );
        assert_eq!(s.fields[0].alias.as_deref(), Some("t"));
        assert!(
            matches!(&s.fields[1].expr, FieldExpr::Call(Func::Max, Some(v)) if v.cast == Some(Cast::Field))
        );
        assert!(matches!(&s.from[..], [Source::Name(n)] if n == "climate"));
        assert_eq!(s.every, Some((300_000_000_000, 60_000_000_000)));
        assert_eq!(s.group_tags, vec![GroupTag::Name("device_id".into())]);
        assert_eq!(s.fill, Fill::Linear);
        assert!(s.descending);
        assert_eq!(
            (s.limit, s.offset, s.slimit, s.soffset),
            (Some(10), 2, Some(3), 1)
        );
        assert_eq!(s.tz.as_deref(), Some("Europe/Berlin"));
        // The WHERE keeps its shape: (tag AND tag) AND time AND time.
        let Some(Expr::Binary(_, Op::And, rhs)) = &s.condition else {
            panic!("{:?}", s.condition)
        };
        assert!(matches!(**rhs, Expr::Binary(_, Op::Lte, _)));
    }

    #[test]
    fn time_literals_have_their_units_in_nanoseconds() {
        let s = select("SELECT * FROM climate WHERE time > now() - 6h AND time < 1700000000s");
        let Some(Expr::Binary(lhs, Op::And, rhs)) = s.condition else {
            panic!()
        };
        let Expr::Binary(_, Op::Gt, now_minus) = *lhs else {
            panic!()
        };
        assert!(matches!(
            *now_minus,
            Expr::Binary(ref a, Op::Sub, ref b)
                if matches!(**a, Expr::Now) && matches!(**b, Expr::Duration(21_600_000_000_000))
        ));
        assert!(
            matches!(*rhs, Expr::Binary(_, Op::Lt, ref b) if matches!(**b, Expr::Duration(1_700_000_000_000_000_000)))
        );
    }

    #[test]
    fn meta_queries_grafana_sends_parse() {
        assert!(matches!(one("SHOW DATABASES"), Statement::ShowDatabases));
        match one("SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)cli/ LIMIT 100") {
            Statement::ShowMeasurements {
                name: Some(NameMatch::Regex(r)),
                limit: Some(100),
                offset: 0,
            } => assert!(r.is_match("Climate")),
            other => panic!("{other:?}"),
        }
        match one(
            r#"SHOW TAG VALUES FROM "climate" WITH KEY IN ("room", "device_id") WHERE "room" = 'kitchen'"#,
        ) {
            Statement::ShowTagValues {
                from,
                key: NameMatch::In(keys),
                condition: Some(_),
                ..
            } => {
                assert_eq!(keys, ["room", "device_id"]);
                assert!(from[0].matches("climate"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            one(r#"SHOW FIELD KEYS FROM "power""#),
            Statement::ShowFieldKeys { .. }
        ));
        assert!(matches!(
            one(r#"SHOW TAG KEYS ON "home" FROM /cl.*/"#),
            Statement::ShowTagKeys { .. }
        ));
        assert!(matches!(
            one(r#"show retention policies on "home""#),
            Statement::ShowRetentionPolicies
        ));
        assert!(matches!(
            one(r#"CREATE DATABASE "telegraf" WITH DURATION 30d"#),
            Statement::Create
        ));
    }

    /// Every query docs/grafana.md shows (its SQL blocks, and the sample
    /// dashboard's raw queries and variable), with Grafana's macros as it
    /// expands them.
    #[test]
    fn docs_grafana_s_queries_parse() {
        let doc = include_str!("../../../docs/grafana.md");
        let mut queries: Vec<String> = Vec::new();
        for (fence, end) in [("```sql\n", "\n```"), ("```json\n", "\n```")] {
            let mut rest = doc;
            while let Some(i) = rest.find(fence) {
                let body = &rest[i + fence.len()..];
                let j = body.find(end).expect("a closed block");
                if fence.contains("sql") {
                    queries.push(body[..j].to_string());
                } else {
                    let dashboard: serde_json::Value = serde_json::from_str(&body[..j]).unwrap();
                    collect_queries(&dashboard, &mut queries);
                }
                rest = &body[j..];
            }
        }
        // The ready-made dashboard (issue 79): its panels' queries, and its
        // variables' that are queries (not the data source's or the zones').
        let dashboard: serde_json::Value = serde_json::from_str(include_str!(
            "../../../docs/grafana/ingester-dashboard.json"
        ))
        .unwrap();
        for panel in dashboard["panels"].as_array().unwrap() {
            collect_queries(&panel["targets"], &mut queries);
        }
        for variable in dashboard["templating"]["list"].as_array().unwrap() {
            if variable["type"] == "query" {
                collect_queries(variable, &mut queries);
            }
        }
        assert!(queries.len() >= 12, "{queries:?}");
        for q in queries {
            let q = q
                .replace(
                    "$timeFilter",
                    "time >= 1795219200000ms and time <= 1795305599999ms",
                )
                .replace("$__interval", "5m")
                .replace("$room", "(kitchen|bedroom)")
                .replace("$tz", "Europe/Berlin");
            assert!(parse_query(&q).is_ok(), "{q}: {:?}", parse_query(&q));
        }
    }

    fn collect_queries(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(q)) = m.get("query") {
                    out.push(q.clone());
                }
                m.values().for_each(|v| collect_queries(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect_queries(v, out)),
            _ => {}
        }
    }

    #[test]
    fn differences_take_a_field_or_one_aggregate() {
        let s = select("SELECT non_negative_difference(max(cumulative_kwh_p)) AS kwh, difference(\"x\") FROM power");
        assert!(matches!(
            &s.fields[0].expr,
            FieldExpr::Transform(Transform::NonNegativeDifference, inner)
                if matches!(**inner, FieldExpr::Call(Func::Max, Some(ref v)) if v.name == "cumulative_kwh_p")
        ));
        assert_eq!(s.fields[0].alias.as_deref(), Some("kwh"));
        assert!(matches!(
            &s.fields[1].expr,
            FieldExpr::Transform(Transform::Difference, inner) if matches!(**inner, FieldExpr::Ref(_))
        ));
    }

    #[test]
    fn several_statements_give_several_results() {
        let all = parse_query("SHOW DATABASES; SELECT last(current_w) FROM power;").unwrap();
        assert_eq!(all.len(), 2);
    }

    #[test]
    fn errors_name_what_was_found_and_where() {
        let e = parse_query("SELECT mean(temperature) FROM").unwrap_err();
        assert_eq!(
            e.message,
            "found EOF, expected identifier at line 1, char 30"
        );
        let e = parse_query("SELECT derivative(temperature) FROM climate").unwrap_err();
        assert!(
            e.message.contains("function derivative is not supported"),
            "{e}"
        );
        let e = parse_query("SELECT non_negative_difference(mean(max(x))) FROM power").unwrap_err();
        assert!(
            e.message.contains("nested functions are not supported"),
            "{e}"
        );
        let e = parse_query("SELECT difference(difference(x)) FROM power").unwrap_err();
        assert!(
            e.message.contains("nested functions are not supported"),
            "{e}"
        );
        let e = parse_query("SELECT mean(x) * 2 FROM power").unwrap_err();
        assert!(e.message.contains("arithmetic"), "{e}");
        let e = parse_query("DROP MEASUREMENT climate").unwrap_err();
        assert!(e.message.starts_with("found DROP, expected SELECT"), "{e}");
        let e = parse_query("SELECT * FROM climate tz('Mars/Olympus')").unwrap_err();
        assert!(e.message.contains("Mars/Olympus"), "{e}");
        let e = parse_query("SELECT * FROM climate WHERE room =~ /(/").unwrap_err();
        assert!(e.message.contains("invalid regex"), "{e}");
        let e = parse_query("SELECT * FROM climate WHERE room = 'x").unwrap_err();
        assert!(e.message.contains("unterminated"), "{e}");
        assert!(parse_query("  ;  ").is_err());
        let e = parse_query("SELECT * FROM climate GROUP BY time(0s)").unwrap_err();
        assert!(e.message.contains("positive duration"), "{e}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        for deep in [
            format!(
                "SELECT * FROM c WHERE {}room = 'a'{}",
                "(".repeat(100_000),
                ")".repeat(100_000)
            ),
            format!("SELECT * FROM c WHERE time > {}1", "- ".repeat(100_000)),
        ] {
            let e = parse_query(&deep).unwrap_err();
            assert!(e.message.contains("nested more than 64 deep"), "{e}");
        }
        let fine = format!(
            "SELECT * FROM c WHERE {}room = 'a'{}",
            "(".repeat(20),
            ")".repeat(20)
        );
        assert!(parse_query(&fine).is_ok());
    }

    #[test]
    fn quoted_identifiers_and_strings_unescape() {
        let s = select(r#"SELECT "odd \"name\"" FROM "my.measure" WHERE device_id = 'it\'s'"#);
        assert!(matches!(&s.fields[0].expr, FieldExpr::Ref(v) if v.name == "odd \"name\""));
        assert!(matches!(&s.from[0], Source::Name(n) if n == "my.measure"));
        let Some(Expr::Binary(_, Op::Eq, rhs)) = s.condition else {
            panic!()
        };
        assert!(matches!(*rhs, Expr::Str(ref v) if v == "it's"));
    }

    #[test]
    fn a_regex_may_hold_an_escaped_slash() {
        let s = select(r#"SELECT * FROM climate WHERE device_id =~ /^a\/b$/"#);
        let Some(Expr::Binary(_, Op::Match, rhs)) = s.condition else {
            panic!()
        };
        assert!(matches!(*rhs, Expr::Regex(ref r) if r.is_match("a/b")));
    }

    proptest::proptest! {
        /// Any text: statements, or an error that says where.
        #[test]
        fn any_text_parses_or_says_where_it_fails(text in "\\PC{0,80}") {
            if let Err(e) = parse_query(&text) {
                proptest::prop_assert!(
                    e.message.contains(" at line 1, char ") || e.message.contains("missing required parameter"),
                    "{}", e.message
                );
            }
        }

        /// Any text after a valid start: the same, and the start is kept.
        #[test]
        fn any_tail_parses_or_says_where_it_fails(tail in "[ -~]{0,60}") {
            match parse_query(&format!("SELECT mean(temperature) FROM climate WHERE {tail}")) {
                Ok(all) => proptest::prop_assert!(matches!(&all[0], Statement::Select(s) if s.fields.len() == 1)),
                Err(e) => proptest::prop_assert!(e.message.contains(" at line "), "{}", e.message),
            }
        }
    }
}
