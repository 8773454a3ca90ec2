//! `/api/rooms/*`: the caller's rooms. One handler per route serves both callers: native
//! clients (JWT) get visible metadata and their own encrypted name/avatar, personal API
//! tokens get readable names (and 409 `NO_SIGNING_KEY` after the keys were deleted).

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{Object, OpenApi};

use super::fast_json::FastJson;
use super::linked::LinkedGroup;
use super::messages::EncryptedContent;
use super::security::{NativeAuth, TokenAuth};
use super::views::MessageResponse;
use super::ApiTags;
use crate::error::AppError;
use crate::services::linked;
use crate::services::rooms::{self, ClientFields, ListParams, ReadMarker, RoomView, ARCHIVE_NOTE};
use crate::state::AppState;
use crate::store::rooms::RoomFlag;

mod avatar;
mod flags;
mod notifications;
mod objects;
pub use avatar::MemberAvatarApi;
pub use flags::RoomFlagsApi;
pub use notifications::RoomNotificationsApi;
pub use objects::*;

pub struct RoomsApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Rooms")]
impl RoomsApi {
    /// List rooms
    ///
    /// The caller's joined and invited rooms, pinned rooms first in every order, then by
    /// `sortBy`; ties end on the room ID.
    ///
    /// - Native clients: `sortBy` `importance` (default), `recent` or `unread`.
    /// - Personal API tokens: `sortBy` `recent` (default) or `unread` (`importance` is 400);
    ///   rooms carry readable names; 409 `NO_SIGNING_KEY` after the keys were deleted.
    ///
    /// `limit` 1 to 100 (default 50; outside is 400, not clamped). `archived`: `false`
    /// (default: active rooms only), `true` (archived only) or `all`. `cursor`: the
    /// `nextCursor` of the previous page, opaque; it is bound to `sortBy` and `archived`
    /// (keep them unchanged while paging; otherwise, or for a malformed cursor, 400).
    /// `nextCursor` is null on the last page. The inbox can change while paging (a room with
    /// a new message moves up): deduplicate by `roomId`. Lists omit `memberIds`.
    #[oai(path = "/", method = "get", operation_id = "rooms_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// `importance`, `recent` or `unread` (personal tokens: `recent` or `unread`).
        #[oai(name = "sortBy")]
        sort_by: Query<Option<String>>,
        /// Page size, 1 to 100 (default 50).
        limit: Query<Option<i64>>,
        /// `false` (default), `true` or `all`.
        archived: Query<Option<String>>,
        /// `nextCursor` of the previous page.
        cursor: Query<Option<String>>,
    ) -> Result<FastJson<RoomListResult>, AppError> {
        let params = ListParams {
            sort_by: sort_by.0,
            limit: limit.0,
            archived: archived.0,
            cursor: cursor.0,
        };
        let body = rooms::list_rendered(&state, &auth.0, params, |page| {
            FastJson::<RoomListResult>::object_bytes(&RoomListResult {
                rooms: page.rooms.into_iter().map(Into::into).collect(),
                next_cursor: page.next_cursor,
            })
        })
        .await?;
        Ok(FastJson::from_page(body))
    }

    /// Rooms with high-priority unread messages
    ///
    /// Active (non-archived) rooms that have unread messages and an importance of at least
    /// 0.7, or unread highlights (mentions of the user) whatever their importance; most
    /// important first, then most recent. Not paged.
    #[oai(
        path = "/filter/priority",
        method = "get",
        operation_id = "rooms_priority"
    )]
    async fn priority(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<RoomPriorityResult>, AppError> {
        let rooms = rooms::priority(&state, &auth.0).await?;
        Ok(Json(RoomPriorityResult {
            rooms: rooms.into_iter().map(Into::into).collect(),
        }))
    }

    /// Get a room
    ///
    /// The room with its joined members (`memberIds`) and direct recipient (`recipientId`),
    /// refreshed from the homeserver and stored: the recipient of a direct room is its
    /// partner in the user's `m.direct`, else its one joined member other than the user and
    /// the bridge bots; null for groups or when unknown. When the homeserver cannot be
    /// reached, or when this room was refreshed for the caller within the last 10 s (the
    /// sync worker keeps members current in between), the stored data is returned. `roomId` is URL-encoded (`%21abc%3Aserver`).
    /// 404 `not_found` when the caller does not have the room. Personal tokens get the
    /// readable shape (409 `NO_SIGNING_KEY` after the keys were deleted); a personal-token
    /// script should call this before sending: a null `recipientId` means the conversation
    /// must be verified in the native app first. With `Accept-Encoding: gzip` a room of
    /// 1 KB or more comes gzip-compressed (`Content-Encoding: gzip`).
    #[oai(path = "/:roomId", method = "get", operation_id = "rooms_get")]
    async fn get(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<FastJson<RoomGetResult>, AppError> {
        let body = rooms::get_rendered(&state, &auth.0, &room_id.0, |room| {
            FastJson::<RoomGetResult>::object_bytes(&RoomGetResult { room: room.into() })
        })
        .await?;
        Ok(FastJson::from_page(body))
    }

    /// Set the encrypted name and avatar
    ///
    /// Stores the native client's own encrypted name and avatar of the room (opaque to the
    /// server; returned as `encryptedName`, `encryptedAvatar`, `nonce`). All fields
    /// optional: absent leaves a field, null clears it. 400 `invalid_request` when a value
    /// is not standard base64; 404 when the caller does not have the room.
    #[oai(path = "/:roomId", method = "put", operation_id = "rooms_update")]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<RoomUpdateRequest>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let body = body.0;
        let fields = ClientFields {
            encrypted_name: body.encrypted_name.into(),
            encrypted_avatar: body.encrypted_avatar.into(),
            nonce: body.nonce.into(),
        };
        rooms::update(&state, &auth.0, &room_id.0, fields).await?;
        Ok(Json(MessageResponse::new("room updated")))
    }

    /// Delete a room from the service
    ///
    /// Removes the room from this service only, for the caller: the room, its members and
    /// its place in a linked group (a group left without rooms is deleted). With
    /// `deleteMessages=true` the stored messages of the room are deleted too (default
    /// `false`; other values are 400). The Matrix room and the bridges are not touched, so
    /// new activity in the room brings it back. Publishes `room.deleted`. 404 when the
    /// caller does not have the room.
    #[oai(path = "/:roomId", method = "delete", operation_id = "rooms_delete")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// `true` or `false` (default).
        #[oai(name = "deleteMessages")]
        delete_messages: Query<Option<String>>,
    ) -> Result<Json<RoomDeleteResult>, AppError> {
        let d = rooms::delete(&state, &auth.0, &room_id.0, delete_messages.0.as_deref()).await?;
        Ok(Json(RoomDeleteResult {
            message: if d.messages_deleted {
                format!(
                    "room removed from the service with {} stored message(s); Matrix is unaffected",
                    d.deleted_messages_count
                )
            } else {
                "room removed from the service; its messages and the Matrix room are kept".into()
            },
            room_id: d.room_id,
            messages_deleted: d.messages_deleted,
            deleted_messages_count: d.deleted_messages_count,
        }))
    }

    /// Mark a room read
    ///
    /// Sets the unread and highlight counts to 0 and the read marker to the newest stored
    /// message, and sends the same read markers (`m.fully_read` and a public `m.read`
    /// receipt) to the homeserver, so other Matrix clients and the bridges see it read. A
    /// room without stored messages, or one the user has not joined (membership
    /// `invite`: nothing is sent to the homeserver, so the inviter learns nothing), is
    /// marked read here only. When the homeserver cannot
    /// be reached the room is still marked read here (the message says so). Publishes
    /// `room.updated`.
    #[oai(
        path = "/:roomId/read",
        method = "post",
        operation_id = "rooms_mark_read"
    )]
    async fn read(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let outcome = rooms::mark_read(&state, &auth.0, &room_id.0).await?;
        Ok(Json(MessageResponse::new(match outcome {
            ReadMarker::Sent => "room marked as read",
            ReadMarker::NoMessages => "room marked as read (no messages yet)",
            ReadMarker::NotSent => {
                "room marked as read here; the homeserver could not be updated, so other \
                 Matrix clients may still show it unread"
            }
            ReadMarker::NotJoined => {
                "room marked as read here; nothing is sent to the homeserver for an \
                 invitation that was not accepted"
            }
        })))
    }

    /// The linked group of a room
    ///
    /// `linkedGroup` is the group the room is in, or null. 404 when the caller does not
    /// have the room.
    #[oai(
        path = "/:roomId/linked-group",
        method = "get",
        operation_id = "rooms_linked_group"
    )]
    async fn linked_group(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<RoomLinkedGroupResult>, AppError> {
        let group = linked::of_room(&state, auth.user_id(), &room_id.0).await?;
        Ok(Json(RoomLinkedGroupResult {
            linked_group: group.map(Into::into),
        }))
    }
}
