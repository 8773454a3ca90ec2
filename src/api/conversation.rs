//! A conversation that feels alive and agrees with the user's other Matrix clients:
//! `PUT /api/rooms/{roomId}/typing`, `GET /api/rooms/{roomId}/receipts`,
//! `POST /api/rooms/{roomId}/unread`, the room's draft and `GET/PUT /api/settings/presence`.
//! Typing, receipts and mark-unread are open to personal tokens (allowlist version 5);
//! drafts and the privacy settings are native only.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::{NativeAuth, TokenAuth};
use super::ApiTags;
use crate::error::AppError;
use crate::services::conversation::{self, drafts};
use crate::state::AppState;
use crate::store::conversation::PresenceSettings;

/// Done; nothing to answer.
#[derive(ApiResponse)]
pub enum Done {
    /// Done.
    #[oai(status = 204)]
    NoContent,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct TypingRequest {
    /// true: the user is typing; false: stopped.
    pub typing: bool,
    /// How long the typing notice lasts without a renewal, 1000 to 120000 ms (default
    /// 30000). Ignored when `typing` is false.
    pub timeout_ms: Option<i64>,
}

/// Another member's latest public read receipt.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReceiptObject {
    /// Matrix ID of the reader.
    pub user_id: String,
    /// The event they have read up to (with everything before it).
    pub event_id: String,
    /// When, Unix milliseconds.
    pub ts: i64,
}

#[derive(Debug, Object)]
pub struct ReceiptsResult {
    /// One per other member with a receipt, oldest first.
    pub receipts: Vec<ReceiptObject>,
}

#[derive(Debug, Object)]
pub struct DraftRequest {
    /// The draft, an opaque string of 1 to 16384 bytes (the web app seals it to the user's
    /// key first; the server seals it again at rest and never reads it).
    pub content: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct DraftObject {
    pub content: String,
    /// When it was saved, Unix milliseconds.
    pub updated_at: i64,
}

/// What the user's reading and typing tell the other side.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PresenceSettingsObject {
    /// `public`: reading a room sends a public read receipt (`m.read`), which the other
    /// members (and, through the bridges, the people on WhatsApp and the other networks)
    /// see; `private`: an `m.read.private` receipt only the user's own Matrix clients see.
    pub read_receipts: String,
    /// Whether `PUT /api/rooms/{roomId}/typing` sends typing notices (false: it sends none).
    pub typing: bool,
}

impl From<PresenceSettings> for PresenceSettingsObject {
    fn from(s: PresenceSettings) -> Self {
        Self {
            read_receipts: if s.private_receipts {
                "private"
            } else {
                "public"
            }
            .into(),
            typing: s.typing,
        }
    }
}

/// A change of the privacy settings; absent fields stay.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PresenceSettingsRequest {
    /// `public` or `private`.
    pub read_receipts: Option<String>,
    pub typing: Option<bool>,
}

pub struct ConversationApi;

