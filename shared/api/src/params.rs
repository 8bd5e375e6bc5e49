//! Query-string parameters: the serde structs the routes extract (unknown or
//! repeated parameters are refused by name), then parsed into the use cases'
//! queries. Every bad value is reported, by name.

use domain::aggregate::{Bucketing, Width, MAX_BUCKETS};
use domain::model::Quantity;
use domain::model::{DeviceId, ReadingKind, RoomId, TimeRange, Timestamp};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use storage::keys::MAX_CURSOR_LEN;
use storage::Order;
use storage::{DeviceFilter, RoomFilter};
use usecases::query::{ReadingsQuery, SearchQuery, StatsQuery};

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;
/// Most readings in a `format=columns` page: the format for bulk reads (a
/// year of one device is 53 pages, not 526), still well under Lambda's 6 MB
/// answer at a few hundred KB.
pub const MAX_COLUMNS_LIMIT: usize = 10_000;
/// Default span when `from` is not given.
pub const DEFAULT_SPAN_MS: i64 = 24 * 3600 * 1000;
/// Longest value accepted for any parameter but `cursor`.
pub const MAX_PARAM_LEN: usize = 64;

pub type Problems = Vec<(String, String)>;

/// A route's parameters: a struct of optional strings that denies unknown
/// fields, so that a typo (`form=`) or a repeated parameter is a 400 naming it.
macro_rules! route_params {
    ($(#[$doc:meta])* $name:ident { $($field:ident),* }) => {
        $(#[$doc])*
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(pub $field: Option<String>,)*
        }
    };
}

route_params!(
    /// Routes that take no parameters.
    NoParams {}
);
route_params!(
    /// The range routes.
    RangeParams { from, to, limit, order, cursor, format, labels }
);
route_params!(
    /// The aggregate routes' range and buckets (energy's parameters).
    StatsParams { from, to, bucket, tz }
);
route_params!(
    /// The stats routes: `StatsParams` and a `format`.
    StatsPageParams { from, to, bucket, tz, format }
);
route_params!(
    /// The dashboard's pages: a picked `range` or `from`/`to`, and `tz`.
    DashboardParams { range, from, to, tz }
);
route_params!(
    /// The overview: `DashboardParams`, and over a fleet a search and pages.
    OverviewParams { range, from, to, tz, search, cursor, rooms_cursor }
);
route_params!(
    /// The chart images: what to draw, the page's range parameters, a width in pixels.
    ChartParams { quantity, range, from, to, tz, width }
);
route_params!(
    /// The dashboard's sign-in form.
    LoginForm { token, next }
);
route_params!(
    /// Box search: the range and the box, inclusive.
    SearchParams { from, to, tmin, tmax, hmin, hmax, limit, cursor }
);

route_params!(
    /// `/devices`: a page, and what narrows it.
    DeviceListParams { limit, cursor, room, r#type, prefix, silent_since, search }
);
route_params!(
    /// `/rooms`: a page, and the rooms' id prefix.
    RoomListParams { limit, cursor, prefix, search }
);
route_params!(
    /// A room's devices (`/rooms/{id}`): a page of them.
    ListPageParams { limit, cursor }
);

/// A query string into one of the structs above. serde names the offending
/// field between backticks ("unknown field `form`, expected one of `from`, ...",
/// "duplicate field `order`"); the problem says it of a parameter.
pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, Problems> {
    serde_urlencoded::from_str(query).map_err(|e| {
        let message = e.to_string();
        let name = message.split('`').nth(1).unwrap_or("").to_owned();
        let said = if message.starts_with("duplicate field") {
            "given more than once".to_owned()
        } else if message.starts_with("unknown field") {
            match message.split_once(", ").map(|(_, rest)| rest) {
                Some(rest) if rest.starts_with("there are no fields") => {
                    "unknown parameter (this route takes none)".to_owned()
                }
                Some(rest) => format!("unknown parameter ({rest})"),
                None => "unknown parameter".to_owned(),
            }
        } else {
            message
        };
        vec![(name, said)]
    })
}

/// A value within its length limit (`None` inside: already reported).
fn value<'a>(name: &str, v: &'a Option<String>, problems: &mut Problems) -> Option<&'a str> {
    let v = v.as_deref()?;
    let max = if name == "cursor" {
        MAX_CURSOR_LEN
    } else {
        MAX_PARAM_LEN
    };
    if v.len() > max {
        problems.push((name.into(), format!("is longer than {max} characters")));
        return None;
    }
    Some(v)
}

