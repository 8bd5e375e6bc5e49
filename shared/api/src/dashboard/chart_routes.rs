//! A chart alone as SVG (`GET /ui/devices/{id}/chart`, `/ui/rooms/{id}/chart`),
//! for a page's picks without reloading it.

use super::super::error::ApiError;
use super::super::extract::{Id, Params};
use super::super::params::DashboardParams;
use super::pages;
use super::plots::draw;
use super::plots::Plot;
use super::sign_in::may_read;
use super::view::view;
use super::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use domain::model::{DeviceId, RoomId, Timestamp};
use storage::Store;
use usecases::query::{self, Partition};

/// `quantity` and the view's parameters, for the image routes.
pub(super) fn chart_params(
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

pub(super) fn svg_response(svg: String) -> Response {
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