#[OpenApi(prefix_path = "/api", tag = "ApiTags::Rooms")]
impl ConversationApi {
    /// Typing in a room
    ///
    /// Tells the room's other members (and, through the bridges, the other networks) that
    /// the user is typing, for `timeoutMs`, or that they stopped. Send it again while the
    /// user keeps typing (every few seconds is enough). When the user turned typing notices
    /// off (`PUT /api/settings/presence {typing: false}`) nothing is sent and the answer is
    /// still 204. 409 `not_joined` for an invitation not accepted; 404 for a room the user
    /// does not have; 502/503 when the homeserver refuses or cannot be reached. Personal
    /// tokens: allowlist version 5.
    #[oai(
        path = "/rooms/:roomId/typing",
        method = "put",
        operation_id = "rooms_typing"
    )]
    async fn typing(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<TypingRequest>,
    ) -> Result<Done, AppError> {
        conversation::set_typing(
            &state,
            &auth.0,
            &room_id.0,
            body.0.typing,
            body.0.timeout_ms,
        )
        .await?;
        Ok(Done::NoContent)
    }

    /// Others' read receipts in a room
    ///
    /// The other members' latest public read receipts (`m.read`): who has read the room up
    /// to which message. In a direct chat, the user's own messages up to `eventId` have
    /// been seen. New ones arrive as `receipt` on `GET /api/sync`. Private receipts of
    /// others are never visible. Personal tokens: allowlist version 5.
    #[oai(
        path = "/rooms/:roomId/receipts",
        method = "get",
        operation_id = "rooms_receipts"
    )]
    async fn receipts(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<ReceiptsResult>, AppError> {
        let rows = conversation::receipts(&state, &auth.0, &room_id.0).await?;
        Ok(Json(ReceiptsResult {
            receipts: rows
                .into_iter()
                .map(|r| ReceiptObject {
                    user_id: r.reader_id,
                    event_id: r.event_id,
                    ts: r.ts,
                })
                .collect(),
        }))
    }

    /// Mark a room unread
    ///
    /// Sets `markedUnread` on the room, and the `m.marked_unread` room account data
    /// (Matrix 1.12) on the homeserver, so Element and other clients of the user show it
    /// unread too (and the reverse: a mark set there shows here within a sync). Reading the
    /// room (`POST /api/rooms/{roomId}/read`, or reading it in another client) clears it.
    /// A room marked unread counts as unread in the web app's totals whatever its
    /// `unreadCount`. When the homeserver cannot be told the mark is kept here. Publishes
    /// `room.updated`. Personal tokens: allowlist version 5.
    #[oai(
        path = "/rooms/:roomId/unread",
        method = "post",
        operation_id = "rooms_mark_unread"
    )]
    async fn unread(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Done, AppError> {
        conversation::mark_unread(&state, &auth.0, &room_id.0).await?;
        Ok(Done::NoContent)
    }

    /// Save a room's draft
    ///
    /// Replaces the room's draft: an opaque string of at most 16 KiB (the web app seals it
    /// to the user's own key before sending it, so the server cannot read it), sealed again
    /// at rest. Rooms then carry `hasDraft: true`, and `draft.updated` {roomId} goes to the
    /// user's other sessions so they pick it up. Sending a message into the room deletes
    /// the draft. 400 for an empty or longer draft. Native sessions only.
    #[oai(
        path = "/rooms/:roomId/draft",
        method = "put",
        operation_id = "rooms_draft_put"
    )]
    async fn put_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<DraftRequest>,
    ) -> Result<Json<DraftObject>, AppError> {
        let d = drafts::put(&state, &auth.0, &room_id.0, &body.0.content).await?;
        Ok(Json(DraftObject {
            content: d.content,
            updated_at: d.updated_at,
        }))
    }

    /// A room's draft
    ///
    /// `{content, updatedAt}`; 404 `not_found` when the room has no draft. Native sessions
    /// only.
    #[oai(
        path = "/rooms/:roomId/draft",
        method = "get",
        operation_id = "rooms_draft_get"
    )]
    async fn get_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Json<DraftObject>, AppError> {
        let d = drafts::get(&state, &auth.0, &room_id.0).await?;
        Ok(Json(DraftObject {
            content: d.content,
            updated_at: d.updated_at,
        }))
    }

    /// Delete a room's draft
    ///
    /// 204 whether or not there was one; publishes `draft.updated` when there was. Native
    /// sessions only.
    #[oai(
        path = "/rooms/:roomId/draft",
        method = "delete",
        operation_id = "rooms_draft_delete"
    )]
    async fn delete_draft(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room ID, URL-encoded.
        #[oai(name = "roomId")]
        room_id: Path<String>,
    ) -> Result<Done, AppError> {
        drafts::delete(&state, &auth.0, &room_id.0).await?;
        Ok(Done::NoContent)
    }

    /// Privacy settings
    ///
    /// What reading and typing tell the other side: `readReceipts` (`public` by default)
    /// and `typing` (true by default). Native sessions only.
    #[oai(
        path = "/settings/presence",
        method = "get",
        operation_id = "settings_presence_get",
        tag = "ApiTags::Auth"
    )]
    async fn get_presence(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<PresenceSettingsObject>, AppError> {
        let s = conversation::presence_settings(&state, auth.0.user_id()).await?;
        Ok(Json(s.into()))
    }

    /// Change the privacy settings
    ///
    /// Like Beeper's incognito mode: `readReceipts: "private"` sends `m.read.private`
    /// instead of `m.read` when the user reads a room (the user's other Matrix clients see
    /// it read; the other members and the networks behind the bridges get no read receipt,
    /// so no blue ticks), `typing: false` sends no typing notices. Absent fields stay; 400
    /// naming the field for another value. Answers the settings now. Native sessions only.
    #[oai(
        path = "/settings/presence",
        method = "put",
        operation_id = "settings_presence_put",
        tag = "ApiTags::Auth"
    )]
    async fn put_presence(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<PresenceSettingsRequest>,
    ) -> Result<Json<PresenceSettingsObject>, AppError> {
        let s = conversation::update_presence_settings(
            &state,
            auth.0.user_id(),
            body.0.read_receipts.as_deref(),
            body.0.typing,
        )
        .await?;
        Ok(Json(s.into()))
    }
}