/// A time parameter. A `+` in an offset often arrives as a space (form
/// encoding), so a space there is read as `+`.
fn time(name: &str, v: &str, problems: &mut Problems) -> Option<Timestamp> {
    Timestamp::parse(v)
        .or_else(|e| {
            if v.contains(' ') {
                Timestamp::parse(&v.replace(' ', "+"))
            } else {
                Err(e)
            }
        })
        .map_err(|e| problems.push((name.into(), e.to_string())))
        .ok()
}

/// `limit`: 1 to `max`, default `DEFAULT_LIMIT` (`None` inside: already reported).
fn limit(v: &Option<String>, max: usize, problems: &mut Problems) -> Option<usize> {
    match value("limit", v, problems) {
        None => Some(DEFAULT_LIMIT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Some(n),
            _ => {
                problems.push((
                    "limit".into(),
                    format!("must be an integer from 1 to {max}, got {v:?}"),
                ));
                None
            }
        },
    }
}

/// Records in a page of a registry list, when `limit` is not given, and at
/// most: a household's whole list (today's answer, one page), and at about
/// 350 bytes a device a third of a megabyte, far inside Lambda's 6 MB.
pub const LIST_LIMIT: usize = 1000;

/// A validated list request: its page and, for devices, its filter.
#[derive(Debug, Clone)]
pub struct ListQuery<F> {
    pub filter: F,
    pub limit: usize,
    pub cursor: Option<String>,
}

/// `limit` of a list: 1 to `LIST_LIMIT`, default `LIST_LIMIT`.
fn list_limit(v: &Option<String>, problems: &mut Problems) -> Option<usize> {
    if v.is_none() {
        return Some(LIST_LIMIT);
    }
    limit(v, LIST_LIMIT, problems)
}

/// An id prefix: the characters a device id may hold (a room's are a subset).
fn id_prefix(v: &Option<String>, problems: &mut Problems) -> Option<String> {
    let p = value("prefix", v, problems)?;
    match DeviceId::parse(p) {
        Ok(_) => Some(p.to_owned()),
        // A prefix of a reserved name is still a prefix ("DEV" lists "DEVICE-7").
        Err(domain::model::IdError::Reserved(_)) => Some(p.to_owned()),
        Err(e) => {
            problems.push(("prefix".into(), e.to_string()));
            None
        }
    }
}

/// `search`: text to find in ids and names (empty: no filter).
pub fn search(v: &Option<String>, problems: &mut Problems) -> Option<String> {
    value("search", v, problems)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// `/devices`' parameters.
pub fn device_list(p: &DeviceListParams) -> Result<ListQuery<DeviceFilter>, Problems> {
    let mut problems = Problems::new();
    let limit = list_limit(&p.limit, &mut problems);
    let cursor = value("cursor", &p.cursor, &mut problems).map(str::to_owned);
    let room = value("room", &p.room, &mut problems).and_then(|r| {
        RoomId::parse(r)
            .map_err(|e| problems.push(("room".into(), e.to_string())))
            .ok()
    });
    let kind = value("type", &p.r#type, &mut problems).and_then(|t| {
        let kind = ReadingKind::parse(t);
        if kind.is_none() {
            let known: Vec<&str> = ReadingKind::ALL.iter().map(|k| k.as_str()).collect();
            problems.push((
                "type".into(),
                format!("must be one of {}, got {t:?}", known.join(", ")),
            ));
        }
        kind
    });
    let prefix = id_prefix(&p.prefix, &mut problems);
    let silent_since = value("silent_since", &p.silent_since, &mut problems)
        .and_then(|v| time("silent_since", v, &mut problems));
    let text = search(&p.search, &mut problems);
    match limit {
        Some(limit) if problems.is_empty() => Ok(ListQuery {
            filter: DeviceFilter {
                room,
                kind,
                prefix,
                silent_since,
                text,
            },
            limit,
            cursor,
        }),
        _ => Err(problems),
    }
}

