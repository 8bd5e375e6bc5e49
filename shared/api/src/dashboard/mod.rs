//! The dashboard (docs/dashboard.md): server-rendered pages over the same
//! store and queries as the JSON API, served by the same Router (the query
//! function on AWS, `ingester-local serve` at home).
//!
//! - `/`: every room (latest temperature and humidity, a 24-hour sparkline),
//!   every device (room, last seen, quiet ones flagged), energy today and yesterday;
//! - `/ui/devices/{id}`, `/ui/rooms/{id}`: a chart per quantity over a range,
//!   energy bars for meters, the latest reading, renaming;
//! - `/devices/{id}/chart.svg`, `/rooms/{id}/chart.svg`: the same charts as images;
//! - `POST /ui/login`: the token once, kept as a session cookie.

pub mod charts;
pub mod energy;
mod pages;
pub mod ticks;

use super::error::ApiError;
use super::extract::{Id, Params};
use super::params::{self, DashboardParams, LoginForm, OverviewParams};
use super::state::App;
use crate::auth::SESSION_COOKIE;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use charts::{BandPoint, Bar, Chart, Data, Line};
use chrono::TimeZone;
use domain::aggregate::{Bucketing, Width};
use domain::model::Zone;
use domain::model::{DeviceId, Quantity, QuantityKind, RoomId, TimeRange, Timestamp};
use futures_util::{future, stream, FutureExt, StreamExt, TryStreamExt};
use std::sync::Arc;
use storage::{Order, RegistrySnapshot, RoomRecord, Store};
use usecases::query::{self, Partition, StatsQuery};

type AppState<S> = State<Arc<App<S>>>;

/// A device is flagged quiet after this long without a reading.
pub const QUIET_AFTER_MS: i64 = 60 * 60 * 1000;
/// Raw readings drawn at most; a longer short range is drawn as 5-minute buckets.
const MAX_RAW_POINTS: usize = 3000;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// How many rooms' or meters' reads the overview makes side by side: two
/// halve its round trips; four held the dashboard function's peak RSS at
/// 1.49 to 1.50 of the SDK's floor and eight at 1.53 to 1.55, against the
/// bound of 1.5 (issue 43; two: 1.45 to 1.46, as one at a time).
const SIDE_BY_SIDE: usize = 2;

/// The ranges the picker offers, ending now, and their days.
pub const PICKS: [(&str, i64); 4] = [("24h", 1), ("7d", 7), ("30d", 30), ("1y", 365)];

/// What a page or chart shows: its range, zone and how it is drawn.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// The picked range (`24h`, ...), or `None` for a custom one.
    pub pick: Option<&'static str>,
    pub range: TimeRange,
    pub tz: Zone,
}

impl View {
    /// Raw lines up to two days; hourly bands up to two months; daily beyond.
    fn band_width(&self) -> Option<Width> {
        let ms = self.range.to().millis() - self.range.from().millis();
        if ms <= 2 * DAY_MS {
            None
        } else if ms <= 62 * DAY_MS {
            Some(Width::Hour)
        } else {
            Some(Width::Day)
        }
    }

    fn energy_width(&self) -> Width {
        let ms = self.range.to().millis() - self.range.from().millis();
        if ms <= 2 * DAY_MS {
            Width::Hour
        } else if ms <= 62 * DAY_MS {
            Width::Day
        } else {
            Width::Month
        }
    }

    fn query(&self, width: Width) -> StatsQuery {
        StatsQuery {
            range: self.range,
            bucketing: Bucketing::new(width, Some(self.tz)),
        }
    }

    /// The query string that gives this view again (for links and image URLs).
    pub fn query_string(&self) -> String {
        let tz = self.tz.name();
        match self.pick {
            None => format!("from={}&to={}&tz={tz}", self.range.from(), self.range.to()),
            Some(pick) => format!("range={pick}&tz={tz}"),
        }
    }
}

