//! The device and room lists a page at a time (issue 76): a request's
//! filter and cursor → one page read from the store (never the whole
//! registry), and the cursor for the next. A cursor is bound to its list
//! and filter (`keys::encode_list_cursor`), so a tampered one, or one of
//! another list, is refused.

use crate::query::QueryError;
use domain::model::{DeviceId, RoomId};
use storage::keys::{decode_list_cursor, encode_list_cursor, CursorError};
use storage::{
    DeviceFilter, DeviceListRequest, DeviceRecord, RoomFilter, RoomListRequest, RoomRecord, Store,
};

/// Records of a list page, and the cursor of the next when more may follow.
#[derive(Debug, Clone)]
pub struct ListAnswer<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A page of the list of devices a filter admits.
pub async fn devices<S: Store>(
    store: &S,
    filter: DeviceFilter,
    limit: usize,
    cursor: Option<&str>,
) -> Result<ListAnswer<DeviceRecord>, QueryError> {
    let scope = format!("devices?{}", filter.canonical());
    let after = cursor
        .map(|c| {
            let id = decode_list_cursor(&scope, c)?;
            DeviceId::parse(&id).map_err(|_| CursorError::Malformed)
        })
        .transpose()?;
    let page = store
        .device_page(&DeviceListRequest {
            filter,
            after,
            limit,
        })
        .await?;
    Ok(ListAnswer {
        next_cursor: page.next.map(|d| encode_list_cursor(&scope, d.as_str())),
        items: page.items,
    })
}

/// A page of the list of rooms a filter admits.
pub async fn rooms<S: Store>(
    store: &S,
    filter: RoomFilter,
    limit: usize,
    cursor: Option<&str>,
) -> Result<ListAnswer<RoomRecord>, QueryError> {
    let scope = format!("rooms?{}", filter.canonical());
    let after = cursor
        .map(|c| {
            let id = decode_list_cursor(&scope, c)?;
            RoomId::parse(&id).map_err(|_| CursorError::Malformed)
        })
        .transpose()?;
    let page = store
        .room_page(&RoomListRequest {
            filter,
            after,
            limit,
        })
        .await?;
    Ok(ListAnswer {
        next_cursor: page.next.map(|r| encode_list_cursor(&scope, r.as_str())),
        items: page.items,
    })
}
