//! The room flags Switchboard shares with the user's other Matrix clients, written to the
//! homeserver the way Element writes them: favorite is the `m.favourite` tag, archived the
//! `m.lowpriority` tag, the notification level Element's per-room push rules (muted, level
//! "off": an `override` rule matching the room with no actions; level "mentions": a `room`
//! rule with the room's id and no actions, so only the rules for mentions and keywords, which
//! come before it, still notify; "all": neither), the marked-unread mark the
//! `m.marked_unread` room account data. Pinned stays Switchboard's own.
//!
//! Best effort: the flag is stored here first; when the homeserver cannot be told, the
//! failure is logged and the flag stays (the caller's answer still says what was stored).

use serde_json::json;

use super::acting;
use crate::clients::matrix::conversation::RoomPushLevel;
use crate::services::Context;
use crate::store::rooms::RoomFlag;

/// The tags of the favorite and archived flags.
pub const FAVOURITE_TAG: &str = "m.favourite";
pub const LOW_PRIORITY_TAG: &str = "m.lowpriority";

/// Writes a flag the user just set to the homeserver; returns whether it was written (or
/// has no counterpart there, like `pinned`).
pub async fn flag(
    state: &Context,
    user_id: &str,
    room_id: &str,
    flag: RoomFlag,
    value: bool,
) -> bool {
    let tag = match flag {
        RoomFlag::Favorite => Some(FAVOURITE_TAG),
        RoomFlag::Archived => Some(LOW_PRIORITY_TAG),
        RoomFlag::Muted => None,
        RoomFlag::Pinned => return true,
    };
    let a = match acting(state, user_id).await {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(%room_id, error = %e, "room flag not mirrored: no homeserver session");
            return false;
        }
    };
    let result = match tag {
        Some(tag) => {
            a.matrix
                .set_room_tag(&a.token, &a.mxid, room_id, tag, value)
                .await
        }
        None => {
            // Unmuted, the room goes back to the level it had before ("all" or "mentions").
            let level = if value {
                RoomPushLevel::Off
            } else {
                stored_level(state, user_id, room_id).await
            };
            a.matrix.set_room_push_level(&a.token, room_id, level).await
        }
    };
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(%room_id, ?flag, error = %e, "room flag not mirrored to the homeserver");
            false
        }
    }
}

/// The push level the room's stored flags say (`muted` wins, then `notify_level`).
async fn stored_level(state: &Context, user_id: &str, room_id: &str) -> RoomPushLevel {
    let (uid, rid) = (user_id.to_owned(), room_id.to_owned());
    let row = state
        .db(move |c| Ok(crate::store::rooms::find(c, &uid, &rid)?))
        .await
        .ok()
        .flatten();
    match row {
        Some(r) if r.muted => RoomPushLevel::Off,
        Some(r) if r.notify_level == "mentions" => RoomPushLevel::Mentions,
        _ => RoomPushLevel::All,
    }
}

/// Writes the room's notification level (`PUT /api/rooms/{roomId}/notifications`) as
/// Element's push rules; returns whether the homeserver took it.
pub async fn level(state: &Context, user_id: &str, room_id: &str, level: RoomPushLevel) -> bool {
    let a = match acting(state, user_id).await {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(%room_id, error = %e, "notification level not mirrored: no homeserver session");
            return false;
        }
    };
    match a.matrix.set_room_push_level(&a.token, room_id, level).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(%room_id, error = %e, "notification level not mirrored to the homeserver");
            false
        }
    }
}

/// Sets `m.marked_unread` `{unread}` on the room; returns whether the homeserver took it.
pub async fn marked_unread(state: &Context, user_id: &str, room_id: &str, unread: bool) -> bool {
    let a = match acting(state, user_id).await {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(%room_id, error = %e, "marked-unread not mirrored: no homeserver session");
            return false;
        }
    };
    let content = json!({"unread": unread});
    match a
        .matrix
        .put_room_account_data(&a.token, &a.mxid, room_id, "m.marked_unread", &content)
        .await
    {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(%room_id, error = %e, "marked-unread not mirrored to the homeserver");
            false
        }
    }
}
