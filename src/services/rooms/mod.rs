//! Rooms: each user's view of its Matrix rooms as the sync worker stored them, and what
//! the user does with them (name them, mark them read, archive, mute, favorite, pin,
//! delete).
//!
//! Two callers see two shapes of the same room: native clients (JWT) get the visible
//! metadata and their own encrypted name/avatar; personal tokens get readable names
//! opened from the sealed columns, and are refused with 409 `NO_SIGNING_KEY` after the
//! user deleted their keys.
//!
//! - Lists show joined and invited rooms ([`store::rooms::VISIBLE`]); archived rooms only
//!   when asked. Pinned rooms come first in every order; ties end on the room id, so the
//!   opaque cursor (the sort key of the last room of a page) pages exactly.
//! - An archived room comes back on `POST …/unarchive`, or automatically when a new
//!   incoming message arrives in it (the sync worker clears `archived` then).
//! - `DELETE` removes the room from the service only (this user's rows); Matrix and the
//!   bridges are not touched. New activity in the room brings it back.
//! - Invitations the sync worker does not accept (not from a configured bridge) are
//!   listed with membership `invite` until the user accepts or declines them
//!   ([`accept`], [`decline`]); no read marker is sent for them.

use std::collections::HashMap;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use rusqlite::TransactionBehavior;
use serde::{Deserialize, Serialize};

use super::conversation;
use super::conversations::{open_room_field, require_readable, wants_readable, RoomField};
pub use super::params::validate_room_id;
use super::users;
use crate::clock::unix_now;
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::session::Principal;
use crate::services::Context;
use crate::store::conversation::{self as conversation_store, Marks};
use crate::store::linked_groups;
use crate::store::rooms::{self, RoomFlag, RoomListKey, RoomRow, RoomSort};
use crate::store::users::UserRow;
pub use last::LastMessage;
use rusqlite::Connection;

/// Page size bounds of room lists (contract: 1 to 100, default 50).
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;
/// `GET /api/rooms/filter/priority`: unread rooms at or above this importance (0 to 1).
pub const PRIORITY_THRESHOLD: f64 = 0.7;
/// Longest accepted `encryptedName` / `nonce` (base64 characters).
pub const MAX_ENCRYPTED_NAME: usize = 4096;
pub const MAX_NONCE: usize = 256;
/// How long the single-room read waits for the homeserver before serving stored data.
pub const REFRESH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest accepted `encryptedAvatar` (base64 characters, 1 MiB).
pub const MAX_ENCRYPTED_AVATAR: usize = 1024 * 1024;

/// The note of the archive answer: how an archived room becomes active again.
pub const ARCHIVE_NOTE: &str = "The room is hidden from the active room list, not deleted. It \
    becomes active again with POST /api/rooms/{roomId}/unarchive, or automatically when a new \
    incoming message arrives in it.";

/// `archived` filter of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchivedFilter {
    Active,
    Archived,
    All,
}

