//! What a user does with a room: set its client name and avatar, delete it, mark it
//! read, set its flags (archive, mute, favorite, pin).

use super::*;
use crate::services::conversation::local_writes::SharedFlag;

/// A change of one client field: `None` leaves it, `Some(None)` clears it.
pub type Patch = Option<Option<String>>;

/// `PUT /api/rooms/{roomId}`: the native clients' own encrypted name and avatar.
#[derive(Debug, Clone, Default)]
pub struct ClientFields {
    pub encrypted_name: Patch,
    pub encrypted_avatar: Patch,
    pub nonce: Patch,
}

/// Non-empty standard base64 (with padding) of at most `max` characters; returns it trimmed.
pub fn validate_base64(field: &str, value: &str, max: usize) -> AppResult<String> {
    let v = value.trim();
    if v.is_empty() {
        return Err(AppError::invalid(
            field,
            "must not be empty (send null to clear it)",
        ));
    }
    if v.len() > max {
        return Err(AppError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    STANDARD
        .decode(v)
        .map_err(|_| AppError::invalid(field, "must be standard base64"))?;
    Ok(v.to_owned())
}

/// A patch of base64 field: a new value is validated, "leave" and "clear" pass.
pub fn validate_patch(field: &str, patch: Patch, max: usize) -> AppResult<Patch> {
    Ok(match patch {
        Some(Some(v)) => Some(Some(validate_base64(field, &v, max)?)),
        other => other,
    })
}

pub async fn update(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    fields: ClientFields,
) -> AppResult<()> {
    let room_id = validate_room_id(room_id)?;
    let name = validate_patch("encryptedName", fields.encrypted_name, MAX_ENCRYPTED_NAME)?;
    let avatar = validate_patch(
        "encryptedAvatar",
        fields.encrypted_avatar,
        MAX_ENCRYPTED_AVATAR,
    )?;
    let nonce = validate_patch("nonce", fields.nonce, MAX_NONCE)?;
    let uid = principal.user_id().to_owned();
    let rid = room_id.clone();
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let row = find_visible(&tx, &uid, &rid)?;
            let pick = |patch: Patch, current: Option<String>| patch.unwrap_or(current);
            rooms::set_client_fields(
                &tx,
                &uid,
                &rid,
                pick(name, row.client_name).as_deref(),
                pick(avatar, row.client_avatar).as_deref(),
                pick(nonce, row.client_nonce).as_deref(),
                unix_now() as i64,
            )?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    room_updated(state, principal.user_id(), &room_id);
    Ok(())
}

/// `deleteMessages` query value: `true` or `false` (default).
pub fn parse_delete_messages(value: Option<&str>) -> AppResult<bool> {
    match value.map(str::trim) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(AppError::invalid("deleteMessages", "must be true or false")),
    }
}

#[derive(Debug, Clone)]
pub struct Deleted {
    pub room_id: String,
    pub messages_deleted: bool,
    pub deleted_messages_count: i64,
}

/// `DELETE /api/rooms/{roomId}`: removes the user's rows of the room (room, members,
/// linked-group membership — an emptied group goes too — and with `deleteMessages` its
/// stored messages). Matrix and the bridges are not touched.
pub async fn delete(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    delete_messages: Option<&str>,
) -> AppResult<Deleted> {
    let room_id = validate_room_id(room_id)?;
    let with_messages = parse_delete_messages(delete_messages)?;
    let uid = principal.user_id().to_owned();
    let rid = room_id.clone();
    let count = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if rooms::find(&tx, &uid, &rid)?.is_none() {
                return Err(AppError::not_found("room"));
            }
            let count = remove_rows(&tx, &uid, &rid, with_messages)?;
            tx.commit()?;
            Ok(count)
        })
        .await?;
    state.events.publish(
        principal.user_id(),
        ChangeEvent::RoomDeleted {
            room_id: room_id.to_owned(),
            messages_deleted: with_messages,
        },
    );
    Ok(Deleted {
        room_id,
        messages_deleted: with_messages,
        deleted_messages_count: count,
    })
}

/// Removes the user's rows of a room: the room, its members, its place in a linked group
/// (an emptied group goes too) and, `with_messages`, its stored messages (how many is
/// returned).
pub(super) fn remove_rows(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    with_messages: bool,
) -> rusqlite::Result<i64> {
    let count = if with_messages {
        rooms::delete_messages(conn, user_id, room_id)? as i64
    } else {
        0
    };
    if let Some(group) = linked_groups::group_of_room(conn, user_id, room_id)? {
        linked_groups::remove_room(conn, &group, room_id)?;
        if linked_groups::room_count(conn, &group)? == 0 {
            linked_groups::delete(conn, user_id, &group)?;
        } else {
            linked_groups::touch(conn, &group, unix_now() as i64)?;
        }
    }
    rooms::delete(conn, user_id, room_id)?;
    Ok(count)
}

