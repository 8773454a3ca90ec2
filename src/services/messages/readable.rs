//! The personal-token history: one page read from the store ([`page`]) and its wire form.
//! Rendered pages are cached in [`crate::services::pages`].

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use rusqlite::Connection;
use serde::Serialize;

use super::cache::KeyTag;
use super::rich::{self, Rich};
use super::{is_mine, open, room_not_found, Cursor};
use crate::crypto::DataKey;
use crate::error::{AppError, AppResult};
use crate::services::conversations::MessageContent;
use crate::services::history::{self, Fill, Rendered};
use crate::services::senders::Senders;
use crate::store::messages::{self as stored, PageStart};
use crate::store::users::UserRow;

/// A personal-token message: readable text.
#[derive(Debug, Clone)]
pub struct ReadableMessage {
    pub event_id: String,
    pub sender_id: String,
    /// The sender's display name when the message was sent (see [`crate::services::senders`]).
    pub sender_name: String,
    /// The member avatar route, when the sender had an avatar.
    pub sender_avatar_url: Option<String>,
    /// `body` is the readable text (see [`ReadableMessage::text`]); `content` the event
    /// content. Shared with the content cache.
    pub content: Arc<MessageContent>,
    pub redacted: bool,
    /// Matrix `msgtype` (`m.sticker` for stickers).
    pub msgtype: String,
    /// `media`, `replyTo`, `editedAt`, `reactions`.
    pub rich: Rich,
    pub outgoing: bool,
    pub is_mine: bool,
    pub timestamp: i64,
}

impl ReadableMessage {
    /// The readable text; empty for redacted messages.
    pub fn text(&self) -> &str {
        if self.redacted {
            ""
        } else {
            &self.content.body
        }
    }
}

/// `ReadableMessage` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageOut<'a> {
    event_id: &'a str,
    room_id: &'a str,
    sender_id: &'a str,
    sender_name: &'a str,
    sender_avatar_url: Option<&'a str>,
    text: &'a str,
    content: &'a serde_json::Value,
    direction: &'static str,
    is_mine: bool,
    timestamp: i64,
    msgtype: &'a str,
    #[serde(flatten)]
    rich: &'a Rich,
}

/// `ReadableMessagePage` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageOut<'a> {
    messages: Vec<MessageOut<'a>>,
    next_cursor: Option<&'a str>,
}

/// Writes a page: `messages` (all of `room_id`, newest first) and the next cursor.
pub fn render(
    room_id: Option<&str>,
    messages: &[ReadableMessage],
    next_cursor: Option<&str>,
) -> AppResult<Bytes> {
    let room_id = room_id.unwrap_or_default();
    let page = PageOut {
        messages: messages
            .iter()
            .map(|m| MessageOut {
                event_id: &m.event_id,
                room_id,
                sender_id: &m.sender_id,
                sender_name: &m.sender_name,
                sender_avatar_url: m.sender_avatar_url.as_deref(),
                text: m.text(),
                content: &m.content.content,
                direction: if m.outgoing { "outgoing" } else { "incoming" },
                is_mine: m.is_mine,
                timestamp: m.timestamp,
                msgtype: &m.msgtype,
                rich: &m.rich,
            })
            .collect(),
        next_cursor,
    };
    let mut body = Vec::with_capacity(384 * messages.len() + 256);
    serde_json::to_writer(&mut body, &page).map_err(AppError::internal)?;
    Ok(Bytes::from(body))
}

/// One page of the readable listing. With `room_id`: that room, newest first. Without:
/// the user's rooms in room id order, each newest first, one room per page.
pub(super) fn page(
    c: &Connection,
    user: &UserRow,
    dek: &DataKey,
    room_id: Option<String>,
    cursor: Option<Cursor>,
    limit: i64,
    fill: Fill,
) -> AppResult<Rendered> {
    let uid = user.id.as_str();
    let one = room_id.is_some();
    check_cursor(room_id.as_deref(), cursor.as_ref())?;
    let Some((room, start)) = page_room(c, uid, room_id, cursor.as_ref())? else {
        return empty_page();
    };
    let mut rows = stored::room_page(c, uid, &room, &start, limit + 1)?;
    let span = history::PageSpan {
        start: &start,
        last: rows.last().map(|r| (r.ts, r.event_id.as_str())),
        full: rows.len() as i64 > limit,
    };
    // A gap still ahead after this request's fetches: the next page goes on from here.
    let gap_ahead = match fill {
        Fill::Allowed => match history::gap_crossed(c, uid, &room, &span)? {
            Some(gap) => return Ok(Rendered::Gap(gap)),
            None => false,
        },
        Fill::Exhausted => history::gap_crossed(c, uid, &room, &span)?.is_some(),
        Fill::Stalled => false,
    };
    let more = rows.len() as i64 > limit || gap_ahead;
    rows.truncate(limit as usize);
    let at = Position {
        one,
        room: &room,
        start: &start,
    };
    let next = next_cursor(c, uid, &at, rows.last(), more, gap_ahead)?;
    let messages = readable_messages(c, user, dek, &room, rows)?;
    render(Some(&room), &messages, next.map(|c| c.encode()).as_deref()).map(Rendered::Page)
}

