//! `PUT /api/rooms/{roomId}/notifications`: the chat's notification level and snooze.

use super::*;
use crate::services::push::levels;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SetNotificationsRequest {
    /// `all`, `mentions` or `off`.
    pub level: String,
    /// Unix milliseconds until which nothing is pushed for the chat (at most a year ahead);
    /// absent, null or past: no snooze.
    pub snooze_until: Option<i64>,
}

pub struct RoomNotificationsApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Rooms")]
impl RoomNotificationsApi {
    /// Set the notification level of a chat
    ///
    /// Which new messages of the chat are pushed (Web Push and APNs alike): `all`
    /// (default), `mentions` (only messages that list the user in `m.mentions.user_ids`,
    /// name them by display name or Matrix localpart as a word, or reply to one of their
    /// messages) or `off`. `off` is the room's `muted` flag: setting `off` mutes the room,
    /// any other level unmutes it, and `POST …/mute` / `…/unmute` set `off` / the level
    /// chosen before. With `snoozeUntil` nothing is pushed until that time. Nothing is
    /// ever pushed for the user's own messages or for messages already read.
    ///
    /// Answers the room object (as `GET /api/rooms/{roomId}` has it under `room`).
    /// 400 `invalid_request` naming `level` or `snoozeUntil`; 404 when the caller does not
    /// have the room. Personal tokens allowed (allowlist version 5).
    #[oai(
        path = "/:roomId/notifications",
        method = "put",
        operation_id = "rooms_notifications"
    )]
    async fn set_notifications(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<SetNotificationsRequest>,
    ) -> Result<FastJson<RoomObject>, AppError> {
        let b = body.0;
        let room_id = levels::set(&state, &auth.0, &room_id.0, &b.level, b.snooze_until).await?;
        let body = rooms::get_rendered(&state, &auth.0, &room_id, |room| {
            FastJson::<RoomObject>::object_bytes(&RoomObject::from(room))
        })
        .await?;
        Ok(FastJson::from_page(body))
    }
}