impl ArchivedFilter {
    fn parse(value: Option<&str>) -> AppResult<Self> {
        match value.map(str::trim) {
            None | Some("false") => Ok(Self::Active),
            Some("true") => Ok(Self::Archived),
            Some("all") => Ok(Self::All),
            Some(_) => Err(AppError::invalid("archived", "must be false, true or all")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Active => "false",
            Self::Archived => "true",
            Self::All => "all",
        }
    }

    fn column_value(self) -> Option<bool> {
        match self {
            Self::Active => Some(false),
            Self::Archived => Some(true),
            Self::All => None,
        }
    }
}

/// Readable fields of a room, for personal-token callers.
#[derive(Debug, Clone, Default)]
pub struct ReadableRoom {
    pub name: Option<String>,
    pub topic: Option<String>,
    pub avatar_url: Option<String>,
}

/// A room as one caller sees it.
#[derive(Debug, Clone)]
pub struct RoomView {
    pub row: RoomRow,
    /// Set for personal-token callers only.
    pub readable: Option<ReadableRoom>,
    /// Joined members; set by the single-room read only.
    pub member_ids: Option<Vec<String>>,
    /// Native callers only (`None` for personal tokens): the room's names sealed to the
    /// user's key, `Some(None)` before a key is registered ([`meta`]).
    pub sealed_meta: Option<Option<SealedMeta>>,
    /// Personal tokens only: the newest message that is not deleted, `Some(None)` for a
    /// room without one ([`last`]).
    pub last_message: Option<Option<LastMessage>>,
    /// Native callers only: the same sealed to the user's key, `Some(None)` for a room
    /// without one or before a key is registered.
    pub sealed_last_message: Option<Option<SealedMeta>>,
    /// Marked unread (`m.marked_unread`) and whether it has a draft.
    pub marks: Marks,
}

#[derive(Debug, Clone)]
pub struct RoomPage {
    pub rooms: Vec<RoomView>,
    pub next_cursor: Option<String>,
}

/// List query as received (validated here).
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub sort_by: Option<String>,
    pub limit: Option<i64>,
    pub archived: Option<String>,
    pub cursor: Option<String>,
}

/// The caller's user row, and its data key when the caller gets readable shapes (after
/// checking the keys were not deleted).
struct Caller {
    user: UserRow,
    dek: Option<crate::crypto::DataKey>,
    /// Native callers: `Some(None)` without a registered key.
    meta: Option<Option<MetaSealer>>,
}

async fn caller(state: &Context, principal: &Principal) -> AppResult<Caller> {
    let user = users::load(state, principal.user_id()).await?;
    let (dek, meta) = if wants_readable(principal) {
        require_readable(&user)?;
        (Some(users::data_key(&state.master, &user)?), None)
    } else {
        (None, Some(MetaSealer::for_user(state, &user).await?))
    };
    Ok(Caller { user, dek, meta })
}

fn view(caller: &Caller, row: RoomRow, member_ids: Option<Vec<String>>) -> RoomView {
    let readable = caller.dek.as_ref().map(|dek| {
        let open = |field, sealed: &Option<Vec<u8>>| {
            open_room_field(dek, &row.user_id, &row.room_id, field, sealed.as_deref())
        };
        ReadableRoom {
            name: open(RoomField::Name, &row.name_enc),
            topic: open(RoomField::Topic, &row.topic_enc),
            avatar_url: open(RoomField::Avatar, &row.avatar_enc),
        }
    });
    let sealed_meta = caller
        .meta
        .as_ref()
        .map(|m| m.as_ref().map(|m| m.seal(&row)));
    RoomView {
        row,
        readable,
        member_ids,
        sealed_meta,
        last_message: None,
        sealed_last_message: None,
        marks: Marks::default(),
    }
}

/// The views of `rows`, each with its last message and its marks.
async fn views(
    state: &Context,
    caller: &Caller,
    rows: Vec<RoomRow>,
    member_ids: Option<Vec<String>>,
    marks: &HashMap<String, Marks>,
) -> AppResult<Vec<RoomView>> {
    let mut last = last::of_rooms(state, caller, &rows).await?;
    let mut member_ids = member_ids;
    Ok(rows
        .into_iter()
        .map(|r| {
            let found = last.remove(&r.room_id);
            let m = marks.get(&r.room_id).copied().unwrap_or_default();
            let mut v = view(caller, r, member_ids.take());
            v.marks = m;
            last::attach(caller, &mut v, found);
            v
        })
        .collect())
}

/// A visible (joined or invited) room of the user; 404 `not_found` otherwise.
fn find_visible(conn: &Connection, user_id: &str, room_id: &str) -> AppResult<RoomRow> {
    rooms::find(conn, user_id, room_id)?
        .filter(|r| r.membership != "leave")
        .ok_or_else(|| AppError::not_found("room"))
}