/// `/rooms`' parameters.
pub fn room_list(p: &RoomListParams) -> Result<ListQuery<RoomFilter>, Problems> {
    let mut problems = Problems::new();
    let limit = list_limit(&p.limit, &mut problems);
    let cursor = value("cursor", &p.cursor, &mut problems).map(str::to_owned);
    let prefix = id_prefix(&p.prefix, &mut problems);
    let text = search(&p.search, &mut problems);
    match limit {
        Some(limit) if problems.is_empty() => Ok(ListQuery {
            filter: RoomFilter { prefix, text },
            limit,
            cursor,
        }),
        _ => Err(problems),
    }
}

/// A page of a room's devices.
pub fn list_page(p: &ListPageParams) -> Result<(usize, Option<String>), Problems> {
    let mut problems = Problems::new();
    let limit = list_limit(&p.limit, &mut problems);
    let cursor = value("cursor", &p.cursor, &mut problems).map(str::to_owned);
    match limit {
        Some(limit) if problems.is_empty() => Ok((limit, cursor)),
        _ => Err(problems),
    }
}

/// A time parameter: `None` when not given, `Some(None)` when given and
/// reported as bad.
type GivenTime = Option<Option<Timestamp>>;

/// The `from` and `to` values given, as times.
fn from_to(
    from: &Option<String>,
    to: &Option<String>,
    problems: &mut Problems,
) -> (GivenTime, GivenTime) {
    let from = value("from", from, problems).map(|v| time("from", v, problems));
    let to = value("to", to, problems).map(|v| time("to", v, problems));
    (from, to)
}

/// The range from optional `from`/`to` values (`None` inside: already reported).
fn range(
    from: GivenTime,
    to: GivenTime,
    now: Timestamp,
    problems: &mut Problems,
) -> Option<TimeRange> {
    match (from, to) {
        (Some(None), _) | (_, Some(None)) => None,
        (from, to) => {
            // Default end: just after now, so a reading stamped "now" is included.
            let to = to.flatten().unwrap_or_else(|| now.saturating_add_millis(1));
            let from = from
                .flatten()
                .unwrap_or_else(|| to.saturating_add_millis(-DEFAULT_SPAN_MS));
            TimeRange::new(from, to)
                .map_err(|m| problems.push(("from".into(), m)))
                .ok()
        }
    }
}

/// `from` and `to` alone, read as `stats_query` reads them: the range of a
/// dashboard view, which picks its buckets' width from the range itself
/// (a year's custom range held 8,760 of `stats_query`'s default hours, over
/// its bucket limit, and the page was a 400).
pub fn time_range(
    from: &Option<String>,
    to: &Option<String>,
    now: Timestamp,
) -> Result<TimeRange, Problems> {
    let mut problems = Problems::new();
    let (from, to) = from_to(from, to, &mut problems);
    match range(from, to, now, &mut problems) {
        Some(range) if problems.is_empty() => Ok(range),
        _ => Err(problems),
    }
}

