//! A room's page (`GET /ui/rooms/{id}`): its climate and its devices.

use super::super::error::ApiError;
use super::super::extract::{Id, Params};
use super::super::params::{self, DashboardParams};
use super::overview::climate_of;
use super::overview::firing;
use super::pages;
use super::plots::draw;
use super::plots::Plot;
use super::plots::PAGE_SIZES;
use super::sign_in::login_page;
use super::sign_in::may_read;
use super::view::view;
use super::{html, AppState};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use domain::model::{Quantity, RoomId, Timestamp};
use storage::Store;
use usecases::query::{self, Partition};

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
