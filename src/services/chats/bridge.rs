//! A new chat on a bridge: `GET /v3/resolve_identifier/{identifier}` (404
//! `identifier_not_found` when nobody has it), then `POST /v3/create_dm/{identifier}`
//! (201 from the bridge: the portal was created now). The bridge invites the user to the
//! portal (from its bot or a ghost; with double puppeting the user is joined already):
//! Switchboard joins it at once, checks that the bridge's bot or one of its ghosts created
//! the room (else it leaves and answers 502), and stores it.
//!
//! Bridge errors are mapped in `services::upstream` (`not_logged_in`,
//! `identifier_not_found`, `bridge_error`, `bridge_unavailable`).

use super::{joined, Acting, NewChat};
use crate::clients::matrix::types::Event;
use crate::clients::matrix::MatrixClient;
use crate::clients::provisioning::identity::BridgeIdentities;
use crate::clients::provisioning::Platform;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{bridge_error, homeserver_room_error};
use crate::services::Context;

pub async fn start(
    state: &Context,
    matrix: &MatrixClient,
    acting: &Acting,
    platform: Platform,
    identifier: &str,
) -> AppResult<NewChat> {
    let client = state.bridges.clients.get(platform)?.clone();
    let mapped = |e| bridge_error(e, ErrorCode::IdentifierNotFound);
    let who = client
        .resolve_identifier(&acting.mxid, identifier)
        .await
        .map_err(mapped)?;
    let (dm, created) = client
        .create_dm(&acting.mxid, identifier)
        .await
        .map_err(mapped)?;
    let room_id = dm
        .dm_room_mxid
        .filter(|r| r.starts_with('!') && r.len() > 1)
        .ok_or_else(|| AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: format!(
                "the {} bridge answered create_dm without a room",
                platform.name()
            ),
        })?;
    if !joined::is_joined(state, &acting.user.id, &room_id).await? {
        let state_events = join_portal(state, matrix, acting, platform, &room_id).await?;
        let ghost = dm.mxid.or(who.mxid).into_iter().collect();
        let direct = matrix
            .direct_rooms(&acting.token, &acting.mxid)
            .await
            .map(|d| serde_json::to_value(d).unwrap_or_default())
            .unwrap_or_default();
        joined::store(state, acting, &room_id, state_events, direct, ghost).await?;
    }
    Ok(NewChat { room_id, created })
}

/// Joins the portal the bridge named, then makes sure it is the bridge's: its creator
/// must be the platform's configured bot or one of its ghosts (the namespace the bridge's
/// appservice holds), the same users whose invitations the sync accepts. Returns the
/// room's state.
pub(super) async fn join_portal(
    state: &Context,
    matrix: &MatrixClient,
    acting: &Acting,
    platform: Platform,
    room_id: &str,
) -> AppResult<Vec<Event>> {
    matrix
        .join(&acting.token, room_id)
        .await
        .map_err(|e| homeserver_room_error("join", e))?;
    let events = joined::room_state(matrix, acting, room_id).await?;
    let creator = events
        .iter()
        .find(|e| e.kind == "m.room.create")
        .and_then(|e| e.sender.as_deref());
    let identities = BridgeIdentities::from_config(&state.config.bridges);
    let by_bridge = creator.is_some_and(|c| {
        identities.bot_platform(c) == Some(platform.id())
            || identities.ghost_platform(c) == Some(platform.id())
    });
    if by_bridge {
        return Ok(events);
    }
    tracing::warn!(%room_id, creator = creator.unwrap_or("unknown"), platform = platform.id(),
        "create_dm named a room its bridge did not create; leaving it");
    if let Err(e) = matrix.leave(&acting.token, room_id).await {
        tracing::warn!(%room_id, error = %e, "could not leave the room");
    }
    Err(AppError::BadGateway {
        code: ErrorCode::BridgeError,
        message: format!(
            "the {} bridge named a room that its bot or ghosts did not create",
            platform.name()
        ),
    })
}