/// `range` (24h, 7d, 30d, 1y; default 24h) or `from` and `to`, and `tz`.
pub fn view(p: &DashboardParams, now: Timestamp) -> Result<View, ApiError> {
    let mut problems = Vec::new();
    let tz = match p.tz.as_deref() {
        None | Some("") => Zone::UTC,
        Some(v) => v.parse::<Zone>().unwrap_or_else(|_| {
            problems.push(("tz".into(), format!("{v:?} is not an IANA time zone name")));
            Zone::UTC
        }),
    };
    let (pick, range) = match (&p.range, &p.from) {
        (Some(_), Some(_)) => {
            problems.push((
                "range".into(),
                "give `range` or `from`/`to`, not both".into(),
            ));
            (None, None)
        }
        (_, Some(_)) => {
            // The custom range form's `datetime-local` values have no zone:
            // they are wall time in `tz`.
            let local = |v: &Option<String>| {
                v.as_ref().map(|v| {
                    chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M")
                        .ok()
                        .and_then(|t| tz.from_local_datetime(&t).earliest())
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_else(|| v.clone())
                })
            };
            match super::params::time_range(&local(&p.from), &local(&p.to), now) {
                Ok(range) => (None, Some(range)),
                Err(e) => {
                    problems.extend(e);
                    (None, None)
                }
            }
        }
        (pick, None) => {
            let wanted = pick.as_deref().unwrap_or("24h");
            let Some(&(pick, days)) = PICKS.iter().find(|(name, _)| *name == wanted) else {
                problems.push((
                    "range".into(),
                    format!("must be one of 24h, 7d, 30d, 1y, got {wanted:?}"),
                ));
                return Err(ApiError::InvalidParameters(problems));
            };
            if p.to.is_some() {
                problems.push(("to".into(), "`to` goes with `from`".into()));
            }
            let to = now;
            let from = to.saturating_add_millis(-days * DAY_MS);
            (Some(pick), TimeRange::new(from, to).ok())
        }
    };
    match range {
        Some(range) if problems.is_empty() => Ok(View { pick, range, tz }),
        _ => Err(ApiError::InvalidParameters(problems)),
    }
}

/// Whether this request may read: reads are open, or it carries the token
/// (bearer header or the session cookie).
fn may_read<S>(app: &App<S>, headers: &HeaderMap) -> bool {
    app.access.allows(true, |token| {
        crate::presented::bearer(token, headers) || crate::presented::session(token, headers)
    })
}

fn html(status: StatusCode, body: maud::Markup) -> Response {
    let mut r = (status, body.into_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Our own styles and two small scripts only: no CDN, nothing inline from elsewhere.
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The sign-in page, in place of a page that needs the token: no data in it.
/// A 200, as sign-in pages are: a browser logs a 401 page load as an error.
fn login_page(next: &str) -> Response {
    html(StatusCode::OK, pages::login(next, false))
}

/// Points of one gauge quantity: raw lines, or a band of buckets.
async fn gauge_data<S: Store>(
    store: &S,
    partition: Partition<'_>,
    quantity: Quantity,
    view: &View,
) -> Result<Data, ApiError> {
    let name = quantity.name();
    if view.band_width().is_none() {
        let request = query::ReadingsQuery {
            range: view.range,
            order: Order::Asc,
            limit: MAX_RAW_POINTS + 1,
            cursor: None,
        };
        let page = query::readings(store, partition, &request).await?;
        if page.readings.len() <= MAX_RAW_POINTS {
            // One line per device (a room has several).
            let mut lines: Vec<Line> = Vec::new();
            for r in &page.readings {
                let Some(v) = r.get(quantity) else { continue };
                let label = r.device_id.as_str();
                match lines.iter_mut().find(|l| l.label == label) {
                    Some(line) => line.points.push((r.timestamp.millis(), v)),
                    None => lines.push(Line {
                        label: label.to_owned(),
                        points: vec![(r.timestamp.millis(), v)],
                    }),
                }
            }
            return Ok(Data::Lines(lines));
        }
    }
    let width = view.band_width().unwrap_or(Width::FiveMinutes);
    let stats = query::stats(store, partition, &view.query(width)).await?;
    Ok(Data::Band(
        stats
            .buckets
            .iter()
            .filter_map(|b| {
                let f = b.fields.get(name)?;
                Some(BandPoint {
                    start: b.start.millis(),
                    end: b.end.millis(),
                    min: f.min,
                    mean: f.sum / f.count as f64,
                    max: f.max,
                })
            })
            .collect(),
    ))
}

async fn energy_data<S: Store>(
    store: &S,
    device: &DeviceId,
    view: &View,
) -> Result<Data, ApiError> {
    let energy = query::energy(store, device, &view.query(view.energy_width())).await?;
    Ok(Data::Bars(energy.buckets.iter().map(Bar::from).collect()))
}

/// What a chart is of: a gauge quantity, or a meter's energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plot {
    Gauge(Quantity),
    Energy,
}

impl Plot {
    fn parse(s: &str) -> Option<Self> {
        if s == "energy" {
            return Some(Plot::Energy);
        }
        Quantity::parse(s)
            .filter(|q| q.kind() == QuantityKind::Gauge)
            .map(Plot::Gauge)
    }

    pub fn key(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.name(),
            Plot::Energy => "energy",
        }
    }

    /// What the chart's caption calls it, for people.
    pub fn label(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.spec().label,
            Plot::Energy => "Energy",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.spec().unit,
            Plot::Energy => "kWh",
        }
    }
}

