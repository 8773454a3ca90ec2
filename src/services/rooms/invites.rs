//! Invitations the sync worker leaves to the user: every invite that does not come from a
//! configured bridge bot or its ghosts (see `bridges::identity`). They are listed with
//! membership `invite` until the user accepts (Matrix join) or declines (Matrix leave) them.

use super::*;
use crate::clients::matrix::MatrixClient;
use crate::error::ErrorCode;
use crate::events::ChangeEvent;
use crate::services::upstream::homeserver_room_error;

fn not_invited() -> AppError {
    AppError::conflict(
        ErrorCode::NotInvited,
        "this room is not an invitation: the user has already joined it",
    )
}

/// The invited room (404 when the user does not have it, 409 `not_invited` when joined)
/// and the user's Matrix client and token.
async fn invitation(
    state: &Context,
    principal: &Principal,
    room_id: &str,
) -> AppResult<(String, MatrixClient, String)> {
    let room_id = validate_room_id(room_id)?;
    let user = users::load(state, principal.user_id()).await?;
    let (uid, rid) = (user.id.clone(), room_id.clone());
    let row = state
        .store
        .run(move |c| find_visible(c, &uid, &rid))
        .await?;
    if row.membership != "invite" {
        return Err(not_invited());
    }
    let matrix = state.matrix.clone().ok_or_else(|| AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    })?;
    let token = users::matrix_token_of(&state.master, &user)?.ok_or_else(|| {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    })?;
    Ok((room_id, matrix, token))
}

/// `POST /api/rooms/{roomId}/accept`: joins the room on the homeserver, records it as
/// joined and returns it as the single-room read does. The sync worker then brings its
/// state and messages.
pub async fn accept(state: &Context, principal: &Principal, room_id: &str) -> AppResult<RoomView> {
    let (room_id, matrix, token) = invitation(state, principal, room_id).await?;
    matrix
        .join(&token, &room_id)
        .await
        .map_err(|e| homeserver_room_error("join", e))?;
    tracing::info!(user_id = %principal.user_id(), %room_id, "invitation accepted");
    let (uid, rid) = (principal.user_id().to_owned(), room_id.clone());
    state
        .store
        .query(move |c| rooms::set_joined(c, &uid, &rid, unix_now() as i64))
        .await?;
    state.events.publish(
        principal.user_id(),
        ChangeEvent::RoomUpdated {
            room_id: room_id.to_owned(),
        },
    );
    // Reading the invitation may have refreshed its members moments ago: the joined
    // room's members come from the homeserver now, not from the throttled copy.
    super::cached::forget_refresh(principal.user_id(), &room_id);
    get(state, principal, &room_id).await
}

/// `POST /api/rooms/{roomId}/decline`: leaves the room on the homeserver (rejecting the
/// invitation) and removes it from the service. Returns the room id.
pub async fn decline(state: &Context, principal: &Principal, room_id: &str) -> AppResult<String> {
    let (room_id, matrix, token) = invitation(state, principal, room_id).await?;
    matrix
        .leave(&token, &room_id)
        .await
        .map_err(|e| homeserver_room_error("leave", e))?;
    tracing::info!(user_id = %principal.user_id(), %room_id, "invitation declined");
    let (uid, rid) = (principal.user_id().to_owned(), room_id.clone());
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // The worker may have ingested the leave already.
            if rooms::find(&tx, &uid, &rid)?.is_some() {
                remove_rows(&tx, &uid, &rid, false)?;
            }
            tx.commit()?;
            Ok(())
        })
        .await?;
    state.events.publish(
        principal.user_id(),
        ChangeEvent::RoomDeleted {
            room_id: room_id.to_owned(),
            messages_deleted: false,
        },
    );
    Ok(room_id)
}
