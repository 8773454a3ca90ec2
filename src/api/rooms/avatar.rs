//! `GET /api/rooms/{roomId}/members/{userId}/avatar`: a member's avatar thumbnail, the
//! target of the messages' `senderAvatarUrl`.

use std::io;

use futures_util::StreamExt;
use poem::Body;
use poem_openapi::payload::{Binary, Response};

use super::*;
use crate::services::media;

pub struct MemberAvatarApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Rooms")]
impl MemberAvatarApi {
    /// A member's avatar
    ///
    /// The avatar of member `userId` of the caller's room `roomId` (the `avatar_url` of the
    /// member's `m.room.member` state as the sync last stored it), as a thumbnail fetched
    /// from the homeserver's authenticated media API as the caller and streamed; nothing is
    /// stored. The messages' `senderAvatarUrl` is this route. `Content-Type` is the
    /// homeserver's (an active type such as SVG or HTML is sent as
    /// `application/octet-stream`), with `Content-Disposition: attachment` and
    /// `X-Content-Type-Options: nosniff`. 400 naming `userId` when it is not a Matrix user
    /// ID; 404 when the room is not the caller's, the member is unknown in it or has no
    /// avatar, or the homeserver no longer has the image; 502 when the homeserver refuses;
    /// 503 without a homeserver. Personal tokens: allowlist version 5.
    #[oai(
        path = "/:roomId/members/:userId/avatar",
        method = "get",
        operation_id = "rooms_member_avatar"
    )]
    async fn member_avatar(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix user ID of the member, URL-encoded.
        #[oai(name = "userId")]
        user_id: Path<String>,
    ) -> Result<Response<Binary<Body>>, AppError> {
        let d = media::member_avatar(&state, auth.user_id(), &room_id, &user_id).await?;
        let body = Body::from_bytes_stream(d.body.map(|c| c.map_err(io::Error::other)));
        let mut resp = Response::new(Binary(body))
            .header("Content-Type", d.content_type)
            .header("X-Content-Type-Options", "nosniff")
            .header("Content-Disposition", "attachment; filename=\"avatar\"")
            .header("Cache-Control", "private, no-store");
        if let Some(n) = d.length {
            resp = resp.header("Content-Length", n);
        }
        Ok(resp)
    }
}