/// The plots of a device: its gauges, and energy when it has an
/// electricity counter (bought, sold or both).
fn plots(quantities: impl Iterator<Item = Quantity> + Clone) -> Vec<Plot> {
    let mut out: Vec<Plot> = quantities
        .clone()
        .filter(|q| q.kind() == QuantityKind::Gauge)
        .map(Plot::Gauge)
        .collect();
    if energy::Reported::among(quantities).electricity() {
        out.push(Plot::Energy);
    }
    out
}

/// A page's charts are drawn twice: for a wide screen, and narrower with
/// fewer labels for a phone (CSS shows one), so that text stays readable at
/// 390 px instead of shrinking with the picture.
pub const PAGE_SIZES: [(u32, u32); 2] = [(720, 260), (360, 240)];

/// One chart, drawn.
pub struct Drawn {
    pub plot: Plot,
    /// The chart at the first size asked for.
    pub svg: String,
    /// At the second size, if one was asked for.
    pub narrow: Option<String>,
    pub points: usize,
    /// `[[minutes from the range's start, value], ...]` of the chart's line
    /// (the first line, or the band's mean), for the value under the pointer.
    pub values: String,
}

async fn draw<S: Store>(
    store: &S,
    partition: Partition<'_>,
    plot: Plot,
    view: &View,
    title: &str,
    sizes: &[(u32, u32)],
) -> Result<Drawn, ApiError> {
    let data = match (plot, &partition) {
        (Plot::Energy, Partition::Device(d)) => energy_data(store, d, view).await?,
        (Plot::Energy, Partition::Room(_)) => Data::Bars(Vec::new()),
        (Plot::Gauge(q), _) => gauge_data(store, partition, q, view).await?,
    };
    let mut svgs = sizes.iter().map(|(width, height)| {
        charts::svg(&Chart {
            title,
            unit: plot.unit(),
            from: view.range.from().millis(),
            to: view.range.to().millis(),
            tz: view.tz,
            width: *width,
            height: *height,
            data: &data,
        })
    });
    let (svg, narrow) = (svgs.next().unwrap_or_default(), svgs.next());
    // Minutes from the range's start and values, compact: a day of 1-minute
    // readings is 1440 of them per chart.
    let from = view.range.from().millis();
    let at = |ms: i64| (ms - from) / 60_000;
    let line: Vec<(i64, f64)> = match &data {
        Data::Lines(lines) => lines
            .first()
            .map(|l| l.points.iter().map(|(t, v)| (at(*t), *v)).collect())
            .unwrap_or_default(),
        Data::Band(band) => band
            .iter()
            .map(|p| (at(p.start), (p.mean * 100.0).round() / 100.0))
            .collect(),
        Data::Bars(_) => Vec::new(),
    };
    Ok(Drawn {
        plot,
        points: data.points(),
        svg,
        narrow,
        values: crate::json::to_string(&line),
    })
}

