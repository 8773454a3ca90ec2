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
    if cursor
        .as_ref()
        .is_some_and(|cur| cur.one != one || (one && room_id.as_deref() != Some(&cur.r)))
    {
        return Err(AppError::invalid(
            "cursor",
            "was issued for other filters; keep roomId unchanged while paging",
        ));
    }
    let (room, start) = match (room_id, &cursor) {
        (Some(room), _) => {
            if stored::room_platform(c, uid, &room)?.is_none() {
                return Err(room_not_found());
            }
            (
                room,
                cursor
                    .as_ref()
                    .map_or_else(PageStart::newest, Cursor::start),
            )
        }
        (None, None) => match stored::room_from(c, uid, "", true)? {
            Some(first) => (first, PageStart::newest()),
            None => return empty_page(),
        },
        (None, Some(cur)) => match stored::room_from(c, uid, &cur.r, true)? {
            // The cursor's room may have been removed meanwhile: continue with the next.
            Some(found) if found == cur.r => (found, cur.start()),
            Some(next) => (next, PageStart::newest()),
            None => return empty_page(),
        },
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
    let next = match rows.last() {
        Some(last) if more => Some(Cursor {
            v: 1,
            one,
            r: room.clone(),
            t: Some(last.ts),
            e: Some(last.event_id.clone()),
        }),
        None if gap_ahead => {
            // Nothing stored yet past the start: the same position again.
            let here = (start != PageStart::newest()).then(|| (start.ts, start.event_id.clone()));
            Some(Cursor {
                v: 1,
                one,
                r: room.clone(),
                t: here.as_ref().map(|h| h.0),
                e: here.map(|h| h.1),
            })
        }
        _ if one => None,
        _ => stored::room_from(c, uid, &room, false)?.map(|next| Cursor {
            v: 1,
            one,
            r: next,
            t: None,
            e: None,
        }),
    };
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
        row.room_id.clone_from(&room);
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
    render(Some(&room), &messages, next.map(|c| c.encode()).as_deref()).map(Rendered::Page)
}

fn empty_page() -> AppResult<Rendered> {
    render(None, &[], None).map(Rendered::Page)
}
