//! `lastMessage` / `sealedLastMessage` of room objects: read from the stored messages when
//! a room page is rendered (one index lookup per room, see `store::last_message`), so it is
//! current after every sync, back-fill, edit, redaction or deletion without being kept
//! anywhere else. Rendered pages are cached until the next write, like the rest of the
//! room object.

use std::collections::HashMap;

use super::{Caller, RoomView};
use crate::error::AppResult;
use crate::services::senders::{self, LastMessage};
use crate::services::Context;
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
                if let Some(last) = senders::last_message(c, &dek, &uid, own.as_deref(), &room)? {
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