/// Rooms and devices on the overview when it pages (over a fleet, or a
/// search): a screenful each, and a link to the next.
const OVERVIEW_ROOMS: usize = 24;
const OVERVIEW_DEVICES: usize = 50;

/// What the overview shows of the registry: all of it (a household's), or
/// a page of rooms and of devices (over a fleet, or what a search found).
struct Shown {
    rooms: Vec<(RoomRecord, Vec<Quantity>)>,
    devices: Vec<storage::DeviceRecord>,
    paging: Option<pages::Paging>,
}

async fn shown<S: Store>(app: &App<S>, p: &OverviewParams) -> Result<Shown, ApiError> {
    let mut problems = Vec::new();
    let search = params::search(&p.search, &mut problems);
    if !problems.is_empty() {
        return Err(ApiError::InvalidParameters(problems));
    }
    let registry = app.registry.current(&app.store).await;
    let asked_for_pages = search.is_some() || p.cursor.is_some() || p.rooms_cursor.is_some();
    if app.registry.holds_whole() && !asked_for_pages {
        return Ok(Shown {
            rooms: registry
                .rooms
                .values()
                .map(|room| (room.clone(), climate_of(&devices_of(room, &registry))))
                .collect(),
            devices: registry.devices.values().cloned().collect(),
            paging: None,
        });
    }
    let rooms = usecases::registry::list::rooms(
        &app.store,
        storage::RoomFilter {
            prefix: None,
            text: search.clone(),
        },
        OVERVIEW_ROOMS,
        p.rooms_cursor.as_deref(),
    );
    let devices = usecases::registry::list::devices(
        &app.store,
        storage::DeviceFilter {
            text: search.clone(),
            ..Default::default()
        },
        OVERVIEW_DEVICES,
        p.cursor.as_deref(),
    );
    let (rooms, devices) = future::try_join(rooms, devices).await?;
    Ok(Shown {
        rooms: rooms
            .items
            .into_iter()
            .map(|room| (room, vec![Quantity::Temperature, Quantity::Humidity]))
            .collect(),
        devices: devices.items,
        paging: Some(pages::Paging {
            search,
            next_devices: devices.next_cursor,
            next_rooms: rooms.next_cursor,
        }),
    })
}

