//! Drafts: one per room, an opaque string the client chose (the web app seals it to the
//! user's own key before it leaves the browser), at most [`MAX_DRAFT_BYTES`], sealed once
//! more at rest under the user's data key, so the database file never holds it in the
//! clear. Saving or deleting publishes `draft.updated` so another open session picks it
//! up; sending a message into the room deletes its draft.

use super::{find_visible, visible_room};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::session::Principal;
use crate::services::users;
use crate::services::Context;
use crate::store::conversation;

/// Longest draft, in bytes of UTF-8 (16 KiB).
pub const MAX_DRAFT_BYTES: usize = 16 * 1024;

/// A draft as the client saved it; `updated_at` Unix milliseconds.
#[derive(Debug, Clone)]
pub struct Draft {
    pub content: String,
    pub updated_at: i64,
}

fn aad_row(user_id: &str, room_id: &str) -> String {
    format!("{user_id}/{room_id}")
}

fn seal(dek: &DataKey, user_id: &str, room_id: &str, content: &str) -> Vec<u8> {
    let row = aad_row(user_id, room_id);
    dek.seal_str(content, &Aad::new("room_drafts", "content", &row))
}

fn open(dek: &DataKey, user_id: &str, room_id: &str, sealed: &[u8]) -> AppResult<String> {
    let row = aad_row(user_id, room_id);
    Ok(dek.open_string(sealed, &Aad::new("room_drafts", "content", &row))?)
}

fn published(state: &Context, user_id: &str, room_id: &str) {
    state.events.publish(
        user_id,
        ChangeEvent::DraftUpdated {
            room_id: room_id.to_owned(),
        },
    );
}

/// `PUT /api/rooms/{roomId}/draft`: saves (replaces) the room's draft.
pub async fn put(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    content: &str,
) -> AppResult<Draft> {
    if content.is_empty() || content.len() > MAX_DRAFT_BYTES {
        return Err(AppError::invalid(
            "content",
            format!(
                "must be 1 to {MAX_DRAFT_BYTES} bytes (delete an empty draft with DELETE instead)"
            ),
        ));
    }
    let user_id = principal.user_id();
    let room = visible_room(state, user_id, room_id).await?;
    let user = users::load(state, user_id).await?;
    let dek = users::data_key(&state.master, &user)?;
    let sealed = seal(&dek, user_id, &room.room_id, content);
    let now = chrono::Utc::now().timestamp_millis();
    let (uid, rid) = (user_id.to_owned(), room.room_id.clone());
    state
        .db(move |c| {
            find_visible(c, &uid, &rid)?;
            Ok(conversation::put_draft(c, &uid, &rid, &sealed, now)?)
        })
        .await?;
    published(state, user_id, &room.room_id);
    Ok(Draft {
        content: content.to_owned(),
        updated_at: now,
    })
}

/// `GET /api/rooms/{roomId}/draft`: the room's draft; 404 `not_found` when it has none.
pub async fn get(state: &Context, principal: &Principal, room_id: &str) -> AppResult<Draft> {
    let user_id = principal.user_id();
    let room = visible_room(state, user_id, room_id).await?;
    let (uid, rid) = (user_id.to_owned(), room.room_id.clone());
    let row = state
        .store
        .query(move |c| conversation::draft(c, &uid, &rid))
        .await?
        .ok_or_else(|| AppError::not_found("draft"))?;
    let user = users::load(state, user_id).await?;
    let dek = users::data_key(&state.master, &user)?;
    Ok(Draft {
        content: open(&dek, user_id, &room.room_id, &row.content_enc)?,
        updated_at: row.updated_at,
    })
}

/// `DELETE /api/rooms/{roomId}/draft`: deletes the room's draft (none: nothing to do).
pub async fn delete(state: &Context, principal: &Principal, room_id: &str) -> AppResult<()> {
    let user_id = principal.user_id();
    let room = visible_room(state, user_id, room_id).await?;
    discard(state, user_id, &room.room_id).await
}

/// Deletes the room's draft and announces it when there was one (a message was sent).
pub async fn discard(state: &Context, user_id: &str, room_id: &str) -> AppResult<()> {
    let (uid, rid) = (user_id.to_owned(), room_id.to_owned());
    let had = state
        .db(move |c| Ok(conversation::delete_draft(c, &uid, &rid)?))
        .await?;
    if had {
        published(state, user_id, room_id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_opens_only_under_its_own_user_and_room() {
        let dek = DataKey::generate();
        let sealed = seal(&dek, "u1", "!r:x", "half a reply");
        assert!(!sealed.windows(4).any(|w| w == b"half"));
        assert_eq!(open(&dek, "u1", "!r:x", &sealed).unwrap(), "half a reply");
        assert!(open(&dek, "u1", "!other:x", &sealed).is_err());
        assert!(open(&dek, "u2", "!r:x", &sealed).is_err());
    }
}
