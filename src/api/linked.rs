//! `/api/rooms/link` and `/api/rooms/linked/*`: linked room groups (native clients).

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::NativeAuth;
use super::views::{time, MessageResponse};
use super::ApiTags;
use crate::error::AppError;
use crate::services::linked::{self, GroupChange, GroupView, NewGroup};
use crate::state::AppState;

/// A room of a linked group.
#[derive(Debug, Clone, Object)]
#[oai(rename = "LinkedGroupRoom", rename_all = "camelCase")]
pub struct LinkedGroupRoom {
    pub room_id: String,
    /// `whatsapp`, `telegram`, `discord`, or null (plain Matrix room, or a room no longer
    /// in the room list).
    pub platform: Option<String>,
}

/// A linked room group: rooms on different platforms that are one conversation. A room is
/// in at most one group. The group lives while it has rooms: created with at least two,
/// it survives with one and is deleted when its last room leaves.
#[derive(Debug, Clone, Object)]
#[oai(rename = "LinkedGroup", rename_all = "camelCase")]
pub struct LinkedGroup {
    /// Group id (UUID).
    pub group_id: String,
    /// Readable name (at most 255 characters; encrypted at rest); null when unset.
    pub name: Option<String>,
    /// The native client's own encrypted name, base64; null when unset.
    pub encrypted_name: Option<String>,
    /// Nonce of `encryptedName`, base64; null when unset.
    pub nonce: Option<String>,
    /// Member room IDs in the order they were added.
    pub room_ids: Vec<String>,
    /// Member rooms with their platform, same order.
    pub rooms: Vec<LinkedGroupRoom>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<GroupView> for LinkedGroup {
    fn from(g: GroupView) -> Self {
        Self {
            group_id: g.row.id,
            name: g.name,
            encrypted_name: g.row.encrypted_name,
            nonce: g.row.nonce,
            room_ids: g.rooms.iter().map(|(id, _)| id.clone()).collect(),
            rooms: g
                .rooms
                .into_iter()
                .map(|(room_id, platform)| LinkedGroupRoom { room_id, platform })
                .collect(),
            created_at: time(g.row.created_at),
            updated_at: time(g.row.updated_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkRoomsRequest {
    /// At least 2 distinct room IDs of the caller (at most 100).
    pub room_ids: Vec<String>,
    /// Readable name, at most 255 characters.
    pub name: Option<String>,
    /// The native client's own encrypted name, standard base64.
    pub encrypted_name: Option<String>,
    /// Nonce of `encryptedName`, standard base64.
    pub nonce: Option<String>,
}

#[derive(Debug, Object)]
pub struct LinkedGroupCreated {
    pub message: String,
    pub group: LinkedGroup,
}

#[derive(ApiResponse)]
pub enum LinkRoomsResponse {
    /// The group was created.
    #[oai(status = 201)]
    Created(Json<LinkedGroupCreated>),
}

#[derive(Debug, Object)]
pub struct LinkedGroupList {
    /// The caller's groups, oldest first.
    pub groups: Vec<LinkedGroup>,
}

#[derive(Debug, Object)]
pub struct LinkedGroupResult {
    pub group: LinkedGroup,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkedGroupUpdateRequest {
    /// Readable name, at most 255 characters; null or empty clears it, absent leaves it.
    pub name: MaybeUndefined<String>,
    /// Standard base64; null clears it, absent leaves it.
    pub encrypted_name: MaybeUndefined<String>,
    /// Standard base64; null clears it, absent leaves it.
    pub nonce: MaybeUndefined<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkedGroupDeleted {
    pub message: String,
    pub group_id: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkedGroupAddRoomsRequest {
    /// At least 1 distinct room ID of the caller (at most 100).
    pub room_ids: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkedGroupRoomsAdded {
    pub message: String,
    /// The rooms that joined the group (rooms already in it are not repeated).
    pub added_room_ids: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkedGroupRoomRemoved {
    pub message: String,
    pub room_id: String,
    /// True when that was the group's last room and the group was deleted with it.
    pub group_deleted: bool,
}

pub struct LinkedApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Linked")]
impl LinkedApi {
    /// Link rooms into a group
    ///
    /// Creates a linked group of at least 2 distinct rooms of the caller (at most 100).
    /// 400 `invalid_request` for fewer than 2 or repeated room IDs, a name over 255
    /// characters, or values that are not standard base64; 404 `not_found` when a room is
    /// not one of the caller's; 409 `rooms_already_linked` when a room is already in a
    /// linked group (nothing is created then).
    #[oai(path = "/link", method = "post", operation_id = "linked_create")]
    async fn link(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<LinkRoomsRequest>,
    ) -> Result<LinkRoomsResponse, AppError> {
        let body = body.0;
        let new = NewGroup {
            room_ids: body.room_ids,
            name: body.name,
            encrypted_name: body.encrypted_name,
            nonce: body.nonce,
        };
        let group = linked::create(&state, auth.user_id(), new).await?;
        Ok(LinkRoomsResponse::Created(Json(LinkedGroupCreated {
            message: "rooms linked".into(),
            group: group.into(),
        })))
    }

    /// List linked groups
    #[oai(path = "/linked", method = "get", operation_id = "linked_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<LinkedGroupList>, AppError> {
        let groups = linked::list(&state, auth.user_id()).await?;
        Ok(Json(LinkedGroupList {
            groups: groups.into_iter().map(Into::into).collect(),
        }))
    }

    /// Get a linked group
    ///
    /// 400 `invalid_request` when `groupId` is not a UUID; 404 when the caller has no such
    /// group.
    #[oai(path = "/linked/:groupId", method = "get", operation_id = "linked_get")]
    async fn get(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Group id (UUID).
        #[oai(name = "groupId")]
        group_id: Path<String>,
    ) -> Result<Json<LinkedGroupResult>, AppError> {
        let group = linked::get(&state, auth.user_id(), &group_id.0).await?;
        Ok(Json(LinkedGroupResult {
            group: group.into(),
        }))
    }

    /// Rename a linked group
    ///
    /// All fields optional: absent leaves a field, null clears it. 400 as for creation or
    /// for a non-UUID `groupId`; 404 when the caller has no such group.
    #[oai(
        path = "/linked/:groupId",
        method = "put",
        operation_id = "linked_update"
    )]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Group id (UUID).
        #[oai(name = "groupId")]
        group_id: Path<String>,
        body: Json<LinkedGroupUpdateRequest>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let body = body.0;
        let change = GroupChange {
            name: body.name.into(),
            encrypted_name: body.encrypted_name.into(),
            nonce: body.nonce.into(),
        };
        linked::update(&state, auth.user_id(), &group_id.0, change).await?;
        Ok(Json(MessageResponse::new("linked group updated")))
    }

    /// Delete a linked group
    ///
    /// Unlinks its rooms; the rooms themselves stay. 400 for a non-UUID `groupId`; 404 when
    /// the caller has no such group.
    #[oai(
        path = "/linked/:groupId",
        method = "delete",
        operation_id = "linked_delete"
    )]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Group id (UUID).
        #[oai(name = "groupId")]
        group_id: Path<String>,
    ) -> Result<Json<LinkedGroupDeleted>, AppError> {
        let group_id = linked::delete(&state, auth.user_id(), &group_id.0).await?;
        Ok(Json(LinkedGroupDeleted {
            message: "linked group deleted; its rooms are kept".into(),
            group_id,
        }))
    }

    /// Add rooms to a linked group
    ///
    /// At least 1 distinct room ID of the caller (at most 100). Rooms already in this group
    /// are skipped (not in `addedRoomIds`). 404 when the group or a room is not the
    /// caller's; 409 `rooms_already_linked` when a room is in another group (nothing is
    /// added then).
    #[oai(
        path = "/linked/:groupId/rooms",
        method = "post",
        operation_id = "linked_add_rooms"
    )]
    async fn add_rooms(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Group id (UUID).
        #[oai(name = "groupId")]
        group_id: Path<String>,
        body: Json<LinkedGroupAddRoomsRequest>,
    ) -> Result<Json<LinkedGroupRoomsAdded>, AppError> {
        let added = linked::add_rooms(&state, auth.user_id(), &group_id.0, body.0.room_ids).await?;
        Ok(Json(LinkedGroupRoomsAdded {
            message: format!("{} room(s) added to the linked group", added.len()),
            added_room_ids: added,
        }))
    }

    /// Remove a room from a linked group
    ///
    /// The room itself stays. When it was the group's last room the group is deleted too
    /// (`groupDeleted: true`); a group with one room left survives. 404 when the group is
    /// not the caller's or the room is not in it.
    #[oai(
        path = "/linked/:groupId/rooms/:roomId",
        method = "delete",
        operation_id = "linked_remove_room"
    )]
    async fn remove_room(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Group id (UUID).
        #[oai(name = "groupId")]
        group_id: Path<String>,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<LinkedGroupRoomRemoved>, AppError> {
        let (room_id, group_deleted) =
            linked::remove_room(&state, auth.user_id(), &group_id.0, &room_id.0).await?;
        Ok(Json(LinkedGroupRoomRemoved {
            message: if group_deleted {
                "room removed; it was the last room, so the group was deleted".into()
            } else {
                "room removed from the linked group".into()
            },
            room_id,
            group_deleted,
        }))
    }
}