/// `GET /`: the overview. A household's shows every room, meter and
/// device; over a fleet (or a search), a page of each and a search box.
pub async fn overview<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    Params(p): Params<OverviewParams>,
) -> Result<Response, ApiError> {
    if !may_read(&app, &headers) {
        return Ok(login_page("/"));
    }
    let now = Timestamp::now();
    let view = view(
        &DashboardParams {
            range: p.range.clone(),
            from: p.from.clone(),
            to: p.to.clone(),
            tz: p.tz.clone(),
        },
        now,
    )?;
    let Shown {
        rooms,
        devices,
        paging,
    } = shown(&app, &p).await?;
    let day = TimeRange::new(now.saturating_add_millis(-DAY_MS), now).expect("a day");
    // Each room's and each meter's reads side by side, two at a time: on
    // DynamoDB a household's overview is a couple of hundred calls (224 for
    // twenty meters), which one after another took as many round trips. (Owned records and
    // store: a stream of borrowing closures is not `Send` for every
    // lifetime, which axum's handlers must be.)
    let rooms = stream::iter(rooms)
        .map(|(room, wanted)| {
            let store = app.store.clone();
            async move {
                let q = StatsQuery {
                    range: day,
                    bucketing: Bucketing::new(Width::Hour, None),
                };
                let stats = query::stats(&store, Partition::Room(&room.room_id), &q).await?;
                let points: Vec<(i64, f64)> = stats
                    .buckets
                    .iter()
                    .filter_map(|b| {
                        let f = b.fields.get(Quantity::Temperature.name())?;
                        Some((b.start.millis() + HOUR_MS / 2, f.sum / f.count as f64))
                    })
                    .collect();
                let spark = charts::sparkline(
                    &points,
                    day.from().millis(),
                    day.to().millis(),
                    &format!("{}: temperature, last 24 hours", pages::room_name(&room)),
                );
                let latest = query::latest_values(
                    &store,
                    Partition::Room(&room.room_id),
                    room.latest.as_ref(),
                    &wanted,
                )
                .await?;
                Ok::<_, ApiError>(pages::RoomTile {
                    room,
                    latest,
                    spark,
                })
            }
        })
        .buffered(SIDE_BY_SIDE)
        .try_collect::<Vec<_>>();
    // Today, yesterday, this month and last month in the view's zone, of each meter.
    let cal = energy::Calendar { tz: view.tz, now };
    let meters: Vec<_> = devices
        .iter()
        .filter(|d| energy::is_meter(d))
        .cloned()
        .collect();
    let meters = stream::iter(meters)
        .map(|meter| {
            let store = app.store.clone();
            async move {
                let periods: Vec<energy::Period> = energy::periods(&store, &meter, cal).await?;
                Ok::<_, ApiError>((meter, periods))
            }
        })
        .buffered(SIDE_BY_SIDE)
        .try_collect::<Vec<_>>()
        // Boxed: the compiler cannot otherwise prove this future `Send`
        // for every lifetime of the `&'static str` in its items (rustc
        // issue 102211), which axum's handlers must be.
        .boxed();
    let (rooms, meters) = future::try_join(rooms, meters).await?;
    let alerts = firing(&app.store, |_| true).await?;
    Ok(html(
        StatusCode::OK,
        pages::overview(&pages::Overview {
            alerts: &alerts,
            rooms: &rooms,
            devices: &devices,
            meters: &meters,
            tariff: app.tariff.as_ref(),
            now,
            view: &view,
            paging: paging.as_ref(),
        }),
    ))
}

/// The climate quantities a room's devices report (a room's readings are
/// its climate readings).
fn climate_of(devices: &[&storage::DeviceRecord]) -> Vec<Quantity> {
    [Quantity::Temperature, Quantity::Humidity]
        .into_iter()
        .filter(|q| devices.iter().any(|d| d.quantities.contains(q)))
        .collect()
}

/// A held room's devices, from the held registry.
fn devices_of<'a>(
    room: &RoomRecord,
    registry: &'a RegistrySnapshot,
) -> Vec<&'a storage::DeviceRecord> {
    room.devices
        .iter()
        .filter_map(|d| registry.devices.get(d))
        .collect()
}

/// The alert series that fire now, of the devices `wanted` keeps, oldest first.
async fn firing<S: Store>(
    store: &S,
    wanted: impl Fn(&DeviceId) -> bool,
) -> Result<Vec<pages::Firing>, ApiError> {
    let (rules, _) = usecases::alerts::evaluate::rules(store).await?;
    Ok(usecases::alerts::active(store)
        .await?
        .into_iter()
        .filter(|a| a.firing && wanted(&a.device))
        .map(|a| pages::Firing {
            what: match rules.iter().find(|r| r.name == a.rule) {
                Some(rule) => rule.describe(a.value),
                None => a.value.map(|v| v.to_string()).unwrap_or_default(),
            },
            rule: a.rule,
            device: a.device,
            since: a.since,
        })
        .collect())
}

