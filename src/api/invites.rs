//! `POST /api/rooms/{roomId}/accept` and `…/decline`: invitations the sync worker left to
//! the user. Native sessions only: the routes are not on the personal-token allowlist
//! (`routes.rs`), so scripts get 403 `forbidden_for_api_token`.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::rooms::RoomGetResult;
use super::security::NativeAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::rooms;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomDeclineResult {
    pub message: String,
    pub room_id: String,
}

pub struct InvitesApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Rooms")]
impl InvitesApi {
    /// Accept an invitation
    ///
    /// Only invitations from the configured bridge bots and their ghost users are joined
    /// automatically; every other invitation is listed with `membership: "invite"` (and
    /// `invitedBy`) until the user accepts or declines it. This joins the room on the
    /// homeserver and returns it as `GET /api/rooms/{roomId}` does, with `membership:
    /// "join"`; its state and messages follow through the sync worker (`room.updated`).
    /// Native sessions only (personal tokens: 403 `forbidden_for_api_token`). 404 when the
    /// caller does not have the room; 409 `not_invited` when it is already joined; 503
    /// `homeserver_unavailable` when the homeserver cannot be reached, 502
    /// `homeserver_error` when it refuses (e.g. the invitation was withdrawn).
    #[oai(
        path = "/:roomId/accept",
        method = "post",
        operation_id = "rooms_accept_invite"
    )]
    async fn accept(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<RoomGetResult>, AppError> {
        let room = rooms::accept(&state, &auth.0, &room_id.0).await?;
        Ok(Json(RoomGetResult { room: room.into() }))
    }

    /// Decline an invitation
    ///
    /// Leaves the room on the homeserver (rejecting the invitation) and removes it from the
    /// service, so it disappears from the room list; publishes `room.deleted`. Native
    /// sessions only (personal tokens: 403 `forbidden_for_api_token`). 404 when the caller
    /// does not have the room; 409 `not_invited` when it is already joined (use `DELETE
    /// /api/rooms/{roomId}` to hide a joined room); 503 `homeserver_unavailable` when the
    /// homeserver cannot be reached, 502 `homeserver_error` when it refuses.
    #[oai(
        path = "/:roomId/decline",
        method = "post",
        operation_id = "rooms_decline_invite"
    )]
    async fn decline(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<RoomDeclineResult>, AppError> {
        let room_id = rooms::decline(&state, &auth.0, &room_id.0).await?;
        Ok(Json(RoomDeclineResult {
            message: "invitation declined; the room was left on Matrix and removed".into(),
            room_id,
        }))
    }
}
