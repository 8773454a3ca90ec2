//! Message history, deletion, statistics and sending: `/api/messages*` and
//! `POST /api/rooms/{roomId}/messages`.
//!
//! - History is one index range scan (`messages_room_ts`, order `ts DESC, event_id ASC`)
//!   per page; only the page is opened, and everything runs in one blocking store job.
//! - Native callers get each message's content sealed to their registered X25519 key
//!   (the `crypto::envelope` seal, one ephemeral key per page: [`sealed`]) as the JSON
//!   `{"body", "content"}`; personal tokens get readable text and an opaque cursor.
//! - Both views are rendered once and served from memory until the next write
//!   ([`crate::services::pages`]).
//! - Rows whose content can no longer be opened (sealed under a data key destroyed by
//!   `DELETE /api/keys`) are left out of pages: that content is gone for good.
//! - Direction: a message is `outgoing` when its sender is the user's Matrix ID or the
//!   Matrix ID of any account of the user's account group (the user's linked identities);
//!   `isMine` is the user's own Matrix ID only.
//! - Opened contents are cached in memory while they match their row ([`cache`]).
//!
//! Sending lives in [`send`].

use crate::services::users::load_row;
use std::collections::BTreeSet;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::conversations::{self, MessageContent};
use super::history::{self, Fill, Rendered};
use super::pages::{Page, PageKey, PageView};
use super::params;
use super::public_key::validate_public_key;
use super::session::Principal;
use super::users;
use crate::crypto::DataKey;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::Context;
use crate::store::history::Gap;
use crate::store::messages::{self as stored, MessageRow, MessageStats, PageStart};
use crate::store::user_keys;
use crate::store::users::UserRow;
use cache::KeyTag;

pub mod actions;
pub mod cache;
mod delete;
mod multi;
pub mod readable;
pub mod rich;
mod sealed;

pub use delete::{delete_matching, delete_one, Deleted};
pub mod send;

pub use readable::ReadableMessage;

pub use crate::services::upstream::homeserver_error;
pub use multi::{send_multi, MultiSendItem};
pub use send::{send_to_room, Sent};

/// Page size when `limit` is absent; `limit` must be 1 to [`MAX_LIMIT`].
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;
/// The exact value `X-Confirm-Delete` must carry.
pub const DELETE_CONFIRMATION: &str = "DELETE_MESSAGES";
/// Messages with at least this importance count as high importance in the statistics.
pub const HIGH_IMPORTANCE: f64 = 0.7;
const MAX_ROOM_ID_CHARS: usize = 255;
const MAX_CURSOR_CHARS: usize = 2048;

/// The query of `GET /api/messages`, as received.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    pub room_id: Option<String>,
    pub before: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<i64>,
}

#[derive(Debug, Clone)]
pub enum History {
    /// A native page, rendered as its JSON body ([`sealed::seal_page`]).
    Encrypted(Page),
    /// A personal-token page, rendered as its JSON body ([`readable::render`]).
    Readable(Page),
}

pub fn parse_limit(limit: Option<i64>) -> AppResult<i64> {
    params::parse_limit(limit, DEFAULT_LIMIT, MAX_LIMIT)
}

/// `before`: milliseconds since the Unix epoch, or an RFC 3339 date-time.
pub fn parse_before(before: Option<&str>) -> AppResult<Option<i64>> {
    params::parse_time("before", before)
}

pub(crate) fn parse_room_id(field: &str, room_id: &str) -> AppResult<String> {
    let trimmed = room_id.trim();
    let n = trimmed.chars().count();
    if n == 0 || n > MAX_ROOM_ID_CHARS {
        return Err(AppError::invalid(
            field,
            format!("must be a room id of 1 to {MAX_ROOM_ID_CHARS} characters"),
        ));
    }
    Ok(trimmed.to_owned())
}

fn parse_optional_room_id(room_id: Option<&str>) -> AppResult<Option<String>> {
    room_id.map(|r| parse_room_id("roomId", r)).transpose()
}

