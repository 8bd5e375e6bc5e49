//! How an HTTP request presents the token (`auth` judges it): the
//! `Authorization: Bearer` header, or the dashboard's session cookie.

use crate::auth::{BearerToken, SESSION_COOKIE};
use axum::http::HeaderMap;

/// True when `Authorization: Bearer <token>` carries the token.
pub fn bearer(token: &BearerToken, headers: &HeaderMap) -> bool {
    let Some(value) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, presented)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && token.admits_token(presented)
}

/// True when the request carries the token's session cookie.
pub fn session(token: &BearerToken, headers: &HeaderMap) -> bool {
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(name, value)| name == SESSION_COOKIE && token.admits_session_value(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let t = BearerToken::new("s3cret-token").unwrap();
        let auth = |v: &str| bearer(&t, &headers("authorization", v));
        assert!(auth("Bearer s3cret-token"));
        assert!(auth("bearer s3cret-token"));
        assert!(!auth("Bearer s3cret-tokem"));
        assert!(!auth("Bearer s3cret-token-longer"));
        assert!(!auth("Basic s3cret-token"));
        assert!(!auth("s3cret-token"));
        assert!(!bearer(&t, &HeaderMap::new()));
    }

    #[test]
    fn only_the_token_s_session_cookie_is_admitted() {
        let t = BearerToken::new("s3cret-token").unwrap();
        let cookie = format!("a=b; {SESSION_COOKIE}={}", t.session_value());
        assert!(session(&t, &headers("cookie", &cookie)));
        let other = BearerToken::new("other").unwrap();
        assert!(!session(&other, &headers("cookie", &cookie)));
        assert!(!session(
            &t,
            &headers("cookie", "ingester_session=s3cret-token")
        ));
        assert!(!session(&t, &HeaderMap::new()));
    }
}
