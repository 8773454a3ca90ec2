//! A new group: `POST /api/chats {platform, participants, name}`.
//!
//! - Bridges: the network's group types from `GET /v3/capabilities`
//!   (`group_creation`; none: 409 `not_supported`), the chosen type's bounds checked here
//!   (so the answer names the field), every participant resolved to the network's user id
//!   (`GET /v3/resolve_identifier`, 404 `identifier_not_found` naming the first unknown
//!   one), then `POST /v3/create_group/{type}`; the portal room the bridge names is joined
//!   after checking that its bot or a ghost created it, as for a direct chat.
//! - Matrix: every participant must exist (profile lookup), then an end-to-end encrypted
//!   private room (`m.room.encryption` in its initial state) with them invited.
//!
//! Either way the room is stored before the answer, so it is listed at once.

use futures_util::{StreamExt, TryStreamExt};
use serde_json::json;

use super::{bridge, joined, Acting, NewChat};
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::clients::provisioning::types::GroupTypeCapabilities;
use crate::clients::provisioning::{Failure, Platform, ProvisioningClient};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{bridge_error, homeserver_error};
use crate::services::Context;

/// Lookups made at once while resolving participants (bridge or homeserver).
const RESOLVE_CONCURRENCY: usize = 4;

/// The group type used when a network offers several: the plain group when there is one.
const PREFERRED_TYPE: &str = "group";

pub async fn start_bridge(
    state: &Context,
    matrix: &MatrixClient,
    acting: &Acting,
    platform: Platform,
    participants: &[String],
    name: Option<&str>,
) -> AppResult<NewChat> {
    let client = state.bridges.clients.get(platform)?.clone();
    let caps = client
        .capabilities(&acting.mxid)
        .await
        .map_err(|e| unsupported_or(e, platform))?;
    let types = caps.group_creation.unwrap_or_default();
    let Some((group_type, spec)) = types
        .get_key_value(PREFERRED_TYPE)
        .or_else(|| types.iter().next())
    else {
        return Err(not_supported(platform));
    };
    check_bounds(platform, spec, participants.len(), name)?;
    let resolved = resolve_all(&client, &acting.mxid, participants).await?;
    let created = client
        .create_group(&acting.mxid, group_type, &resolved, name)
        .await
        .map_err(|e| unsupported_or(e, platform))?;
    if let Some(failed) = created
        .failed_participants
        .as_ref()
        .filter(|f| !f.is_empty())
    {
        tracing::warn!(platform = platform.id(), failed = ?failed.keys().collect::<Vec<_>>(),
            "the network did not add every participant to the new group");
    }
    let room_id = created
        .mxid
        .filter(|r| r.starts_with('!') && r.len() > 1)
        .ok_or_else(|| AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: format!(
                "the {} bridge answered create_group without a room",
                platform.name()
            ),
        })?;
    if !joined::is_joined(state, &acting.user.id, &room_id).await? {
        let events = bridge::join_portal(state, matrix, acting, platform, &room_id).await?;
        joined::store(state, acting, &room_id, events, json!({}), vec![]).await?;
    }
    Ok(NewChat {
        room_id,
        created: true,
    })
}

/// Every participant as the network's user id, [`RESOLVE_CONCURRENCY`] lookups at once,
/// in the order given.
async fn resolve_all(
    client: &ProvisioningClient,
    mxid: &str,
    participants: &[String],
) -> AppResult<Vec<String>> {
    let lookups: Vec<_> = participants
        .iter()
        .enumerate()
        .map(|(i, identifier)| resolve_one(client, mxid, i, identifier))
        .collect();
    futures_util::stream::iter(lookups)
        .buffered(RESOLVE_CONCURRENCY)
        .try_collect()
        .await
}