/// `from`, `to` (as for ranges), `bucket` (1m, 5m, 15m, 1h, 1d; default 1h) and
/// `tz` (an IANA zone that aligns day buckets to its midnight; default UTC).
pub fn stats_query(params: &StatsParams, now: Timestamp) -> Result<StatsQuery, Problems> {
    let mut problems = Problems::new();
    let (from, to) = from_to(&params.from, &params.to, &mut problems);
    let width = match value("bucket", &params.bucket, &mut problems) {
        None => Some(Width::Hour),
        Some(v) => Width::parse(v).or_else(|| {
            problems.push((
                "bucket".into(),
                format!("must be one of {}, got {v:?}", Width::NAMES.join(", ")),
            ));
            None
        }),
    };
    let tz = match value("tz", &params.tz, &mut problems) {
        None => Some(None),
        Some(v) => match v.parse::<domain::model::Zone>() {
            Ok(tz) => Some(Some(tz)),
            Err(_) => {
                problems.push((
                    "tz".into(),
                    format!("{v:?} is not an IANA time zone name (e.g. Europe/Berlin)"),
                ));
                None
            }
        },
    };
    let range = range(from, to, now, &mut problems);
    match (range, width, tz) {
        (Some(range), Some(width), Some(tz)) if problems.is_empty() => {
            let bucketing = Bucketing::new(width, tz);
            let n = bucketing.max_buckets(&range);
            if n > MAX_BUCKETS {
                return Err(vec![(
                    "bucket".into(),
                    format!("{} buckets of {} over this range exceed the limit of {MAX_BUCKETS}: use wider buckets or a shorter range", n, width.as_str()),
                )]);
            }
            Ok(StatsQuery { range, bucketing })
        }
        _ => Err(problems),
    }
}

/// `from` (inclusive), `to` (exclusive), `limit` (1 to `max_limit`), `order`,
/// `cursor`. Defaults: `to` = now, `from` = `to` - 24 h, `limit` = 100,
/// `order` = asc.
pub fn readings_query(
    params: &RangeParams,
    now: Timestamp,
    max_limit: usize,
) -> Result<ReadingsQuery, Problems> {
    let mut problems = Problems::new();
    let (from, to) = from_to(&params.from, &params.to, &mut problems);
    let limit = limit(&params.limit, max_limit, &mut problems);
    let order = match value("order", &params.order, &mut problems) {
        None | Some("asc") => Some(Order::Asc),
        Some("desc") => Some(Order::Desc),
        Some(v) => {
            problems.push((
                "order".into(),
                format!("must be \"asc\" or \"desc\", got {v:?}"),
            ));
            None
        }
    };
    let cursor = value("cursor", &params.cursor, &mut problems).map(str::to_owned);
    let range = range(from, to, now, &mut problems);
    match (range, limit, order) {
        (Some(range), Some(limit), Some(order)) if problems.is_empty() => Ok(ReadingsQuery {
            range,
            order,
            limit,
            cursor,
        }),
        _ => Err(problems),
    }
}

/// How a page of readings is written: `objects` (default), one JSON object per
/// reading as DESIGN §5 shows it, or `columns`, InfluxDB's shape (column names
/// once, then one array per reading, times in epoch milliseconds), which is a
/// third of the bytes and cheaper for a client to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageFormat {
    Objects,
    Columns,
    /// The columns page on its side: an array a column (`ColumnsPage`).
    Arrays,
}

/// Where a columns page gives its readings' labels (`device_id`, `type`,
/// `room`): `each` (default), a column in every reading's array; or `once`,
/// a label that every reading of the page shares given once, in `labels`, as
/// InfluxDB gives a series' tags and VictoriaMetrics a series' labels (a
/// label that differs between the page's readings stays a column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    Each,
    Once,
}

/// The range routes' query, page format and labels, every problem of all
/// three reported.
pub fn readings_request(
    params: &RangeParams,
    now: Timestamp,
) -> Result<(ReadingsQuery, PageFormat, Labels), Problems> {
    let mut problems = Problems::new();
    let format = page_format(&params.format, true, &mut problems);
    let labels = labels(&params.labels, format, &mut problems);
    let max_limit = match format {
        Some(PageFormat::Columns | PageFormat::Arrays) => MAX_COLUMNS_LIMIT,
        _ => MAX_LIMIT,
    };
    let shape = format.zip(labels);
    with_format(readings_query(params, now, max_limit), shape, problems)
        .map(|(q, (format, labels))| (q, format, labels))
}

