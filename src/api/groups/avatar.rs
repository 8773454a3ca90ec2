//! `POST /api/rooms/{roomId}/avatar`: a group's picture, multipart/form-data with one
//! `file` part, read by poem's multipart parser and streamed on as for attachments.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use tokio::time::Instant;

use super::super::media::field_stream;
use super::super::security::TokenAuth;
use super::super::ApiTags;
use crate::error::AppError;
use crate::services::{groups, media};
use crate::state::AppState;

/// The form of `POST /api/rooms/{roomId}/avatar` (multipart/form-data).
#[derive(Debug, Object)]
#[oai(rename = "RoomAvatarForm")]
#[allow(dead_code)]
pub struct RoomAvatarForm {
    /// The image (binary): PNG, JPEG, GIF or WebP, at most 5 MiB. Its part's
    /// `Content-Type`, when given, must match the bytes.
    pub file: String,
}

/// The multipart body, read field by field as it arrives.
pub type AvatarUpload = crate::api::streamed_form::StreamedForm<RoomAvatarForm>;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct AvatarChanged {
    pub room_id: String,
    /// The new avatar's `mxc://` URI (the room's `avatarUrl`).
    pub avatar_url: String,
    pub message: String,
}

pub struct GroupAvatarApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Groups")]
impl GroupAvatarApi {
    /// Set a group's picture
    ///
    /// multipart/form-data with one part `file`: a PNG, JPEG, GIF or WebP image of at most
    /// 5 MiB (checked against its bytes; SVG is refused as active content). It is uploaded
    /// to the homeserver as the user, unencrypted (room state, and so the avatar, is not
    /// end-to-end encrypted in Matrix), and set as `m.room.avatar`; the bridge carries it to
    /// the network where it allows. 400 `invalid_request` naming `file` (missing, empty,
    /// not such an image, a claimed type the bytes do not match) or another field; 413
    /// `payload_too_large` over 5 MiB; 408 when the body does not arrive within `[media]
    /// upload_timeout`; 429 `too_many_uploads`; 404 `not_found`, 409 `not_joined`, 403
    /// `not_permitted` and 502/503 as for the name. Personal tokens: allowlist version 6.
    #[oai(
        path = "/:roomId/avatar",
        method = "post",
        operation_id = "groups_avatar"
    )]
    async fn avatar(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        form: AvatarUpload,
    ) -> Result<Json<AvatarChanged>, AppError> {
        let _slot = media::spool::upload_slot(&state, auth.user_id())?;
        let deadline = Instant::now() + state.config.media.upload_timeout.0;
        let mut multipart = form.0;
        let field = tokio::time::timeout_at(deadline, multipart.next_field())
            .await
            .map_err(|_| media::body_timeout())?
            .map_err(|e| AppError::invalid("body", format!("malformed multipart: {e}")))?
            .ok_or_else(|| AppError::invalid("file", "is required"))?;
        match field.name() {
            Some("file") => {}
            other => {
                return Err(AppError::invalid(
                    other.unwrap_or("body"),
                    "is not a field of this form (file)",
                ))
            }
        }
        let claimed = field.content_type().map(str::to_owned);
        let stream = field_stream(field, deadline);
        let mxc = groups::set_avatar(&state, auth.user_id(), &room_id, claimed.as_deref(), stream)
            .await?;
        Ok(Json(AvatarChanged {
            room_id: room_id.0,
            avatar_url: mxc,
            message: "avatar set".into(),
        }))
    }
}
