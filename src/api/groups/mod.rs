//! `/api/rooms/{roomId}/name|topic|avatar|members|leave`: managing a group the user is
//! in (`services::groups`). Native sessions and personal tokens (allowlist version 6:
//! older tokens opt in first).

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::security::TokenAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::groups::{self, members};
use crate::state::AppState;

mod avatar;
pub use avatar::GroupAvatarApi;

#[derive(Debug, Object)]
pub struct RoomNameRequest {
    /// The new name, at most 255 characters (trimmed; blank removes the name).
    pub name: String,
}

#[derive(Debug, Object)]
pub struct RoomTopicRequest {
    /// The new topic, at most 2048 characters (trimmed; line breaks allowed; blank removes
    /// the topic).
    pub topic: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct InviteRequest {
    /// Matrix user ID of the person to invite (`@alice:example.org`; on a bridged group
    /// the person's ghost, e.g. a contact's `matrixId`).
    pub user_id: String,
}

#[derive(Debug, Object)]
pub struct RemoveMemberRequest {
    /// Shown to the room with the removal; at most 512 characters.
    pub reason: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct GroupChanged {
    pub room_id: String,
    pub message: String,
}

/// A member of a group.
#[derive(Debug, Object)]
#[oai(rename = "GroupMember", rename_all = "camelCase")]
pub struct GroupMemberObject {
    pub user_id: String,
    /// Display name in this room; null when the member set none.
    pub display_name: Option<String>,
    /// The member's avatar through Switchboard (`GET
    /// /api/rooms/{roomId}/members/{userId}/avatar`); null when none.
    pub avatar_url: Option<String>,
    /// `join`, `invite` or `ban`.
    pub membership: String,
    /// Power level in the room. The creators of a room version 12 room outrank every level
    /// and are given 9007199254740991 (2^53 - 1).
    pub power_level: i64,
}

/// What the caller may change in the group, by its power levels.
#[derive(Debug, Object)]
#[oai(rename = "GroupPermissions", rename_all = "camelCase")]
pub struct GroupPermissionsObject {
    pub rename: bool,
    pub set_topic: bool,
    pub set_avatar: bool,
    pub invite: bool,
    pub remove: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct GroupMembersResult {
    pub room_id: String,
    /// Joined members first, then invited, then banned; by power level, then name. At
    /// most 500.
    pub members: Vec<GroupMemberObject>,
    /// All members (joined, invited, banned), also beyond the 500 listed.
    pub total: i64,
    pub permissions: GroupPermissionsObject,
}

fn changed(room_id: &str, message: &str) -> Json<GroupChanged> {
    Json(GroupChanged {
        room_id: room_id.to_owned(),
        message: message.to_owned(),
    })
}

pub struct GroupsApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Groups")]
impl GroupsApi {
    /// Rename a group
    ///
    /// Sets the room's `m.room.name` as the user (the bridge renames the group on the
    /// network where it allows). Blank removes the name. The stored room follows at once
    /// (`GET /api/rooms`, `room.updated`); the native app's own override name (`PUT
    /// /api/rooms/{roomId}`) is unchanged. 400 `invalid_request` naming `name` (over 255
    /// characters, control characters); 404 `not_found` when the room is not the user's;
    /// 409 `not_joined` for an invitation not accepted; 403 `not_permitted` with the
    /// homeserver's reason when its power levels refuse; 502/503 when the homeserver
    /// fails. Personal tokens: allowlist version 6.
    #[oai(path = "/:roomId/name", method = "put", operation_id = "groups_rename")]
    async fn rename(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<RoomNameRequest>,
    ) -> Result<Json<GroupChanged>, AppError> {
        groups::set_name(&state, auth.user_id(), &room_id, &body.name).await?;
        Ok(changed(&room_id, "room renamed"))
    }

    /// Set a group's topic
    ///
    /// Sets `m.room.topic` (plain text, also as `m.topic`) as the user; blank removes it.
    /// At most 2048 characters (WhatsApp's limit for a group description; Telegram's is
    /// 255 and its bridge may refuse or shorten a longer one). Errors as for the name, naming
    /// `topic`. Personal tokens: allowlist version 6.
    #[oai(path = "/:roomId/topic", method = "put", operation_id = "groups_topic")]
    async fn topic(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<RoomTopicRequest>,
    ) -> Result<Json<GroupChanged>, AppError> {
        groups::set_topic(&state, auth.user_id(), &room_id, &body.topic).await?;
        Ok(changed(&room_id, "topic set"))
    }

