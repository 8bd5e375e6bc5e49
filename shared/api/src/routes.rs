//! One handler per route: typed input in (the extractors have checked it),
//! a use case, a typed answer out. Errors are `ApiError`s.

use super::extract::{Body, Id, Params, PathId};
use super::params::{self, NoParams, RangeParams, SearchParams, StatsPageParams, StatsParams};
use super::views::{self, DeviceView, RoomView};
use super::{profile, ApiError, App};
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::model::{DeviceId, RoomId, Timestamp};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use storage::metering::metered;
use storage::{Store, ZIndex};
use usecases::ingest;
use usecases::query::{self, Partition};
use usecases::registry;

type AppState<S> = State<Arc<App<S>>>;

/// What has readings of its own: a device, or a room (through its devices).
pub trait Owner: PathId {
    /// Its path, with `{id}`.
    const PATH: &'static str;
    /// The key naming it in an aggregate answer.
    const KEY: &'static str;
    /// Whether its readings can come from more than one device.
    const MANY_DEVICES: bool;
    fn partition(&self) -> Partition<'_>;
    fn z_index(&self) -> ZIndex<'_>;
    fn name(&self) -> &str;
}

macro_rules! owner {
    ($ty:ty, $path:literal, $key:literal, $variant:ident, $many:literal) => {
        impl Owner for $ty {
            const PATH: &'static str = $path;
            const KEY: &'static str = $key;
            const MANY_DEVICES: bool = $many;
            fn partition(&self) -> Partition<'_> {
                Partition::$variant(self)
            }
            fn z_index(&self) -> ZIndex<'_> {
                ZIndex::$variant(self)
            }
            fn name(&self) -> &str {
                self.as_str()
            }
        }
    };
}
owner!(DeviceId, "/devices/{id}", "device_id", Device, false);
owner!(RoomId, "/rooms/{id}", "room_id", Room, true);

/// `GET {owner}/readings`: a page of its readings.
pub async fn readings<S: Store, O: Owner>(
    State(app): AppState<S>,
    Id(id): Id<O>,
    Params(p): Params<RangeParams>,
) -> Answer {
    let (q, format, labels) =
        params::readings_request(&p, Timestamp::now()).map_err(ApiError::InvalidParameters)?;
    let (page, units) = metered(query::readings(&app.store, id.partition(), &q)).await;
    page_answer(page?, format, labels, O::MANY_DEVICES, units)
}

/// `GET {owner}/stats`: min/max/mean/count per bucket.
pub async fn stats<S: Store, O: Owner>(
    State(app): AppState<S>,
    Id(id): Id<O>,
    Params(p): Params<StatsPageParams>,
) -> Answer {
    let (q, format) =
        params::stats_request(&p, Timestamp::now()).map_err(ApiError::InvalidParameters)?;
    let (buckets, units) = metered(query::stats(&app.store, id.partition(), &q)).await;
    let buckets = buckets?;
    let columns = format == params::PageFormat::Columns;
    let answer = views::stats((O::KEY, id.name()), &q, &buckets, columns);
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        answer.to_json_with_read_units(units),
    )
        .into_response())
}

/// `GET {owner}/search`: readings inside a time × temperature × humidity box.
pub async fn search<S: Store, O: Owner>(
    State(app): AppState<S>,
    Id(id): Id<O>,
    Params(p): Params<SearchParams>,
) -> Answer {
    if !query::indexes(&app.store).box_search {
        return Err(ApiError::IndexDisabled {
            what: "box search",
            setting: "BoxSearch",
        });
    }
    let q = params::search_query(&p, Timestamp::now()).map_err(ApiError::InvalidParameters)?;
    let (page, units) = metered(query::search(&app.store, id.z_index(), &q)).await;
    ok(Metered::new(page?, units))
}
type Answer = Result<Response, ApiError>;