/// `GET /api/rooms`: one page of the caller's rooms.
pub async fn list(
    state: &Context,
    principal: &Principal,
    params: ListParams,
) -> AppResult<RoomPage> {
    let readable = wants_readable(principal);
    let sort = parse_sort(params.sort_by.as_deref(), readable)?;
    let limit = parse_limit(params.limit)?;
    let archived = ArchivedFilter::parse(params.archived.as_deref())?;
    let after = params
        .cursor
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .map(|c| decode_cursor(c, sort, archived))
        .transpose()?;
    let caller = caller(state, principal).await?;
    let uid = caller.user.id.clone();
    let (mut rows, marks) = state
        .db(move |c| {
            let rows = rooms::list_page(
                c,
                &uid,
                sort,
                archived.column_value(),
                after.as_ref(),
                limit + 1,
            )?;
            Ok((rows, conversation_store::marks(c, &uid)?))
        })
        .await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last()
            .map(|last| encode_cursor(sort, archived, &RoomListKey::of(sort, last)))
    } else {
        None
    };
    Ok(RoomPage {
        rooms: views(state, &caller, rows, None, &marks).await?,
        next_cursor,
    })
}

/// `GET /api/rooms/filter/priority`: non-archived rooms with unread messages of importance
/// at least [`PRIORITY_THRESHOLD`], or with unread highlights (mentions), most important
/// first.
pub async fn priority(state: &Context, principal: &Principal) -> AppResult<Vec<RoomView>> {
    let caller = caller(state, principal).await?;
    let uid = caller.user.id.clone();
    let (rows, marks) = state
        .store
        .query(move |c| {
            let rows = rooms::priority(c, &uid, PRIORITY_THRESHOLD)?;
            Ok::<_, rusqlite::Error>((rows, conversation_store::marks(c, &uid)?))
        })
        .await?;
    views(state, &caller, rows, None, &marks).await
}

/// Visible, non-archived rooms per platform — exactly the default filter of the room list,
/// so the counts match what `GET /api/rooms` shows. Plain Matrix rooms (no bridge) are
/// counted under `"matrix"`.
pub async fn visible_room_counts_by_platform(
    state: &Context,
    user_id: &str,
) -> AppResult<HashMap<String, i64>> {
    let uid = user_id.to_owned();
    let counts = state
        .store
        .query(move |c| rooms::count_by_platform(c, &uid))
        .await?;
    Ok(counts.into_iter().collect())
}

/// `GET /api/rooms/{roomId}`: the room with its joined members and direct recipient,
/// refreshed from the homeserver (stored data when it cannot be reached, or when it was
/// refreshed within [`MEMBER_REFRESH_INTERVAL`]).
pub async fn get(state: &Context, principal: &Principal, room_id: &str) -> AppResult<RoomView> {
    let room_id = validate_room_id(room_id)?;
    let caller = caller(state, principal).await?;
    let uid = caller.user.id.clone();
    let rid = room_id.clone();
    let row = state
        .store
        .run(move |c| find_visible(c, &uid, &rid))
        .await?;
    if cached::refresh_due(&caller.user.id, &row.room_id) {
        refresh_members(state, &caller.user, &row).await;
    }
    let uid = caller.user.id.clone();
    let (row, members, marks) = state
        .db(move |c| {
            let row = find_visible(c, &uid, &room_id)?;
            let members = rooms::members(c, &uid, &room_id)?;
            let marks = conversation_store::marks(c, &uid)?.remove(&room_id);
            Ok((row, members, marks.unwrap_or_default()))
        })
        .await?;
    let mut one = views(state, &caller, vec![row], Some(members), &HashMap::new()).await?;
    let mut v = one.remove(0);
    v.marks = marks;
    Ok(v)
}

mod cursor;
pub use cursor::parse_limit;
use cursor::*;
mod actions;
mod cached;
mod invites;
mod last;
mod members;
mod meta;
pub use actions::*;
pub use cached::{get_rendered, list_rendered, MEMBER_REFRESH_INTERVAL};
pub use invites::{accept, decline};
use members::refresh_members;
pub use members::resolve_recipient;
pub use meta::{MetaSealer, SealedMeta};

#[cfg(test)]
mod tests;