/// Position in a personal-token listing; sent to the client as base64url JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    v: u8,
    /// Issued for a listing of one room (`roomId` given) rather than the walk over all.
    one: bool,
    /// The room the next page is read from.
    r: String,
    /// The last row returned (absent: start at the room's newest message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
}

impl Cursor {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(raw: &str) -> AppResult<Self> {
        let bad = || AppError::invalid("cursor", "not a cursor this service issued");
        if raw.len() > MAX_CURSOR_CHARS {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw.trim()).map_err(|_| bad())?;
        let c: Self = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if c.v != 1 || c.r.is_empty() || c.t.is_some() != c.e.is_some() {
            return Err(bad());
        }
        Ok(c)
    }

    fn start(&self) -> PageStart {
        match (self.t, &self.e) {
            (Some(t), Some(e)) => PageStart::after(t, e),
            _ => PageStart::newest(),
        }
    }
}

pub(crate) fn room_not_found() -> AppError {
    AppError::not_found("room")
}

/// `GET /api/messages`: the encrypted view for native sessions, the readable one for
/// personal tokens.
pub async fn history(
    state: &Context,
    principal: &Principal,
    q: HistoryQuery,
) -> AppResult<History> {
    let limit = parse_limit(q.limit)?;
    let room_id = parse_optional_room_id(q.room_id.as_deref())?;
    if conversations::wants_readable(principal) {
        if q.before.is_some() {
            return Err(AppError::invalid(
                "before",
                "personal tokens page with `cursor` (from `nextCursor`), not `before`",
            ));
        }
        return readable_history(state, principal, room_id, q.cursor, limit).await;
    }
    if q.cursor.is_some() {
        return Err(AppError::invalid(
            "cursor",
            "native sessions page with `before` (a timestamp), not `cursor`",
        ));
    }
    let before = parse_before(q.before.as_deref())?;
    sealed_history(state, principal, room_id, before, limit).await
}

/// The personal-token view: a cached page, or one rendered (filling gaps on the way).
async fn readable_history(
    state: &Context,
    principal: &Principal,
    room_id: Option<String>,
    cursor: Option<String>,
    limit: i64,
) -> AppResult<History> {
    // The hot path (a page read again) builds the key from the query it owns and
    // clones nothing else; what the render needs is taken from the key on a miss.
    let key = PageKey {
        user_id: principal.user_id().to_owned(),
        view: PageView::ReadableHistory {
            room_id,
            cursor,
            limit,
        },
    };
    if let Some(body) = state.pages.get(&key) {
        return Ok(History::Readable(body));
    }
    let PageView::ReadableHistory {
        room_id, cursor, ..
    } = key.view.clone()
    else {
        return Err(AppError::internal("readable page key of another view"));
    };
    let (uid, master) = (key.user_id.clone(), state.master.clone());
    let body = state
        .pages
        .get_or_render(key, || async move {
            let cursor = cursor.as_deref().map(Cursor::decode).transpose()?;
            let user_id = uid.clone();
            history::render_filling(state, &user_id, |fill| {
                let (uid, master) = (uid.clone(), master.clone());
                let (room_id, cursor) = (room_id.clone(), cursor.clone());
                state.store.run(move |c| {
                    let user = load_row(c, &uid)?;
                    conversations::require_readable(&user)?;
                    let dek = users::data_key(&master, &user)?;
                    readable::page(c, &user, &dek, room_id, cursor, limit, fill)
                })
            })
            .await
        })
        .await?;
    Ok(History::Readable(body))
}