/// `GET /ui/devices/{id}`.
pub async fn device_page<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    Id(id): Id<DeviceId>,
    Params(p): Params<DashboardParams>,
) -> Result<Response, ApiError> {
    if !may_read(&app, &headers) {
        return Ok(login_page(&format!("/ui/devices/{id}")));
    }
    let view = view(&p, Timestamp::now())?;
    let Some(device) = query::device(&app.store, &app.registry, &id).await? else {
        return Ok(html(
            StatusCode::NOT_FOUND,
            pages::not_found(&format!("No device {id}.")),
        ));
    };
    let mut drawn = Vec::new();
    for plot in plots(device.quantities.iter().copied()) {
        let title = format!("{}: {}", pages::device_name(&device), plot.key());
        drawn.push(
            draw(
                &app.store,
                Partition::Device(&id),
                plot,
                &view,
                &title,
                &PAGE_SIZES,
            )
            .await?,
        );
    }
    let energy = if energy::is_meter(&device) {
        let cal = energy::Calendar {
            tz: view.tz,
            now: Timestamp::now(),
        };
        Some(energy::meter(&app.store, &device, cal).await?)
    } else {
        None
    };
    let alerts = firing(&app.store, |d| d == &id).await?;
    let rooms: Vec<RoomId> = app
        .registry
        .current(&app.store)
        .await
        .rooms
        .keys()
        .cloned()
        .collect();
    let latest = query::latest_values(
        &app.store,
        Partition::Device(&id),
        device.latest.as_ref(),
        &device.quantities.iter().copied().collect::<Vec<_>>(),
    )
    .await?;
    let page = pages::Device {
        latest: &latest,
        device: &device,
        alerts: &alerts,
        charts: &drawn,
        energy: energy.as_ref(),
        tariff: app.tariff.as_ref(),
        view: &view,
        rooms: &rooms,
    };
    Ok(html(StatusCode::OK, pages::device(&page)))
}

/// `GET /ui/rooms/{id}`.
pub async fn room_page<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    Id(id): Id<RoomId>,
    Params(p): Params<DashboardParams>,
) -> Result<Response, ApiError> {
    if !may_read(&app, &headers) {
        return Ok(login_page(&format!("/ui/rooms/{id}")));
    }
    let view = view(&p, Timestamp::now())?;
    let Some(room) = query::room(&app.store, &app.registry, &id).await? else {
        return Ok(html(
            StatusCode::NOT_FOUND,
            pages::not_found(&format!("No room {id}.")),
        ));
    };
    // Its devices a page at a time from the store: a room of a fleet's
    // registry is not held.
    let devices = usecases::registry::list::devices(
        &app.store,
        storage::DeviceFilter {
            room: Some(id.clone()),
            ..Default::default()
        },
        params::LIST_LIMIT,
        None,
    )
    .await?
    .items;
    let mut drawn = Vec::new();
    for q in [Quantity::Temperature, Quantity::Humidity] {
        let title = format!("{}: {}", pages::room_name(&room), q.name());
        drawn.push(
            draw(
                &app.store,
                Partition::Room(&id),
                Plot::Gauge(q),
                &view,
                &title,
                &PAGE_SIZES,
            )
            .await?,
        );
    }
    // The devices in the room now (their latest reading with a room was there).
    let alerts = firing(&app.store, |d| {
        devices
            .iter()
            .any(|r| &r.device_id == d && r.room.as_ref() == Some(&room.room_id))
    })
    .await?;
    // What its newest reading has (a CO2 sensor's too), and the climate
    // quantities its devices report.
    let mut wanted: Vec<Quantity> = room
        .latest
        .iter()
        .flat_map(|r| r.measurement.values().iter().map(|(q, _)| *q))
        .collect();
    for q in climate_of(&devices.iter().collect::<Vec<_>>()) {
        if !wanted.contains(&q) {
            wanted.push(q);
        }
    }
    let latest = query::latest_values(
        &app.store,
        Partition::Room(&id),
        room.latest.as_ref(),
        &wanted,
    )
    .await?;
    Ok(html(
        StatusCode::OK,
        pages::room(&pages::Room {
            room: &room,
            devices: &devices,
            charts: &drawn,
            alerts: &alerts,
            latest: &latest,
            view: &view,
        }),
    ))
}