/// `labels`: `each` (default) or `once`, which only a columns page takes
/// (`None`: reported).
fn labels(
    v: &Option<String>,
    format: Option<PageFormat>,
    problems: &mut Problems,
) -> Option<Labels> {
    match value("labels", v, problems) {
        None | Some("each") => Some(Labels::Each),
        Some("once") if format == Some(PageFormat::Objects) => {
            problems.push((
                "labels".into(),
                "\"once\" applies to format=columns and format=arrays only (each object names its own device, type and room)".into(),
            ));
            None
        }
        Some("once") => Some(Labels::Once),
        Some(v) => {
            problems.push((
                "labels".into(),
                format!("must be \"each\" or \"once\", got {v:?}"),
            ));
            None
        }
    }
}

/// A query with its answer's format, or every problem of both: the query's
/// first, then the format's (`problems`).
fn with_format<Q, F>(
    query: Result<Q, Problems>,
    format: Option<F>,
    mut problems: Problems,
) -> Result<(Q, F), Problems> {
    match (query, format) {
        (Ok(q), Some(f)) if problems.is_empty() => Ok((q, f)),
        (q, _) => {
            problems.splice(0..0, q.err().unwrap_or_default());
            Err(problems)
        }
    }
}

/// `format`: `objects` (default) or `columns`, and `arrays` where a page of
/// readings is asked for (`arrays`) (`None`: already reported).
fn page_format(v: &Option<String>, arrays: bool, problems: &mut Problems) -> Option<PageFormat> {
    match value("format", v, problems) {
        None | Some("objects") => Some(PageFormat::Objects),
        Some("columns") => Some(PageFormat::Columns),
        Some("arrays") if arrays => Some(PageFormat::Arrays),
        Some(v) => {
            let choices = if arrays {
                "\"objects\", \"columns\" or \"arrays\""
            } else {
                "\"objects\" or \"columns\""
            };
            problems.push(("format".into(), format!("must be {choices}, got {v:?}")));
            None
        }
    }
}

/// The stats routes' query and answer format, every problem of both reported.
pub fn stats_request(
    params: &StatsPageParams,
    now: Timestamp,
) -> Result<(StatsQuery, PageFormat), Problems> {
    let mut problems = Problems::new();
    let format = page_format(&params.format, false, &mut problems);
    let stats = StatsParams {
        from: params.from.clone(),
        to: params.to.clone(),
        bucket: params.bucket.clone(),
        tz: params.tz.clone(),
    };
    with_format(stats_query(&stats, now), format, problems)
}

/// An inclusive bound: a finite number inside the accepted range of readings.
fn bound(
    v: &Option<String>,
    name: &str,
    default: f64,
    (lo, hi): (f64, f64),
    problems: &mut Problems,
) -> Option<f64> {
    match value(name, v, problems) {
        None => Some(default),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && (lo..=hi).contains(&x) => Some(x),
            _ => {
                problems.push((
                    name.into(),
                    format!("must be a number from {lo} to {hi}, got {v:?}"),
                ));
                None
            }
        },
    }
}