/// A 200 with `v` as JSON, serialised straight into the body (no JSON tree).
fn ok<T: Serialize>(v: T) -> Answer {
    ok_sized(v, 16 * 1024)
}

/// `ok` into a body of `size` bytes to start with: axum's `Json` starts its
/// buffer at 128 bytes, and a year of daily buckets (84 KB) then grew it a
/// dozen times, copying each time.
fn ok_sized<T: Serialize>(v: T, size: usize) -> Answer {
    let mut body = Vec::with_capacity(size);
    if super::json::to_writer(&mut body, &v).is_err() {
        // What `Json` answers for a value that does not serialise.
        return Ok(Json(v).into_response());
    }
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// A page of readings in the asked format.
fn page_answer(
    page: query::ReadingsPage,
    format: params::PageFormat,
    labels: params::Labels,
    devices: bool,
    read_units: f64,
) -> Answer {
    // Sized for the page (about 130 bytes a reading as objects), so a page
    // is not grown and copied; a columns page sizes itself.
    let n = page.readings.len();
    match format {
        params::PageFormat::Objects => ok_sized(Metered::new(page, read_units), 1024 + n * 160),
        params::PageFormat::Columns => Ok((
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            views::ColumnsPage::new(&page, devices, labels).to_json_with_read_units(read_units),
        )
            .into_response()),
        params::PageFormat::Arrays => Ok((
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            views::ColumnsPage::new(&page, devices, labels)
                .to_arrays_json_with_read_units(read_units),
        )
            .into_response()),
    }
}

/// An answer with the read units its reads consumed (docs/cost.md): as
/// DynamoDB reported them, or as the embedded store computes them.
#[derive(Serialize)]
struct Metered<T: Serialize> {
    #[serde(flatten)]
    answer: T,
    read_units: f64,
}

impl<T: Serialize> Metered<T> {
    fn new(answer: T, read_units: f64) -> Self {
        Self { answer, read_units }
    }
}

/// `{"<key>": value}`, serialised without building a JSON tree of the value
/// (the device list of a big home is hundreds of KB).
struct Keyed<'a, T>(&'static str, &'a T);

impl<T: Serialize> Serialize for Keyed<'_, T> {
    fn serialize<Se: Serializer>(&self, serializer: Se) -> Result<Se::Ok, Se::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
}

/// `{"<key>": [...], "next_cursor": "..."}`, the cursor only where more
/// may follow: a household's list, one page, is the answer it always was.
struct ListView<'a, T> {
    key: &'static str,
    items: &'a T,
    next_cursor: Option<&'a str>,
}

impl<T: Serialize> Serialize for ListView<'_, T> {
    fn serialize<Se: Serializer>(&self, serializer: Se) -> Result<Se::Ok, Se::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = self.next_cursor {
            map.serialize_entry("next_cursor", next)?;
        }
        map.end()
    }
}

pub async fn post_readings<S: Store>(
    State(app): AppState<S>,
    _: Params<NoParams>,
    Body(body): Body,
) -> Answer {
    let out = ingest::ingest(
        &app.store,
        &app.registry,
        ingest::Wire::Json(&body),
        Timestamp::now(),
    )
    .await?;
    let mut answer = json!({ "written": out.written });
    if out.duplicates > 0 {
        answer["duplicates"] = json!(out.duplicates);
    }
    ok(answer)
}

pub async fn put_device<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<DeviceId>,
    _: Params<NoParams>,
    Body(body): Body,
) -> Answer {
    let profile = profile::parse(&body, true)?;
    let device = registry::profile::set_device_profile(
        &app.store,
        &app.registry,
        &id,
        profile.name.as_ref(),
        profile.room.as_ref(),
    )
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("no device {id}")))?;
    ok(Keyed("device", &DeviceView::from(&device)))
}

pub async fn put_room<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<RoomId>,
    _: Params<NoParams>,
    Body(body): Body,
) -> Answer {
    let profile = profile::parse(&body, false)?;
    let room =
        registry::profile::set_room_name(&app.store, &app.registry, &id, profile.name.as_ref())
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no room {id}")))?;
    ok(Keyed("room", &RoomView::from(&room)))
}

