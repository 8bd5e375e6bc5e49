//! Typed extractors: ids in the path, query parameters into serde structs and
//! the body under the route's size limit. Each rejection is an [`ApiError`]
//! that names what is wrong, so no handler re-checks its input.

use super::{params, ApiError};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use domain::model::{DeviceId, RoomId};
use serde::de::DeserializeOwned;

/// An id that may stand in a path: a device's, a room's or an alert rule's.
pub trait PathId: Sized + Send + Sync + 'static {
    /// What it is, for the 400 (`invalid device id in the path: ...`).
    const WHAT: &'static str;
    fn parse_path(s: &str) -> Result<Self, String>;
}

macro_rules! path_id {
    ($ty:ty, $what:literal) => {
        impl PathId for $ty {
            const WHAT: &'static str = $what;
            fn parse_path(s: &str) -> Result<Self, String> {
                <$ty>::parse(s).map_err(|e| e.to_string())
            }
        }
    };
}
path_id!(DeviceId, "device id");
path_id!(RoomId, "room id");
path_id!(domain::alerts::RuleName, "rule name");

/// The `{id}` of the path, percent-decoded and parsed.
pub struct Id<T>(pub T);

impl<T: PathId, S: Send + Sync> FromRequestParts<S> for Id<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::InvalidPath {
                what: "segment",
                message: "not valid UTF-8 after percent-decoding".into(),
            })?;
        T::parse_path(&raw)
            .map(Id)
            .map_err(|message| ApiError::InvalidPath {
                what: T::WHAT,
                message,
            })
    }
}

/// The query string as a serde struct. The structs deny unknown fields, so a
/// typo such as `form=` is a 400 naming it, as is a parameter given twice.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        params::parse(parts.uri.query().unwrap_or(""))
            .map(Params)
            .map_err(ApiError::InvalidParameters)
    }
}

/// The request body, read under the limit that `layers::body_limit` set for its route.
pub struct Body(pub Bytes);

/// The limit of the route, put in the request by `layers::body_limit` for the message.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let limit = req.extensions().get::<BodyLimit>().copied();
        Bytes::from_request(req, state)
            .await
            .map(Body)
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::TooLarge(match limit {
                        Some(BodyLimit(n)) => format!("the body is over the limit of {n} bytes"),
                        None => "the body is too large".to_owned(),
                    })
                } else {
                    ApiError::UnreadableBody(rejection.body_text())
                }
            })
    }
}
