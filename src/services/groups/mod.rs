//! Managing a group the user is in, as Matrix state changes made with the user's own
//! Matrix session (so the homeserver's power levels decide, and the bridges carry each
//! change to the network where it allows): name, topic, avatar, inviting, removing and
//! leaving; and reading its members ([`members`]).
//!
//! - The room must be one of the user's rooms (404 `not_found` otherwise, as everywhere)
//!   that the user has joined (409 `not_joined` for an invitation not accepted yet; leaving
//!   one declines it).
//! - A refusal by the homeserver (403: power levels, the target not in the room) is 403
//!   `not_permitted` with the homeserver's reason; other failures are 502/503 as for every
//!   homeserver call.
//! - The change is applied to the stored room at once through the sync's own ingest, and
//!   `room.updated` published (leaving: the room leaves the list, `room.deleted`), so the
//!   room list and the event stream follow without waiting for the next sync. The sync
//!   brings the same event again later, which changes nothing.
//! - The room's own override name (`PUT /api/rooms/{roomId}`, the native app's sealed
//!   name) is a separate field and is not touched.

use rusqlite::TransactionBehavior;
use serde_json::{json, Value};

use crate::clients::matrix::types::Event;
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::chats::{self, joined, Acting};
use crate::services::upstream::homeserver_error;
use crate::services::{media, rooms, Context};

pub mod members;
mod validate;

pub use validate::{
    check_name, check_reason, check_topic, check_user_id, MAX_AVATAR_BYTES, MAX_REASON_CHARS,
    MAX_TOPIC_CHARS,
};

/// The user's joined room and what is needed to act in it.
struct InRoom {
    room_id: String,
    matrix: MatrixClient,
    acting: Acting,
}

async fn joined_room(state: &Context, user_id: &str, room_id: &str) -> AppResult<InRoom> {
    let row = rooms::require_room(state, user_id, room_id).await?;
    if row.membership != "join" {
        return Err(AppError::conflict(
            ErrorCode::NotJoined,
            "the user has not joined this room (accept the invitation first)",
        ));
    }
    in_room(state, user_id, row.room_id).await
}

async fn in_room(state: &Context, user_id: &str, room_id: String) -> AppResult<InRoom> {
    let matrix = state.matrix.clone().ok_or_else(|| {
        AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "no Matrix homeserver is configured on this server",
        )
    })?;
    let acting = chats::acting(state, user_id).await?;
    Ok(InRoom {
        room_id,
        matrix,
        acting,
    })
}

/// The homeserver's refusal (403) as 403 `not_permitted` with its reason.
fn refused(action: &str, e: MatrixError) -> AppError {
    match e {
        MatrixError::Http {
            status: 403,
            message,
            errcode,
        } => AppError::forbidden(
            ErrorCode::NotPermitted,
            format!("the homeserver does not let the user {action} ({errcode}): {message}"),
        ),
        other => homeserver_error(other),
    }
}

/// Stores a state event the user just sent, through the sync's ingest, and publishes
/// `room.updated`.
async fn apply(
    state: &Context,
    room: &InRoom,
    event_id: Option<String>,
    kind: &str,
    state_key: &str,
    content: Value,
) -> AppResult<()> {
    let event = Event {
        kind: kind.to_owned(),
        event_id,
        sender: Some(room.acting.mxid.clone()),
        origin_server_ts: Some(unix_now() as i64 * 1000),
        state_key: Some(state_key.to_owned()),
        content,
        redacts: None,
        unsigned: None,
    };
    joined::store(
        state,
        &room.acting,
        &room.room_id,
        vec![event],
        json!({}),
        vec![],
    )
    .await
}

/// Sends one room state event (`state_key` empty) and stores it.
async fn set_room_state(
    state: &Context,
    room: &InRoom,
    action: &str,
    kind: &str,
    content: Value,
) -> AppResult<()> {
    let event_id = room
        .matrix
        .set_state(&room.acting.token, &room.room_id, kind, "", &content)
        .await
        .map_err(|e| refused(action, e))?;
    tracing::info!(user_id = %room.acting.user.id, room_id = %room.room_id, kind, "room state changed");
    apply(state, room, Some(event_id), kind, "", content).await
}

/// `PUT /api/rooms/{roomId}/name`: blank removes the name.
pub async fn set_name(state: &Context, user_id: &str, room_id: &str, name: &str) -> AppResult<()> {
    let name = check_name(name)?;
    let room = joined_room(state, user_id, room_id).await?;
    set_room_state(
        state,
        &room,
        "rename the room",
        "m.room.name",
        json!({ "name": name }),
    )
    .await
}

/// `PUT /api/rooms/{roomId}/topic`: blank removes the topic.
pub async fn set_topic(
    state: &Context,
    user_id: &str,
    room_id: &str,
    topic: &str,
) -> AppResult<()> {
    let topic = check_topic(topic)?;
    let room = joined_room(state, user_id, room_id).await?;
    let content = json!({
        "topic": topic,
        "m.topic": [{"mimetype": "text/plain", "body": topic}],
    });
    set_room_state(state, &room, "change the topic", "m.room.topic", content).await
}