pub async fn devices<S: Store>(
    State(app): AppState<S>,
    Params(p): Params<params::DeviceListParams>,
) -> Answer {
    let q = params::device_list(&p).map_err(ApiError::InvalidParameters)?;
    let page = registry::list::devices(&app.store, q.filter, q.limit, q.cursor.as_deref()).await?;
    let devices: Vec<DeviceView> = page.items.iter().map(DeviceView::from).collect();
    ok(ListView {
        key: "devices",
        items: &devices,
        next_cursor: page.next_cursor.as_deref(),
    })
}

pub async fn device<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<DeviceId>,
    _: Params<NoParams>,
) -> Answer {
    match query::device(&app.store, &app.registry, &id).await? {
        Some(d) => ok(Keyed("device", &DeviceView::from(&d))),
        None => Err(ApiError::NotFound(format!("no device {id}"))),
    }
}

pub async fn device_latest<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<DeviceId>,
    _: Params<NoParams>,
) -> Answer {
    match query::latest(&app.store, &id).await? {
        Some(r) => ok(Keyed("reading", &r)),
        None => Err(ApiError::NotFound(format!("no readings of device {id}"))),
    }
}

pub async fn device_energy<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<DeviceId>,
    Params(p): Params<StatsParams>,
) -> Answer {
    let q = params::stats_query(&p, Timestamp::now()).map_err(ApiError::InvalidParameters)?;
    let (buckets, units) = metered(query::energy(&app.store, &id, &q)).await;
    ok(Metered::new(views::energy(&id, &q, &buckets?), units))
}

pub async fn rooms<S: Store>(
    State(app): AppState<S>,
    Params(p): Params<params::RoomListParams>,
) -> Answer {
    let q = params::room_list(&p).map_err(ApiError::InvalidParameters)?;
    let page = registry::list::rooms(&app.store, q.filter, q.limit, q.cursor.as_deref()).await?;
    let rooms: Vec<RoomView> = page.items.iter().map(RoomView::from).collect();
    ok(ListView {
        key: "rooms",
        items: &rooms,
        next_cursor: page.next_cursor.as_deref(),
    })
}

/// A room and a page of the devices that reported in it.
pub async fn room<S: Store>(
    State(app): AppState<S>,
    Id(id): Id<RoomId>,
    Params(p): Params<params::ListPageParams>,
) -> Answer {
    let (limit, cursor) = params::list_page(&p).map_err(ApiError::InvalidParameters)?;
    let Some(room) = query::room(&app.store, &app.registry, &id).await? else {
        return Err(ApiError::NotFound(format!("no room {id}")));
    };
    let filter = storage::DeviceFilter {
        room: Some(id),
        ..Default::default()
    };
    let page = registry::list::devices(&app.store, filter, limit, cursor.as_deref()).await?;
    let devices: Vec<DeviceView> = page.items.iter().map(DeviceView::from).collect();
    let mut answer = json!({ "room": RoomView::from(&room), "devices": devices });
    if let Some(next) = page.next_cursor {
        answer["next_cursor"] = json!(next);
    }
    ok(answer)
}

pub async fn all_readings<S: Store>(
    State(app): AppState<S>,
    Params(p): Params<RangeParams>,
) -> Answer {
    if !query::indexes(&app.store).all_devices {
        return Err(ApiError::IndexDisabled {
            what: "the all-devices feed",
            setting: "AllDevicesFeed",
        });
    }
    let (q, format, labels) =
        params::readings_request(&p, Timestamp::now()).map_err(ApiError::InvalidParameters)?;
    let (page, units) = metered(query::all_readings(&app.store, &q)).await;
    page_answer(page?, format, labels, true, units)
}

/// A path the API does not have, or a route another function serves.
pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route {method} {}", uri.path()))
}