/// How marking read went on the homeserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMarker {
    /// Read markers moved to the newest message on the homeserver too.
    Sent,
    /// No stored message: marked read here only.
    NoMessages,
    /// The homeserver could not be told (unreachable, refused, or no Matrix account).
    NotSent,
    /// The user has not joined the room (an invitation): nothing is sent to the
    /// homeserver, so the inviter learns nothing.
    NotJoined,
}

/// `POST /api/rooms/{roomId}/read`: unread and highlight counts to 0, the marked-unread
/// mark cleared, the read marker to the newest stored message, and the same read markers
/// (`m.fully_read` and an `m.read` receipt, `m.read.private` when the user chose private
/// receipts) on the homeserver — only for joined rooms: a receipt in a room the
/// user was merely invited to would tell its inviter the user is reading.
pub async fn mark_read(
    state: &Context,
    principal: &Principal,
    room_id: &str,
) -> AppResult<ReadMarker> {
    let room_id = validate_room_id(room_id)?;
    let user = users::load(state, principal.user_id()).await?;
    let uid = user.id.clone();
    let rid = room_id.clone();
    let (joined, latest) = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let joined = find_visible(&tx, &uid, &rid)?.membership == "join";
            let latest = rooms::latest_event_id(&tx, &uid, &rid)?;
            rooms::mark_read(&tx, &uid, &rid, latest.as_deref(), unix_now() as i64)?;
            tx.commit()?;
            Ok((joined, latest))
        })
        .await?;
    let outcome = match latest {
        _ if !joined => ReadMarker::NotJoined,
        None => ReadMarker::NoMessages,
        Some(event_id) => match (&state.matrix, users::matrix_token_of(&state.master, &user)?) {
            (Some(matrix), Some(token)) => {
                let private = conversation::presence_settings(state, principal.user_id())
                    .await?
                    .private_receipts;
                let sent = if private {
                    matrix
                        .mark_read_privately(&token, &room_id, &event_id)
                        .await
                } else {
                    matrix.mark_read(&token, &room_id, &event_id).await
                };
                match sent {
                    Ok(()) => ReadMarker::Sent,
                    Err(e) => {
                        tracing::warn!(room = %room_id, error = %e, "read markers not sent to the homeserver");
                        ReadMarker::NotSent
                    }
                }
            }
            _ => ReadMarker::NotSent,
        },
    };
    conversation::clear_marked_unread(state, principal.user_id(), &room_id).await?;
    room_updated(state, principal.user_id(), &room_id);
    Ok(outcome)
}

/// Archive, mute, favorite, pin and their inverses, written to the homeserver too where
/// other Matrix clients have the same flag ([`conversation::mirror`]). Returns the room id
/// as stored.
pub async fn set_flag(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    flag: RoomFlag,
    value: bool,
) -> AppResult<String> {
    // Until the homeserver has the flag, a sync response begun earlier keeps off it.
    let shared = match flag {
        RoomFlag::Favorite | RoomFlag::Archived => Some(SharedFlag::Tags),
        RoomFlag::Muted => Some(SharedFlag::PushLevel),
        RoomFlag::Pinned => None,
    };
    let room_id = validate_room_id(room_id)?;
    let _writing = shared.map(|f| state.local_writes.begin(principal.user_id(), &room_id, f));
    let uid = principal.user_id().to_owned();
    let rid = room_id.clone();
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            find_visible(&tx, &uid, &rid)?;
            rooms::set_flag(&tx, &uid, &rid, flag, value, unix_now() as i64)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    room_updated(state, principal.user_id(), &room_id);
    conversation::mirror::flag(state, principal.user_id(), &room_id, flag, value).await;
    Ok(room_id)
}

/// 404 `not_found` unless the user has the room (joined or invited).
pub async fn require_room(state: &Context, user_id: &str, room_id: &str) -> AppResult<RoomRow> {
    let room_id = validate_room_id(room_id)?;
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| find_visible(c, &uid, &room_id))
        .await
}

/// Announces a change to one of the user's rooms.
fn room_updated(state: &Context, user_id: &str, room_id: &str) {
    state.events.publish(
        user_id,
        ChangeEvent::RoomUpdated {
            room_id: room_id.to_owned(),
        },
    );
}