/// The chosen group type's bounds on participants (besides the user) and the name, as
/// the bridge would check them, answered 400 naming the field.
fn check_bounds(
    platform: Platform,
    spec: &GroupTypeCapabilities,
    count: usize,
    name: Option<&str>,
) -> AppResult<()> {
    let p = &spec.participants;
    let bridge = platform.name();
    if count < p.min_length {
        return Err(AppError::invalid(
            "participants",
            format!(
                "a {bridge} group needs at least {} besides you",
                p.min_length
            ),
        ));
    }
    if p.max_length > 0 && count > p.max_length {
        return Err(AppError::invalid(
            "participants",
            format!(
                "a {bridge} group takes at most {} at creation",
                p.max_length
            ),
        ));
    }
    let len = name.map_or(0, str::len);
    if len == 0 && spec.name.required {
        return Err(AppError::invalid(
            "name",
            format!("is required for a {bridge} group"),
        ));
    }
    if spec.name.max_length > 0 && len > spec.name.max_length {
        return Err(AppError::invalid(
            "name",
            format!(
                "a {bridge} group name has at most {} bytes",
                spec.name.max_length
            ),
        ));
    }
    Ok(())
}

fn not_supported(platform: Platform) -> AppError {
    AppError::conflict(
        ErrorCode::NotSupported,
        format!("the {} bridge cannot create groups", platform.name()),
    )
}

/// `M_UNRECOGNIZED` (a bridge without the capabilities endpoint or without group
/// creation) is 409 `not_supported`; other failures as for any bridge call.
fn unsupported_or(e: crate::clients::provisioning::BridgeError, platform: Platform) -> AppError {
    if e.failure() == Failure::Unsupported {
        return not_supported(platform);
    }
    bridge_error(e, ErrorCode::NotFound)
}

/// A plain-Matrix group: every participant must be known to the homeserver.
pub async fn start_matrix(
    state: &Context,
    matrix: &MatrixClient,
    acting: &Acting,
    participants: &[String],
    name: Option<&str>,
) -> AppResult<NewChat> {
    let lookups: Vec<_> = participants
        .iter()
        .enumerate()
        .map(|(i, who)| known_on_matrix(matrix, &acting.token, i, who))
        .collect();
    futures_util::stream::iter(lookups)
        .buffered(RESOLVE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    let mut body = json!({
        "preset": "private_chat",
        "invite": participants,
        "initial_state": [{
            "type": "m.room.encryption",
            "state_key": "",
            "content": {"algorithm": "m.megolm.v1.aes-sha2"},
        }],
    });
    if let Some(name) = name {
        body["name"] = json!(name);
    }
    let room_id = matrix
        .create_room(&acting.token, &body)
        .await
        .map_err(homeserver_error)?;
    let events = joined::room_state(matrix, acting, &room_id).await?;
    // Until it has a name or members who joined, the room is named after its invitees.
    let heroes = participants.iter().take(5).cloned().collect();
    joined::store(state, acting, &room_id, events, json!({}), heroes).await?;
    Ok(NewChat {
        room_id,
        created: true,
    })
}

/// The network's user id of participant `i` (404 naming `participants[i]` when nobody
/// has the identifier).
async fn resolve_one(
    client: &ProvisioningClient,
    mxid: &str,
    i: usize,
    identifier: &str,
) -> AppResult<String> {
    let who = client
        .resolve_identifier(mxid, identifier)
        .await
        .map_err(|e| match bridge_error(e, ErrorCode::IdentifierNotFound) {
            AppError::NotFound { code, message } => AppError::NotFound {
                code,
                message: format!("participants[{i}]: {message}"),
            },
            other => other,
        })?;
    Ok(who.id)
}

/// 404 naming `participants[i]` unless the homeserver knows the Matrix user `who`.
async fn known_on_matrix(matrix: &MatrixClient, token: &str, i: usize, who: &str) -> AppResult<()> {
    match matrix.profile(token, who).await {
        Ok(()) => Ok(()),
        Err(MatrixError::Http { status: 404, .. }) => Err(AppError::NotFound {
            code: ErrorCode::IdentifierNotFound,
            message: format!("participants[{i}]: no Matrix user {who} is known to the homeserver"),
        }),
        Err(e) => Err(homeserver_error(e)),
    }
}