    /// List a group's members
    ///
    /// The room's joined, invited and banned members with display names and power levels,
    /// and what the caller may change (`permissions`), read live from the homeserver's room
    /// state. 404 `not_found`, 409 `not_joined`, 502/503 as for the name. Personal tokens:
    /// allowlist version 6.
    #[oai(
        path = "/:roomId/members",
        method = "get",
        operation_id = "groups_members"
    )]
    async fn members(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<GroupMembersResult>, AppError> {
        let list = members::list(&state, auth.user_id(), &room_id).await?;
        let enc = crate::clients::matrix::encode;
        let avatar = |m: &members::Member| {
            m.has_avatar.then(|| {
                format!(
                    "/api/rooms/{}/members/{}/avatar",
                    enc(&room_id),
                    enc(&m.user_id)
                )
            })
        };
        Ok(Json(GroupMembersResult {
            room_id: room_id.0.clone(),
            members: list
                .members
                .iter()
                .map(|m| GroupMemberObject {
                    avatar_url: avatar(m),
                    user_id: m.user_id.clone(),
                    display_name: m.display_name.clone(),
                    membership: m.membership.clone(),
                    power_level: m.power_level,
                })
                .collect(),
            total: list.total as i64,
            permissions: GroupPermissionsObject {
                rename: list.me.rename,
                set_topic: list.me.set_topic,
                set_avatar: list.me.set_avatar,
                invite: list.me.invite,
                remove: list.me.remove,
            },
        }))
    }

    /// Invite someone to a group
    ///
    /// Invites `userId` as the user (on a bridged group the bridge adds the person on the
    /// network where it allows). The member list follows at once (`room.updated`). 400
    /// `invalid_request` naming `userId` when it is not a Matrix user ID or is the user;
    /// 404 `identifier_not_found` when the homeserver knows no such user; 404 `not_found`,
    /// 409 `not_joined`, 403 `not_permitted` (power levels, a banned user) and 502/503 as
    /// for the name. Personal tokens: allowlist version 6.
    #[oai(
        path = "/:roomId/members",
        method = "post",
        operation_id = "groups_invite"
    )]
    async fn invite(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<InviteRequest>,
    ) -> Result<Json<GroupChanged>, AppError> {
        groups::invite(&state, auth.user_id(), &room_id, &body.user_id).await?;
        Ok(changed(&room_id, "invited"))
    }

    /// Remove a member from a group
    ///
    /// Removes `userId` (a kick; an invitation not accepted yet is withdrawn) with an
    /// optional `reason` (at most 512 characters) shown to the room. 400 naming `userId`
    /// (not a Matrix user ID, or the user: leave instead) or `reason`; 404 `not_found`, 409
    /// `not_joined`, 403 `not_permitted` (power levels, or the person is not in the room)
    /// and 502/503 as for the name. Personal tokens: allowlist version 6.
    #[oai(
        path = "/:roomId/members/:userId",
        method = "delete",
        operation_id = "groups_remove_member"
    )]
    async fn remove(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix user ID of the member, URL-encoded.
        #[oai(name = "userId")]
        user_id: Path<String>,
        body: Json<Option<RemoveMemberRequest>>,
    ) -> Result<Json<GroupChanged>, AppError> {
        let reason = body.0.and_then(|b| b.reason);
        groups::remove(
            &state,
            auth.user_id(),
            &room_id,
            &user_id,
            reason.as_deref(),
        )
        .await?;
        Ok(changed(&room_id, "member removed"))
    }

    /// Leave a group
    ///
    /// Leaves the room on the homeserver (an invitation: declines it; a bridged group: the
    /// bridge leaves the group on the network where it allows). The room leaves the list
    /// at once (`room.deleted`); its stored messages are kept as for any left room. 404
    /// `not_found` when the room is not the user's; 403 `not_permitted`, 502/503 when the
    /// homeserver refuses or fails. Personal tokens: allowlist version 6.
    #[oai(
        path = "/:roomId/leave",
        method = "post",
        operation_id = "groups_leave"
    )]
    async fn leave(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<GroupChanged>, AppError> {
        let room_id = groups::leave(&state, auth.user_id(), &room_id).await?;
        Ok(changed(&room_id, "left the room"))
    }
}
