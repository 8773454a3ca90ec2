//! `lastMessage` / `sealedLastMessage` of room objects: read from the stored messages when
//! a room page is rendered (one index lookup per room, see `store::last_message`), so it is
//! current after every sync, back-fill, edit, redaction or deletion without being kept
//! anywhere else. Rendered pages are cached until the next write, like the rest of the
//! room object.

use std::collections::HashMap;

use super::{Caller, RoomView};
use crate::error::AppResult;
use rusqlite::Connection;
use serde::Serialize;

use crate::crypto::DataKey;
use crate::services::conversations::open_message;
use crate::services::messages::rich::media_of;
use crate::services::senders::Senders;
use crate::services::Context;
use crate::store::last_message;
use crate::store::rooms::RoomRow;

/// The last message of each room of `rows` that has one, by room id. Native callers without
/// a registered key get none (their `sealedLastMessage` is null).
pub(super) async fn of_rooms(
    state: &Context,
    caller: &Caller,
    rows: &[RoomRow],
) -> AppResult<HashMap<String, LastMessage>> {
    let dek = match (&caller.dek, &caller.meta) {
        (Some(dek), _) => dek.clone(),
        (None, Some(Some(meta))) => meta.data_key().clone(),
        _ => return Ok(HashMap::new()),
    };
    if rows.is_empty() {
        return Ok(HashMap::new());
    }
    let uid = caller.user.id.clone();
    let own = caller.user.matrix_user_id.clone();
    let rooms: Vec<String> = rows.iter().map(|r| r.room_id.clone()).collect();
    let found = state
        .store
        .query(move |c| {
            let mut out = HashMap::with_capacity(rooms.len());
            for room in rooms {
                if let Some(last) = last_message(c, &dek, &uid, own.as_deref(), &room)? {
                    out.insert(room, last);
                }
            }
            Ok::<_, rusqlite::Error>(out)
        })
        .await?;
    Ok(found)
}

/// Puts each room's last message on its view: plain for personal tokens, sealed to the
/// user's key for native callers.
pub(super) fn attach(caller: &Caller, view: &mut RoomView, last: Option<LastMessage>) {
    match &caller.meta {
        None => view.last_message = Some(last),
        Some(meta) => {
            view.sealed_last_message = Some(match (meta, last) {
                (Some(meta), Some(last)) => Some(meta.seal_value(&last)),
                _ => None,
            })
        }
    }
}

/// Longest `lastMessage.text`, in characters.
pub const LAST_MESSAGE_CHARS: usize = 140;

/// `lastMessage` of a room object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastMessage {
    pub event_id: String,
    pub sender_name: String,
    pub is_mine: bool,
    pub msgtype: String,
    /// The text, at most [`LAST_MESSAGE_CHARS`] characters; the file name for media.
    pub text: String,
    pub ts: i64,
}

/// The room's newest message that is not deleted, or `None` for an empty room.
/// `own_id` is the caller's Matrix ID (for `isMine` of messages sent elsewhere).
pub fn last_message(
    conn: &Connection,
    dek: &DataKey,
    user_id: &str,
    own_id: Option<&str>,
    room_id: &str,
) -> rusqlite::Result<Option<LastMessage>> {
    let Some(row) = last_message::newest_shown(conn, user_id, room_id)? else {
        return Ok(None);
    };
    let sender = Senders::new(conn, dek, user_id).of(&row)?;
    // Unreadable content (a shredded key) leaves an empty text rather than no message.
    let (text, msgtype) = match open_message(dek, &row.id, &row.content_enc) {
        Ok(c) => {
            let text = match media_of(&row.msgtype, &c.content) {
                Some(media) => media.name,
                None => c.body,
            };
            (text, row.msgtype.clone())
        }
        Err(_) => (String::new(), row.msgtype.clone()),
    };
    Ok(Some(LastMessage {
        event_id: row.event_id,
        sender_name: sender.name,
        is_mine: row.is_mine || own_id == Some(row.sender_id.as_str()),
        msgtype,
        text: text.chars().take(LAST_MESSAGE_CHARS).collect(),
        ts: row.ts,
    }))
}