/// `POST /api/rooms/{roomId}/avatar`: uploads the image (in the clear: room state is not
/// end-to-end encrypted) and sets it as `m.room.avatar`. Returns its `mxc://` URI.
pub async fn set_avatar<S>(
    state: &Context,
    user_id: &str,
    room_id: &str,
    claimed_type: Option<&str>,
    stream: S,
) -> AppResult<String>
where
    S: futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send + Unpin + 'static,
{
    let room = joined_room(state, user_id, room_id).await?;
    let image = media::upload_image(
        state,
        &room.matrix,
        &room.acting.token,
        claimed_type,
        stream,
        MAX_AVATAR_BYTES,
    )
    .await?;
    let mut info = json!({"mimetype": image.mimetype, "size": image.size});
    if let (Some(w), Some(h)) = (image.width, image.height) {
        info["w"] = json!(w);
        info["h"] = json!(h);
    }
    let content = json!({"url": image.mxc, "info": info});
    set_room_state(state, &room, "change the avatar", "m.room.avatar", content).await?;
    Ok(image.mxc)
}

/// `POST /api/rooms/{roomId}/members`: invites `target`, who must be known to the
/// homeserver (404 `identifier_not_found` naming `userId` otherwise).
pub async fn invite(state: &Context, user_id: &str, room_id: &str, target: &str) -> AppResult<()> {
    let target = check_user_id(target)?;
    let room = joined_room(state, user_id, room_id).await?;
    if target == room.acting.mxid {
        return Err(AppError::invalid(
            "userId",
            "is the user, who is in the room already",
        ));
    }
    match room.matrix.profile(&room.acting.token, &target).await {
        Ok(()) => {}
        Err(MatrixError::Http { status: 404, .. }) => {
            return Err(AppError::NotFound {
                code: ErrorCode::IdentifierNotFound,
                message: format!("userId: no Matrix user {target} is known to the homeserver"),
            })
        }
        Err(e) => return Err(homeserver_error(e)),
    }
    room.matrix
        .invite(&room.acting.token, &room.room_id, &target)
        .await
        .map_err(|e| refused("invite to this room", e))?;
    tracing::info!(%user_id, room_id = %room.room_id, %target, "member invited");
    let content = json!({"membership": "invite"});
    apply(state, &room, None, "m.room.member", &target, content).await
}

/// `DELETE /api/rooms/{roomId}/members/{userId}`: removes a member (or withdraws an
/// invitation), with an optional reason shown to the room.
pub async fn remove(
    state: &Context,
    user_id: &str,
    room_id: &str,
    target: &str,
    reason: Option<&str>,
) -> AppResult<()> {
    let target = check_user_id(target)?;
    let reason = check_reason(reason)?;
    let room = joined_room(state, user_id, room_id).await?;
    if target == room.acting.mxid {
        return Err(AppError::invalid(
            "userId",
            "is the user; leave with POST /api/rooms/{roomId}/leave",
        ));
    }
    room.matrix
        .kick(
            &room.acting.token,
            &room.room_id,
            &target,
            reason.as_deref(),
        )
        .await
        .map_err(|e| refused("remove this member", e))?;
    tracing::info!(%user_id, room_id = %room.room_id, %target, "member removed");
    let mut content = json!({"membership": "leave"});
    if let Some(r) = reason {
        content["reason"] = json!(r);
    }
    apply(state, &room, None, "m.room.member", &target, content).await
}

/// `POST /api/rooms/{roomId}/leave`: leaves the room (declines it when it is an
/// invitation). The stored room is kept as left (hidden from the lists, as the sync keeps
/// left rooms) and `room.deleted` is published.
pub async fn leave(state: &Context, user_id: &str, room_id: &str) -> AppResult<String> {
    let row = rooms::require_room(state, user_id, room_id).await?;
    let room = in_room(state, user_id, row.room_id).await?;
    room.matrix
        .leave(&room.acting.token, &room.room_id)
        .await
        .map_err(|e| refused("leave this room", e))?;
    tracing::info!(%user_id, room_id = %room.room_id, "room left");
    let (uid, rid) = (user_id.to_owned(), room.room_id.clone());
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(mut row) = crate::store::rooms::find(&tx, &uid, &rid)? {
                row.membership = "leave".to_owned();
                row.invited_by = None;
                row.updated_at = unix_now() as i64;
                crate::store::rooms::update_synced(&tx, &row)?;
            }
            tx.commit()?;
            Ok::<_, AppError>(())
        })
        .await?;
    state.events.publish(
        user_id,
        ChangeEvent::RoomDeleted {
            room_id: room.room_id.clone(),
            messages_deleted: false,
        },
    );
    Ok(room.room_id)
}