/// `quantity` and the view's parameters, for the image routes.
fn chart_params(
    p: &super::params::ChartParams,
) -> Result<(Plot, DashboardParams, (u32, u32)), ApiError> {
    let mut problems = Vec::new();
    let plot = match p.quantity.as_deref() {
        None => {
            problems.push((
                "quantity".into(),
                "required: a gauge quantity (temperature, humidity, current_w, ...) or energy"
                    .into(),
            ));
            None
        }
        Some(v) => Plot::parse(v).or_else(|| {
            problems.push((
                "quantity".into(),
                format!("{v:?} is not a gauge quantity or energy"),
            ));
            None
        }),
    };
    let width = match p.width.as_deref() {
        None => Some(720),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|w| (200..=2000).contains(w))
            .or_else(|| {
                problems.push((
                    "width".into(),
                    format!("must be a number of pixels from 200 to 2000, got {v:?}"),
                ));
                None
            }),
    };
    match (plot, width) {
        (Some(plot), Some(w)) if problems.is_empty() => Ok((
            plot,
            DashboardParams {
                range: p.range.clone(),
                from: p.from.clone(),
                to: p.to.clone(),
                tz: p.tz.clone(),
            },
            (w, w * 9 / 25),
        )),
        _ => Err(ApiError::InvalidParameters(problems)),
    }
}

fn svg_response(svg: String) -> Response {
    let mut r = svg.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    r
}

/// `GET /devices/{id}/chart.svg?quantity=...&range=...`.
pub async fn device_chart<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    Id(id): Id<DeviceId>,
    Params(p): Params<super::params::ChartParams>,
) -> Result<Response, ApiError> {
    if !may_read(&app, &headers) {
        return Err(ApiError::Unauthorized);
    }
    let (plot, p, size) = chart_params(&p)?;
    let view = view(&p, Timestamp::now())?;
    let Some(device) = query::device(&app.store, &app.registry, &id).await? else {
        return Err(ApiError::NotFound(format!("no device {id}")));
    };
    let title = format!("{}: {}", pages::device_name(&device), plot.key());
    let drawn = draw(
        &app.store,
        Partition::Device(&id),
        plot,
        &view,
        &title,
        &[size],
    )
    .await?;
    Ok(svg_response(drawn.svg))
}

/// `GET /rooms/{id}/chart.svg?quantity=...&range=...`.
pub async fn room_chart<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    Id(id): Id<RoomId>,
    Params(p): Params<super::params::ChartParams>,
) -> Result<Response, ApiError> {
    if !may_read(&app, &headers) {
        return Err(ApiError::Unauthorized);
    }
    let (plot, p, size) = chart_params(&p)?;
    if plot == Plot::Energy {
        return Err(ApiError::InvalidParameters(vec![(
            "quantity".into(),
            "energy is a device's (a meter's), not a room's".into(),
        )]));
    }
    let view = view(&p, Timestamp::now())?;
    let Some(room) = query::room(&app.store, &app.registry, &id).await? else {
        return Err(ApiError::NotFound(format!("no room {id}")));
    };
    let title = format!("{}: {}", pages::room_name(&room), plot.key());
    let drawn = draw(
        &app.store,
        Partition::Room(&id),
        plot,
        &view,
        &title,
        &[size],
    )
    .await?;
    Ok(svg_response(drawn.svg))
}

/// `POST /ui/login` (a form with `token` and `next`): sets the session
/// cookie and goes back, or shows the form again.
pub async fn login<S: Store>(
    State(app): AppState<S>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::InvalidBody(vec![("body".into(), "not UTF-8".into())]))?;
    let form: LoginForm = super::params::parse(text).map_err(ApiError::InvalidBody)?;
    let next = form
        .next
        .as_deref()
        // A path on this site only: `//host` and `/\host` would leave it.
        .filter(|n| n.starts_with('/') && !n.starts_with("//") && !n.starts_with("/\\"))
        .unwrap_or("/")
        .to_owned();
    let Some(token) = &app.access.token else {
        return Ok((StatusCode::SEE_OTHER, [(header::LOCATION, next)]).into_response());
    };
    if !token.admits_token(form.token.as_deref().unwrap_or("")) {
        return Ok(html(StatusCode::UNAUTHORIZED, pages::login(&next, true)));
    }
    // `Secure` where the page came over HTTPS (API Gateway says so); a home
    // server on plain HTTP would otherwise never get the cookie back.
    let https = headers
        .get("x-forwarded-proto")
        .is_some_and(|v| v.as_bytes() == b"https");
    let cookie = format!(
        "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000{}",
        token.session_value(),
        if https { "; Secure" } else { "" }
    );
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, next)]).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(r)
}
