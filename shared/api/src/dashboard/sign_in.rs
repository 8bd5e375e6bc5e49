//! Signing in: who may read the dashboard, the sign-in page, and the
//! session cookie it sets.

use super::super::error::ApiError;
use super::super::params::LoginForm;
use super::super::state::App;
use super::pages;
use super::{html, AppState};
use crate::auth::SESSION_COOKIE;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use storage::Store;

/// Whether this request may read: reads are open, or it carries the token
/// (bearer header or the session cookie).
pub(super) fn may_read<S>(app: &App<S>, headers: &HeaderMap) -> bool {
    app.access.allows(true, |token| {
        crate::presented::bearer(token, headers) || crate::presented::session(token, headers)
    })
}

/// The sign-in page, in place of a page that needs the token: no data in it.
/// A 200, as sign-in pages are: a browser logs a 401 page load as an error.
pub(super) fn login_page(next: &str) -> Response {
    html(StatusCode::OK, pages::login(next, false))
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
