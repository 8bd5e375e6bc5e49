//! A device's page (`GET /ui/devices/{id}`): its latest values and charts.

use super::super::error::ApiError;
use super::super::extract::{Id, Params};
use super::super::params::DashboardParams;
use super::overview::firing;
use super::plots::draw;
use super::plots::plots;
use super::plots::PAGE_SIZES;
use super::sign_in::login_page;
use super::sign_in::may_read;
use super::view::view;
use super::{energy, pages};
use super::{html, AppState};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use domain::model::{DeviceId, RoomId, Timestamp};
use storage::Store;
use usecases::query::{self, Partition};

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