/// `from`, `to` (as for ranges), `tmin`/`tmax` (°C) and `hmin`/`hmax` (%RH),
/// inclusive, each defaulting to the accepted range; `limit`, `cursor`.
pub fn search_query(params: &SearchParams, now: Timestamp) -> Result<SearchQuery, Problems> {
    let mut problems = Problems::new();
    let (from, to) = from_to(&params.from, &params.to, &mut problems);
    let (t, h) = (
        Quantity::Temperature.spec().range,
        Quantity::Humidity.spec().range,
    );
    let tmin = bound(&params.tmin, "tmin", t.0, t, &mut problems);
    let tmax = bound(&params.tmax, "tmax", t.1, t, &mut problems);
    let hmin = bound(&params.hmin, "hmin", h.0, h, &mut problems);
    let hmax = bound(&params.hmax, "hmax", h.1, h, &mut problems);
    for (lo, hi, lo_name, hi_name) in [(tmin, tmax, "tmin", "tmax"), (hmin, hmax, "hmin", "hmax")] {
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo > hi {
                problems.push((lo_name.into(), format!("must not be above {hi_name}")));
            }
        }
    }
    let limit = limit(&params.limit, MAX_LIMIT, &mut problems);
    let cursor = value("cursor", &params.cursor, &mut problems).map(str::to_owned);
    let range = range(from, to, now, &mut problems);
    match (range, tmin, tmax, hmin, hmax, limit) {
        (Some(range), Some(tmin), Some(tmax), Some(hmin), Some(hmax), Some(limit))
            if problems.is_empty() =>
        {
            Ok(SearchQuery {
                range,
                temperature: (tmin, tmax),
                humidity: (hmin, hmax),
                limit,
                cursor,
            })
        }
        _ => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pairs<'a> = [(&'a str, &'a str)];

    /// The pairs as a query string, through the same parsing as the routes.
    fn q<'a>(pairs: &'a Pairs<'a>) -> &'a Pairs<'a> {
        pairs
    }

    fn query<T: DeserializeOwned>(pairs: &Pairs) -> Result<T, Problems> {
        parse(&serde_urlencoded::to_string(pairs).unwrap())
    }

    fn readings_query(pairs: &Pairs, now: Timestamp) -> Result<ReadingsQuery, Problems> {
        super::readings_query(&query(pairs)?, now, MAX_LIMIT)
    }

    fn stats_query(pairs: &Pairs, now: Timestamp) -> Result<StatsQuery, Problems> {
        super::stats_query(&query(pairs)?, now)
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap()
    }

    fn names(p: Problems) -> Vec<String> {
        p.into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn defaults_cover_the_last_24_hours() {
        let r = readings_query(q(&[]), now()).unwrap();
        assert_eq!(r.range.from().to_string(), "2026-11-21T00:00:00.001Z");
        assert_eq!(r.range.last().to_string(), "2026-11-22T00:00:00.000Z");
        assert_eq!((r.limit, r.order, r.cursor), (100, Order::Asc, None));
    }

    #[test]
    fn offsets_whose_plus_became_a_space_still_parse() {
        let r = readings_query(
            q(&[
                ("from", "2026-11-21T09:00:00 09:00"),
                ("to", "2026-11-21T01:00:00Z"),
            ]),
            now(),
        )
        .unwrap();
        assert_eq!(r.range.from().to_string(), "2026-11-21T00:00:00.000Z");
    }

    #[test]
    fn every_bad_parameter_is_named() {
        let p = readings_query(
            q(&[
                ("from", "nope"),
                ("limit", "0"),
                ("order", "up"),
                ("to", "2026-11-21T00:00:00Z"),
            ]),
            now(),
        )
        .unwrap_err();
        assert_eq!(names(p), vec!["from", "limit", "order"]);
        assert_eq!(
            names(readings_query(q(&[("limit", "1001")]), now()).unwrap_err()),
            vec!["limit"]
        );
        assert_eq!(
            names(readings_query(q(&[("limit", "-1")]), now()).unwrap_err()),
            vec!["limit"]
        );
        assert_eq!(
            names(readings_query(q(&[("form", "x")]), now()).unwrap_err()),
            vec!["form"]
        );
        assert_eq!(
            names(readings_query(q(&[("order", "asc"), ("order", "desc")]), now()).unwrap_err()),
            vec!["order"]
        );
        assert_eq!(
            names(readings_query(q(&[("limit", &"9".repeat(65))]), now()).unwrap_err()),
            vec!["limit"]
        );
    }

    #[test]
    fn columns_pages_take_up_to_ten_thousand_readings_objects_a_thousand() {
        let request = |pairs: &Pairs| super::readings_request(&query(pairs).unwrap(), now());
        let (columns, format, labels) =
            request(q(&[("format", "columns"), ("limit", "10000")])).unwrap();
        assert_eq!(
            (columns.limit, format, labels),
            (10_000, PageFormat::Columns, Labels::Each)
        );
        let too_many = request(q(&[("format", "columns"), ("limit", "10001")])).unwrap_err();
        assert_eq!(names(too_many.clone()), vec!["limit"]);
        assert!(too_many[0].1.contains("1 to 10000"), "{too_many:?}");
        let objects = request(q(&[("format", "objects"), ("limit", "1001")])).unwrap_err();
        assert!(objects[0].1.contains("1 to 1000,"), "{objects:?}");
        assert_eq!(
            names(request(q(&[("limit", "5000")])).unwrap_err()),
            vec!["limit"]
        );
    }

    /// Arrays are a page of readings' shape: the stats answer, already an
    /// array a bucket in columns, does not take it.
    #[test]
    fn stats_take_objects_or_columns() {
        let request = |pairs: &Pairs| super::stats_request(&query(pairs).unwrap(), now());
        let (_, format) = request(q(&[("bucket", "1d"), ("format", "columns")])).unwrap();
        assert_eq!(format, PageFormat::Columns);
        let arrays = request(q(&[("bucket", "1d"), ("format", "arrays")])).unwrap_err();
        assert_eq!(names(arrays.clone()), vec!["format"]);
        assert!(
            arrays[0]
                .1
                .contains("\"objects\" or \"columns\", got \"arrays\""),
            "{arrays:?}"
        );
    }

    #[test]
    fn labels_once_is_a_columns_page_option() {
        let request = |pairs: &Pairs| super::readings_request(&query(pairs).unwrap(), now());
        let (_, format, labels) = request(q(&[("format", "columns"), ("labels", "once")])).unwrap();
        assert_eq!((format, labels), (PageFormat::Columns, Labels::Once));
        let (_, _, labels) = request(q(&[("format", "columns"), ("labels", "each")])).unwrap();
        assert_eq!(labels, Labels::Each);
        // An arrays page is a columns page on its side: the same labels,
        // and as many readings a page.
        let (arrays, format, labels) = request(q(&[
            ("format", "arrays"),
            ("labels", "once"),
            ("limit", "10000"),
        ]))
        .unwrap();
        assert_eq!(
            (arrays.limit, format, labels),
            (10_000, PageFormat::Arrays, Labels::Once)
        );
        // Objects name their labels in each object: `once` there is a mistake.
        let objects = request(q(&[("labels", "once")])).unwrap_err();
        assert_eq!(names(objects.clone()), vec!["labels"]);
        assert!(
            objects[0]
                .1
                .contains("format=columns and format=arrays only"),
            "{objects:?}"
        );
        let typo = request(q(&[("format", "columns"), ("labels", "one")])).unwrap_err();
        assert!(typo[0].1.contains("\"each\" or \"once\""), "{typo:?}");
        // Every problem is reported, the query's first.
        let both = request(q(&[("limit", "0"), ("format", "rows"), ("labels", "x")])).unwrap_err();
        assert_eq!(names(both), vec!["limit", "format", "labels"]);
    }

    #[test]
    fn stats_parameters_are_checked_and_bucket_counts_bounded() {
        let tokyo = stats_query(q(&[("bucket", "1d"), ("tz", "Asia/Tokyo")]), now()).unwrap();
        assert_eq!(
            (tokyo.bucketing.width(), tokyo.bucketing.tz_name()),
            (Width::Day, "Asia/Tokyo")
        );
        assert_eq!(
            stats_query(q(&[]), now()).unwrap().bucketing.width(),
            Width::Hour
        );
        let year = [
            ("from", "2025-01-01T00:00:00Z"),
            ("to", "2026-01-01T00:00:00Z"),
        ];
        assert!(stats_query(q(&[year[0], year[1], ("bucket", "1d")]), now()).is_ok());
        assert_eq!(
            names(stats_query(q(&[year[0], year[1], ("bucket", "1m")]), now()).unwrap_err()),
            vec!["bucket"]
        );
        assert_eq!(
            names(stats_query(q(&[("bucket", "2h"), ("tz", "Mars/Olympus")]), now()).unwrap_err()),
            vec!["bucket", "tz"]
        );
        assert_eq!(
            names(stats_query(q(&[("limit", "5")]), now()).unwrap_err()),
            vec!["limit"]
        );
    }

    #[test]
    fn from_must_be_before_to() {
        let p = readings_query(
            q(&[
                ("from", "2026-11-21T00:00:00Z"),
                ("to", "2026-11-21T00:00:00Z"),
            ]),
            now(),
        )
        .unwrap_err();
        assert_eq!(names(p), vec!["from"]);
    }
}
