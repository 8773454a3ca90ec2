//! A new chat on plain Matrix: an end-to-end encrypted direct room (`is_direct`,
//! `m.room.encryption` in its initial state, preset `trusted_private_chat` as Element makes
//! DMs) with the person invited, recorded in the user's `m.direct` account data.
//!
//! The person must exist (`GET /profile/{userId}`: 404 `identifier_not_found` otherwise).
//! A direct room with them that the user has joined already (per `m.direct`) is returned
//! instead of a new one (`created: false`).

use std::collections::HashMap;

use serde_json::json;

use super::{joined, Acting, NewChat};
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::homeserver_error;
use crate::services::Context;

pub async fn start(
    state: &Context,
    matrix: &MatrixClient,
    acting: &Acting,
    partner: &str,
) -> AppResult<NewChat> {
    if partner == acting.mxid {
        return Err(AppError::invalid(
            "identifier",
            "is the user's own Matrix ID",
        ));
    }
    let mut direct = matrix
        .direct_rooms(&acting.token, &acting.mxid)
        .await
        .map_err(homeserver_error)?;
    for room_id in direct.get(partner).into_iter().flatten() {
        if joined::is_joined(state, &acting.user.id, room_id).await? {
            return Ok(NewChat {
                room_id: room_id.clone(),
                created: false,
            });
        }
    }
    check_exists(matrix, acting, partner).await?;
    let body = json!({
        "preset": "trusted_private_chat",
        "is_direct": true,
        "invite": [partner],
        "initial_state": [{
            "type": "m.room.encryption",
            "state_key": "",
            "content": {"algorithm": "m.megolm.v1.aes-sha2"},
        }],
    });
    let room_id = matrix
        .create_room(&acting.token, &body)
        .await
        .map_err(homeserver_error)?;
    direct
        .entry(partner.to_owned())
        .or_default()
        .push(room_id.clone());
    record_direct(matrix, acting, &direct, &room_id).await;
    let state_events = joined::room_state(matrix, acting, &room_id).await?;
    let content = serde_json::to_value(&direct).unwrap_or_default();
    joined::store(
        state,
        acting,
        &room_id,
        state_events,
        content,
        vec![partner.to_owned()],
    )
    .await?;
    Ok(NewChat {
        room_id,
        created: true,
    })
}

/// 404 `identifier_not_found` when the homeserver knows no such user.
async fn check_exists(matrix: &MatrixClient, acting: &Acting, partner: &str) -> AppResult<()> {
    match matrix.profile(&acting.token, partner).await {
        Ok(()) => Ok(()),
        Err(MatrixError::Http { status: 404, .. }) => Err(AppError::NotFound {
            code: ErrorCode::IdentifierNotFound,
            message: format!("identifier: no Matrix user {partner} is known to the homeserver"),
        }),
        Err(e) => Err(homeserver_error(e)),
    }
}

/// Writes `m.direct`. The room exists and is direct by its creation (`is_direct` on the
/// invite) whatever happens here, so a failure is logged, not answered: the next start
/// would then make another room, which is the lesser harm.
async fn record_direct(
    matrix: &MatrixClient,
    acting: &Acting,
    direct: &HashMap<String, Vec<String>>,
    room_id: &str,
) {
    if let Err(e) = matrix
        .set_direct_rooms(&acting.token, &acting.mxid, direct)
        .await
    {
        tracing::warn!(%room_id, error = %e, "could not record the new direct room in m.direct");
    }
}
