//! Room reads served from the page cache ([`crate::services::pages`]): the inbox is read
//! far more often than it changes. A page is rendered once (by the caller's `render`, which
//! knows the wire shape) and served until the next write, so its cost does not depend on
//! how many rooms the user has; a miss reads one page through the index.
//!
//! The single-room read refreshes members from the homeserver at most once per
//! [`MEMBER_REFRESH_INTERVAL`] per user and room (the sync worker keeps members current in
//! between); between refreshes it is a cached page like the lists.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;

use super::{
    parse_limit, parse_sort, sort_name, validate_room_id, ArchivedFilter, ListParams, RoomPage,
    RoomView,
};
use crate::error::AppResult;
use crate::services::conversations::wants_readable;
use crate::services::pages::{Page, PageKey, PageView};
use crate::services::session::Principal;
use crate::services::Context;

/// How long after a refresh from the homeserver the single-room read serves stored
/// members (kept current by the sync worker) instead of asking again.
pub const MEMBER_REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// (user id, room id) of the rooms refreshed within [`MEMBER_REFRESH_INTERVAL`].
fn refreshed() -> &'static moka::sync::Cache<(String, String), ()> {
    static REFRESHED: OnceLock<moka::sync::Cache<(String, String), ()>> = OnceLock::new();
    REFRESHED.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(100_000)
            .time_to_live(MEMBER_REFRESH_INTERVAL)
            .build()
    })
}

/// Whether the room is due a refresh from the homeserver; marks it refreshed when it is
/// (one caller refreshes, the others serve stored data).
pub(super) fn refresh_due(user_id: &str, room_id: &str) -> bool {
    let entry = refreshed()
        .entry((user_id.to_owned(), room_id.to_owned()))
        .or_insert(());
    entry.is_fresh()
}

/// Makes the next read of the room ask the homeserver again (its membership just changed
/// through this service, e.g. an accepted invitation).
pub(super) fn forget_refresh(user_id: &str, room_id: &str) {
    refreshed().invalidate(&(user_id.to_owned(), room_id.to_owned()));
}

fn refreshed_recently(user_id: &str, room_id: &str) -> bool {
    refreshed().contains_key(&(user_id.to_owned(), room_id.to_owned()))
}

/// `GET /api/rooms`, rendered by `render`.
pub async fn list_rendered(
    state: &Context,
    principal: &Principal,
    params: ListParams,
    render: impl FnOnce(RoomPage) -> AppResult<Bytes>,
) -> AppResult<Page> {
    let readable = wants_readable(principal);
    let key = PageKey {
        user_id: principal.user_id().to_owned(),
        view: PageView::Rooms {
            readable,
            sort: sort_name(parse_sort(params.sort_by.as_deref(), readable)?),
            archived: ArchivedFilter::parse(params.archived.as_deref())?.as_str(),
            cursor: params.cursor.clone(),
            limit: parse_limit(params.limit)?,
        },
    };
    state
        .pages
        .get_or_render(key, || async move {
            render(super::list(state, principal, params).await?)
        })
        .await
}

/// `GET /api/rooms/{roomId}`, rendered by `render`.
pub async fn get_rendered(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    render: impl FnOnce(RoomView) -> AppResult<Bytes>,
) -> AppResult<Page> {
    let room_id = validate_room_id(room_id)?;
    let user_id = principal.user_id();
    let key = PageKey {
        user_id: user_id.to_owned(),
        view: PageView::Room {
            room_id: room_id.clone(),
            readable: wants_readable(principal),
        },
    };
    if refreshed_recently(user_id, &room_id) {
        if let Some(body) = state.pages.get(&key) {
            return Ok(body);
        }
    }
    // A refresh that stores a change bumps the epoch: this page is then not kept, and the
    // next read renders it again from the stored result.
    let since = state.pages.epoch();
    let body = render(super::get(state, principal, &room_id).await?)?;
    Ok(state.pages.insert(key, since, body))
}
