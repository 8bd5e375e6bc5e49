//! The overview (`GET /`): rooms with their latest climate, each meter's
//! energy, devices, and what is firing, at any fleet size.

use super::super::error::ApiError;
use super::super::extract::Params;
use super::super::params::{self, DashboardParams, OverviewParams};
use super::super::state::App;
use super::sign_in::login_page;
use super::sign_in::may_read;
use super::view::view;
use super::{charts, energy, pages};
use super::{html, AppState, DAY_MS, HOUR_MS, SIDE_BY_SIDE};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use domain::aggregate::{Bucketing, Width};
use domain::model::{DeviceId, Quantity, TimeRange, Timestamp};
use futures_util::{future, stream, FutureExt, StreamExt, TryStreamExt};
use storage::{RegistrySnapshot, RoomRecord, Store};
use usecases::query::{self, Partition, StatsQuery};

/// Rooms and devices on the overview when it pages (over a fleet, or a
/// search): a screenful each, and a link to the next.
pub(super) const OVERVIEW_ROOMS: usize = 24;

pub(super) const OVERVIEW_DEVICES: usize = 50;

/// What the overview shows of the registry: all of it (a household's), or
/// a page of rooms and of devices (over a fleet, or what a search found).
pub(super) struct Shown {
    rooms: Vec<(RoomRecord, Vec<Quantity>)>,
    devices: Vec<storage::DeviceRecord>,
    paging: Option<pages::Paging>,
}

pub(super) async fn shown<S: Store>(app: &App<S>, p: &OverviewParams) -> Result<Shown, ApiError> {
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
pub(super) fn climate_of(devices: &[&storage::DeviceRecord]) -> Vec<Quantity> {
    [Quantity::Temperature, Quantity::Humidity]
        .into_iter()
        .filter(|q| devices.iter().any(|d| d.quantities.contains(q)))
        .collect()
}

/// A held room's devices, from the held registry.
pub(super) fn devices_of<'a>(
    room: &RoomRecord,
    registry: &'a RegistrySnapshot,
) -> Vec<&'a storage::DeviceRecord> {
    room.devices
        .iter()
        .filter_map(|d| registry.devices.get(d))
        .collect()
}

/// The alert series that fire now, of the devices `wanted` keeps, oldest first.
pub(super) async fn firing<S: Store>(
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
