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
//!
//! A file per page (`overview`, `device_page`, `room_page`), the charts
//! alone (`chart_routes`) and signing in (`sign_in`); what a page's
//! parameters ask for (`view`), its charts' data and drawing (`plots`,
//! `charts`, `ticks`, `energy`), its HTML (`pages`).

pub mod charts;
pub mod energy;
mod pages;
pub mod ticks;

mod chart_routes;
mod device_page;
mod overview;
mod plots;
mod room_page;
mod sign_in;
mod view;
use super::params;
use super::state::App;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
pub use chart_routes::{device_chart, room_chart};
pub use device_page::device_page;
pub use overview::overview;
pub use plots::{Drawn, Plot, PAGE_SIZES};
pub use room_page::room_page;
pub use sign_in::login;
use std::sync::Arc;
pub use view::{view, View, PICKS};

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
