//! Deleting stored messages (`DELETE /api/messages`, `DELETE /api/messages/{id}`).

use super::*;

/// What `DELETE /api/messages` removed, and the normalised criteria.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub count: usize,
    pub room_id: Option<String>,
    pub before_ms: Option<i64>,
}

/// `DELETE /api/messages`: the caller's stored messages, optionally of one room and/or
/// older than `before`. Needs `X-Confirm-Delete: DELETE_MESSAGES` (400
/// `confirmation_required`). Matrix is untouched.
pub async fn delete_matching(
    state: &Context,
    user_id: &str,
    confirmation: Option<&str>,
    room_id: Option<&str>,
    before: Option<&str>,
) -> AppResult<Deleted> {
    if confirmation.map(str::trim) != Some(DELETE_CONFIRMATION) {
        return Err(AppError::bad_request(
            ErrorCode::ConfirmationRequired,
            format!("send the header X-Confirm-Delete: {DELETE_CONFIRMATION} to delete messages"),
        ));
    }
    let room_id = parse_optional_room_id(room_id)?;
    let before_ms = parse_before(before)?;
    let uid = user_id.to_owned();
    let room = room_id.clone();
    let rooms: Vec<String> = state
        .db(move |c| {
            let tx = c.transaction()?;
            let deleted = stored::delete_matching(&tx, &uid, room.as_deref(), before_ms)?;
            // What was still to fetch before them is dropped too: paging back must not
            // bring back history the user chose to delete.
            crate::store::history::drop_gaps(&tx, &uid, room.as_deref(), before_ms)?;
            tx.commit()?;
            Ok(deleted)
        })
        .await?;
    let count = rooms.len();
    for room in rooms.into_iter().collect::<BTreeSet<_>>() {
        state.events.publish(
            user_id,
            ChangeEvent::RoomUpdated {
                room_id: room.to_owned(),
            },
        );
    }
    Ok(Deleted {
        count,
        room_id,
        before_ms,
    })
}

/// `DELETE /api/messages/{messageId}`: 400 for a non-UUID id, 404 unless it is one of the
/// caller's messages. Returns the (normalised) id.
pub async fn delete_one(state: &Context, user_id: &str, message_id: &str) -> AppResult<String> {
    let id = crate::services::scheduled::parse_id("messageId", message_id)?;
    let uid = user_id.to_owned();
    let mid = id.clone();
    let room = state
        .db(move |c| Ok(stored::delete_one(c, &uid, &mid)?))
        .await?
        .ok_or_else(|| AppError::not_found("message"))?;
    state.events.publish(
        user_id,
        ChangeEvent::RoomUpdated {
            room_id: room.to_owned(),
        },
    );
    Ok(id)
}