/// The native view: a cached page, or one rendered and sealed to the user's registered
/// key (filling gaps on the way).
async fn sealed_history(
    state: &Context,
    principal: &Principal,
    room_id: Option<String>,
    before: Option<i64>,
    limit: i64,
) -> AppResult<History> {
    let start = before.map_or_else(PageStart::newest, PageStart::before);
    let (uid, master) = (principal.user_id().to_owned(), state.master.clone());
    // The key needs no public key: registering or replacing one is a write, which ends
    // every page sealed to the old one.
    let key = PageKey {
        user_id: uid.clone(),
        view: PageView::SealedHistory {
            room_id: room_id.clone(),
            before,
            limit,
        },
    };
    let render = |fill: Fill| {
        let (uid, master) = (uid.clone(), master.clone());
        let (room_id, start) = (room_id.clone(), start.clone());
        state.store.run(move |c| {
            let user = load_row(c, &uid)?;
            let key = user_keys::find(c, &uid)?.ok_or_else(conversations::keys_not_registered)?;
            let recipient = validate_public_key(&key.public_key)
                .map_err(|_| AppError::internal("stored public key is malformed"))?;
            let rows = match sealed_rows(c, &uid, room_id, &start, limit, fill)? {
                Ok(rows) => rows,
                Err(gap) => return Ok(Rendered::Gap(gap)),
            };
            let dek = users::data_key(&master, &user)?;
            sealed::seal_page(c, &user, &dek, &recipient, rows).map(Rendered::Page)
        })
    };
    let user_id = principal.user_id().to_owned();
    let body = state
        .pages
        .get_or_render(key, || history::render_filling(state, &user_id, render))
        .await?;
    Ok(History::Encrypted(body))
}

/// The rows of a native page (of one room, or of all the user's rooms) with their rooms'
/// platforms, or the gap the page reaches into first while `fill` allows filling.
fn sealed_rows(
    c: &Connection,
    uid: &str,
    room_id: Option<String>,
    start: &PageStart,
    limit: i64,
    fill: Fill,
) -> AppResult<Result<Vec<history::PlacedRow>, Gap>> {
    let Some(room_id) = room_id else {
        return Ok(history::all_rooms_rows(c, uid, start, limit, fill)?);
    };
    let platform = stored::room_platform(c, uid, &room_id)?.ok_or_else(room_not_found)?;
    let rows = stored::room_page(c, uid, &room_id, start, limit)?;
    if fill == Fill::Allowed {
        let span = history::PageSpan {
            start,
            last: rows.last().map(|r| (r.ts, r.event_id.as_str())),
            full: rows.len() as i64 == limit,
        };
        if let Some(gap) = history::gap_crossed(c, uid, &room_id, &span)? {
            return Ok(Err(gap));
        }
    }
    Ok(Ok(rows
        .into_iter()
        .map(|m| {
            let m = MessageRow {
                room_id: room_id.clone(),
                ..m
            };
            (m, platform.clone())
        })
        .collect()))
}

/// Opens a stored message (through the cache): `None` when its content is unreadable
/// (sealed under a data key that was shredded).
fn open(dek: &DataKey, key: KeyTag, row: &MessageRow) -> Option<Arc<MessageContent>> {
    let cache = cache::cache();
    if let Some(content) = cache.get(&row.id, key, &row.content_enc) {
        return Some(content);
    }
    match conversations::open_message(dek, &row.id, &row.content_enc) {
        Ok(content) => {
            let content = Arc::new(content);
            cache.put(&row.id, key, &row.content_enc, content.clone());
            Some(content)
        }
        Err(e) => {
            tracing::debug!(message_id = %row.id, error = %e, "message content unreadable; left out");
            None
        }
    }
}

fn is_mine(user: &UserRow, row: &MessageRow) -> bool {
    row.is_mine || user.matrix_user_id.as_deref() == Some(row.sender_id.as_str())
}

/// `GET /api/messages/stats`, rendered by `render` and served from the page cache until
/// the next write.
pub async fn stats_rendered(
    state: &Context,
    user_id: &str,
    render: impl FnOnce(MessageStats) -> AppResult<Bytes>,
) -> AppResult<Page> {
    let key = PageKey {
        user_id: user_id.to_owned(),
        view: PageView::Stats,
    };
    state
        .pages
        .get_or_render(key, || async move { render(stats(state, user_id).await?) })
        .await
}

/// `GET /api/messages/stats`: SQL aggregates over the caller's stored messages.
pub async fn stats(state: &Context, user_id: &str) -> AppResult<MessageStats> {
    let uid = user_id.to_owned();
    state
        .db(move |c| Ok(stored::stats(c, &uid, HIGH_IMPORTANCE)?))
        .await
}

#[cfg(test)]
mod tests;
