//! Reactions, edits and deletion for everyone of sent messages.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::SendResult;
use crate::api::security::TokenAuth;
use crate::api::ApiTags;
use crate::error::AppError;
use crate::services::messages::actions;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename = "ReactionRequest", rename_all = "camelCase")]
pub struct ReactionRequest {
    /// The annotation key: an emoji or short text, 1 to 64 bytes of UTF-8.
    pub key: String,
}

#[derive(Debug, Object)]
#[oai(rename = "ReactionResult", rename_all = "camelCase")]
pub struct ReactionResult {
    /// The `m.reaction` event.
    pub event_id: String,
    pub room_id: String,
    /// The message reacted to.
    pub target_event_id: String,
    pub key: String,
    /// True when the caller had reacted with this key already (nothing was sent).
    pub duplicate: bool,
}

#[derive(Debug, ApiResponse)]
pub enum ReactionResponse {
    /// Reacted (or had already: `duplicate`).
    #[oai(status = 201)]
    Created(Json<ReactionResult>),
}

#[derive(Debug, Object)]
#[oai(rename = "ReactionRemoved", rename_all = "camelCase")]
pub struct ReactionRemoved {
    pub room_id: String,
    pub target_event_id: String,
    pub key: String,
    /// The redaction events sent (one per reaction of the caller with this key).
    pub redactions: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "EditMessageRequest", rename_all = "camelCase")]
pub struct EditRequest {
    /// The new text: 1 to 65536 characters, not only whitespace.
    pub content: String,
    /// Optional client transaction id (as for sends): a repeat edits once.
    pub txn_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "MessageDeletedForEveryone", rename_all = "camelCase")]
pub struct DeletedForEveryone {
    /// The redaction event.
    pub event_id: String,
    pub room_id: String,
    /// The message deleted.
    pub redacted_event_id: String,
}

fn result(sent: crate::services::messages::Sent) -> Json<SendResult> {
    Json(SendResult {
        event_id: sent.event_id,
        room_id: sent.room_id,
        txn_id: sent.txn_id,
        duplicate: sent.duplicate,
    })
}

pub struct MessageActionsApi;

#[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Messages")]
impl MessageActionsApi {
    /// React to a message
    ///
    /// Sends an `m.reaction` (annotation) with `key` to message `eventId` of the caller's
    /// room (encrypted in an encrypted room). Once per key: reacting again with the same
    /// key returns the existing reaction with `duplicate: true`. Shown in `reactions` of
    /// the message at once and announced with `room.updated`. 400 for a key that is empty
    /// or over 64 bytes; 404 for an unknown message; 409 and 502/503 as for text sends.
    #[oai(
        path = "/:roomId/messages/:eventId/reactions",
        method = "post",
        operation_id = "rooms_react"
    )]
    async fn react(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix event id of the message (URL-encoded).
        #[oai(name = "eventId")]
        event_id: Path<String>,
        body: Json<ReactionRequest>,
    ) -> Result<ReactionResponse, AppError> {
        let sent = actions::react(&state, auth.user_id(), &room_id, &event_id, &body.key).await?;
        Ok(ReactionResponse::Created(Json(ReactionResult {
            event_id: sent.event_id,
            room_id: sent.room_id,
            target_event_id: event_id.0.trim().to_owned(),
            key: body.0.key,
            duplicate: sent.duplicate,
        })))
    }

    /// Remove a reaction
    ///
    /// Redacts the caller's reaction(s) with `key` (URL-encoded) on message `eventId`.
    /// 404 when the caller has no such reaction.
    #[oai(
        path = "/:roomId/messages/:eventId/reactions/:key",
        method = "delete",
        operation_id = "rooms_unreact"
    )]
    async fn unreact(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix event id of the message (URL-encoded).
        #[oai(name = "eventId")]
        event_id: Path<String>,
        /// The reaction key (URL-encoded).
        key: Path<String>,
    ) -> Result<Json<ReactionRemoved>, AppError> {
        let redactions =
            actions::unreact(&state, auth.user_id(), &room_id, &event_id, &key).await?;
        Ok(Json(ReactionRemoved {
            room_id: room_id.0.trim().to_owned(),
            target_event_id: event_id.0.trim().to_owned(),
            key: key.0,
            redactions,
        }))
    }

    /// Edit a message
    ///
    /// Replaces the text of the caller's own text message `eventId` (`m.replace` with
    /// `m.new_content`; encrypted in an encrypted room); the message's `editedAt` is set
    /// when the homeserver's echo arrives. 403 `not_own_message` for another user's
    /// message; 400 for empty text or a message that is not text (or was deleted); 404 for
    /// an unknown message; 409 and 502/503 as for text sends.
    #[oai(
        path = "/:roomId/messages/:eventId",
        method = "put",
        operation_id = "rooms_edit_message"
    )]
    async fn edit(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix event id of the message (URL-encoded).
        #[oai(name = "eventId")]
        event_id: Path<String>,
        body: Json<EditRequest>,
    ) -> Result<Json<SendResult>, AppError> {
        let sent = actions::edit(
            &state,
            auth.user_id(),
            &room_id,
            &event_id,
            &body.content,
            body.txn_id.as_deref(),
        )
        .await?;
        Ok(result(sent))
    }

    /// Delete a message for everyone
    ///
    /// Redacts the caller's own message `eventId` on the homeserver (every member's copy
    /// loses its content; redactions are not end-to-end encrypted in Matrix). `DELETE
    /// /api/messages/{messageId}` stays the local-only deletion. 403 `not_own_message` for
    /// another user's message; 404 for an unknown message; 502 when the homeserver
    /// refuses.
    #[oai(
        path = "/:roomId/messages/:eventId",
        method = "delete",
        operation_id = "rooms_delete_message_for_everyone"
    )]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        /// Matrix event id of the message (URL-encoded).
        #[oai(name = "eventId")]
        event_id: Path<String>,
    ) -> Result<Json<DeletedForEveryone>, AppError> {
        let sent =
            actions::delete_for_everyone(&state, auth.user_id(), &room_id, &event_id).await?;
        Ok(Json(DeletedForEveryone {
            event_id: sent.event_id,
            room_id: sent.room_id,
            redacted_event_id: event_id.0.trim().to_owned(),
        }))
    }
}