/// A cursor only continues the listing it was issued for (one room, or all of them).
fn check_cursor(room_id: Option<&str>, cursor: Option<&Cursor>) -> AppResult<()> {
    let one = room_id.is_some();
    if cursor.is_some_and(|cur| cur.one != one || (one && room_id != Some(cur.r.as_str()))) {
        return Err(AppError::invalid(
            "cursor",
            "was issued for other filters; keep roomId unchanged while paging",
        ));
    }
    Ok(())
}

/// The room this page reads and where in it; `None` when the user has no (further) room.
fn page_room(
    c: &Connection,
    uid: &str,
    room_id: Option<String>,
    cursor: Option<&Cursor>,
) -> AppResult<Option<(String, PageStart)>> {
    Ok(match (room_id, cursor) {
        (Some(room), _) => {
            if stored::room_platform(c, uid, &room)?.is_none() {
                return Err(room_not_found());
            }
            let start = cursor.map_or_else(PageStart::newest, Cursor::start);
            Some((room, start))
        }
        (None, None) => stored::room_from(c, uid, "", true)?.map(|f| (f, PageStart::newest())),
        (None, Some(cur)) => match stored::room_from(c, uid, &cur.r, true)? {
            // The cursor's room may have been removed meanwhile: continue with the next.
            Some(found) if found == cur.r => Some((found, cur.start())),
            Some(next) => Some((next, PageStart::newest())),
            None => None,
        },
    })
}

/// Where a page read: which listing, which room, from where.
struct Position<'a> {
    one: bool,
    room: &'a str,
    start: &'a PageStart,
}

/// The cursor of the page after this one (whose last row is `last`): further down this
/// room while there is `more`, the same position again while a gap is ahead and nothing
/// is stored past the start, else the next room of an all-rooms listing.
fn next_cursor(
    c: &Connection,
    uid: &str,
    at: &Position<'_>,
    last: Option<&stored::MessageRow>,
    more: bool,
    gap_ahead: bool,
) -> AppResult<Option<Cursor>> {
    let cursor = |r: String, here: Option<(i64, String)>| Cursor {
        v: 1,
        one: at.one,
        r,
        t: here.as_ref().map(|h| h.0),
        e: here.map(|h| h.1),
    };
    Ok(match last {
        Some(last) if more => Some(cursor(
            at.room.to_owned(),
            Some((last.ts, last.event_id.clone())),
        )),
        None if gap_ahead => {
            let start = at.start;
            let here = (*start != PageStart::newest()).then(|| (start.ts, start.event_id.clone()));
            Some(cursor(at.room.to_owned(), here))
        }
        _ if at.one => None,
        _ => stored::room_from(c, uid, at.room, false)?.map(|next| cursor(next, None)),
    })
}

/// The page's rows as readable messages (rows that do not open are left out), with their
/// senders' names, reactions and direction.
fn readable_messages(
    c: &Connection,
    user: &UserRow,
    dek: &DataKey,
    room: &str,
    rows: Vec<stored::MessageRow>,
) -> AppResult<Vec<ReadableMessage>> {
    let uid = user.id.as_str();
    let mut own: HashSet<String> = stored::group_matrix_ids(c, user.group_id())?
        .into_iter()
        .collect();
    own.extend(user.matrix_user_id.clone());
    let key = KeyTag::of(dek);
    let mut reactions = rich::reactions_of(
        c,
        dek,
        uid,
        user.matrix_user_id.as_deref(),
        rows.iter()
            .filter(|r| !r.redacted)
            .map(|r| r.event_id.as_str()),
    )?;
    let mut senders = Senders::new(c, dek, uid);
    let mut messages = Vec::with_capacity(rows.len());
    for mut row in rows {
        let Some(content) = open(dek, key, &row) else {
            continue;
        };
        // Page rows leave the room out: it is this page's.
        row.room_id = room.to_owned();
        let sender = senders.of(&row)?;
        let is_mine = is_mine(user, &row);
        messages.push(ReadableMessage {
            outgoing: is_mine || own.contains(&row.sender_id),
            is_mine,
            rich: rich::rich(
                &row.msgtype,
                &content.content,
                row.edited_at,
                reactions.remove(&row.event_id).unwrap_or_default(),
            ),
            msgtype: row.msgtype,
            content,
            redacted: row.redacted,
            timestamp: row.ts,
            event_id: row.event_id,
            sender_id: row.sender_id,
            sender_name: sender.name,
            sender_avatar_url: sender.avatar_url,
        });
    }
    Ok(messages)
}

fn empty_page() -> AppResult<Rendered> {
    render(None, &[], None).map(Rendered::Page)
}
