//! `/api/messages*` and `POST /api/rooms/{roomId}/messages`: message history (encrypted
//! for native sessions, readable for personal tokens), deletion, statistics and sending.

use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::fast_json::FastJson;
use super::security::{NativeAuth, TokenAuth};
use super::ApiTags;
use crate::error::AppError;
use crate::services::messages::{self, HistoryQuery, MultiSendItem};
use crate::state::AppState;
use crate::store::messages::MessageStats;

mod actions;
mod history;
mod objects;
pub use actions::MessageActionsApi;
pub use history::*;
pub use objects::*;

pub struct MessagesApi;

#[OpenApi(tag = "ApiTags::Messages")]
impl MessagesApi {
    /// Message history
    ///
    /// **Native sessions** (JWT): `roomId` (optional; without it, the newest messages of all
    /// the caller's rooms), `before` (milliseconds or RFC 3339: only messages strictly
    /// older; pass the oldest `timestamp` of a page for the next), `limit` 1 to 100
    /// (default 50; outside: 400). Returns `{messages}` newest first, each with visible
    /// metadata and `encryptedContent` sealed to the caller's registered X25519 key (see the
    /// EncryptedContent schema). 409 `keys_not_registered` without a registered key.
    ///
    /// **Personal tokens**: `roomId` (optional), `cursor` (opaque, from `nextCursor`; not a
    /// timestamp; 400 when invalid or issued for another `roomId`), `limit`. With `roomId`:
    /// that conversation newest first. Without: the caller's conversations in room id order,
    /// each newest first, every page from a single conversation (not a global feed).
    /// `nextCursor` is null at the end; a page can be empty and still carry one. `text` is
    /// empty for redacted messages. 409 `NO_SIGNING_KEY` after the keys were deleted.
    ///
    /// 404 when `roomId` is not a room of the caller. Messages whose content was destroyed
    /// by key deletion are left out.
    ///
    /// With `Accept-Encoding: gzip`, a page of one conversation (every readable page; a
    /// native page with `roomId`) comes gzip-compressed (`Content-Encoding: gzip`); a native
    /// page across rooms never does (it names several conversations in the clear).
    #[oai(path = "/api/messages", method = "get", operation_id = "messages_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id.
        #[oai(name = "roomId")]
        room_id: Query<Option<String>>,
        /// Native sessions: milliseconds since the epoch or an RFC 3339 date-time.
        before: Query<Option<String>>,
        /// Personal tokens: `nextCursor` of the previous page.
        cursor: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<i64>>,
    ) -> Result<FastJson<History>, AppError> {
        let query = HistoryQuery {
            room_id: room_id.0,
            before: before.0,
            cursor: cursor.0,
            limit: limit.0,
        };
        match messages::history(&state, &auth.0, query).await? {
            messages::History::Encrypted(body) | messages::History::Readable(body) => {
                Ok(FastJson::from_page(body))
            }
        }
    }

    /// Delete stored messages
    ///
    /// Deletes the caller's stored messages, only of `roomId` when given and only those
    /// strictly older than `before` (milliseconds or RFC 3339) when given; both absent
    /// deletes all of them. Requires `X-Confirm-Delete: DELETE_MESSAGES` (400
    /// `confirmation_required` otherwise). Matrix and other users are untouched.
    #[oai(
        path = "/api/messages",
        method = "delete",
        operation_id = "messages_delete"
    )]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room id.
        #[oai(name = "roomId")]
        room_id: Query<Option<String>>,
        /// Milliseconds since the epoch or an RFC 3339 date-time.
        before: Query<Option<String>>,
        /// Must be exactly `DELETE_MESSAGES`.
        #[oai(name = "X-Confirm-Delete")]
        confirmation: Header<Option<String>>,
    ) -> Result<Json<DeleteResult>, AppError> {
        let deleted = messages::delete_matching(
            &state,
            auth.user_id(),
            confirmation.0.as_deref(),
            room_id.0.as_deref(),
            before.0.as_deref(),
        )
        .await?;
        Ok(Json(DeleteResult {
            message: format!("{} message(s) deleted", deleted.count),
            deleted_count: deleted.count as u64,
            criteria: DeleteCriteria {
                room_id: deleted.room_id,
                before: deleted.before_ms,
            },
        }))
    }

    /// Message statistics
    ///
    /// SQL aggregates over the caller's stored messages. `high_importance_count` counts
    /// messages with importance of at least 0.7.
    #[oai(
        path = "/api/messages/stats",
        method = "get",
        operation_id = "messages_stats"
    )]
    async fn stats(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<FastJson<StatsResult>, AppError> {
        let body = messages::stats_rendered(&state, auth.user_id(), |stats| {
            FastJson::<StatsResult>::object_bytes(&StatsResult {
                stats: stats.into(),
            })
        })
        .await?;
        Ok(FastJson::from_page(body))
    }

    /// Send to several rooms
    ///
    /// Sends `body` to each room of `roomIds` (1 to 100; repeats sent once), at most 8 at
    /// a time. 200 when every room got it, 207 when some did, 500 when none did; the body
    /// has the same shape each time: `results` (per room: `success`, `eventId` or `error`
    /// and `message`), `sent`, `failed`, `total`. Rooms that are not the caller's fail with
    /// `not_found`, invitations not accepted yet with `not_joined`. 400 for invalid input.
    #[oai(
        path = "/api/messages/send-multi",
        method = "post",
        operation_id = "messages_send_multi"
    )]
    async fn send_multi(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<MultiSendRequest>,
    ) -> Result<MultiSendResponse, AppError> {
        let items = messages::send_multi(
            &state,
            auth.user_id(),
            &body.room_ids,
            &body.body,
            body.msgtype.as_deref(),
        )
        .await?;
        let results: Vec<MultiSendRoomResult> = items.into_iter().map(Into::into).collect();
        let total = results.len() as u64;
        let sent = results.iter().filter(|r| r.success).count() as u64;
        let result = Json(MultiSendResult {
            results,
            sent,
            failed: total - sent,
            total,
        });
        Ok(match sent {
            s if s == total => MultiSendResponse::AllSent(result),
            0 => MultiSendResponse::AllFailed(result),
            _ => MultiSendResponse::Partial(result),
        })
    }

    /// Delete one stored message
    ///
    /// 400 when `messageId` is not a UUID; 404 unless it is one of the caller's messages.
    /// Matrix is untouched.
    #[oai(
        path = "/api/messages/:messageId",
        method = "delete",
        operation_id = "messages_delete_one"
    )]
    async fn delete_one(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Message id (UUID), the `id` of an encrypted message.
        #[oai(name = "messageId")]
        message_id: Path<String>,
    ) -> Result<Json<DeleteOneResult>, AppError> {
        let id = messages::delete_one(&state, auth.user_id(), &message_id).await?;
        Ok(Json(DeleteOneResult {
            message: "message deleted".to_owned(),
            deleted_id: id,
        }))
    }

    /// Send approved text to a room
    ///
    /// Sends `content` as an `m.text` message from the caller's Matrix account (a reply
    /// when `replyTo` names a message of the room: `m.relates_to.m.in_reply_to`; 400
    /// naming `replyTo` otherwise). Idempotent
    /// per `txnId`: the same caller and `txnId` send once; a repeat returns the first
    /// event with `duplicate: true` (a `txnId` used for another room: 409
    /// `txn_id_conflict`). 404 when the room is not the caller's; 409 `not_joined` when the
    /// caller has not joined it (an invitation not accepted yet: accept it in the native
    /// app); 409 `recipient_unresolved` while the room is direct and its recipient is unknown (read
    /// the room, and verify the conversation in the native app first). 502
    /// `homeserver_error` when the homeserver refuses, 503 `homeserver_unavailable` when it
    /// cannot be reached; retrying with the same `txnId` is safe.
    #[oai(
        path = "/api/rooms/:roomId/messages",
        method = "post",
        operation_id = "rooms_send_message"
    )]
    async fn send(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Matrix room id (URL-encoded).
        #[oai(name = "roomId")]
        room_id: Path<String>,
        body: Json<SendRequest>,
    ) -> Result<Json<SendResult>, AppError> {
        let sent = messages::send_to_room(
            &state,
            auth.user_id(),
            &room_id,
            &body.content,
            &body.txn_id,
            body.reply_to.as_deref(),
        )
        .await?;
        Ok(Json(SendResult {
            event_id: sent.event_id,
            room_id: sent.room_id,
            txn_id: sent.txn_id,
            duplicate: sent.duplicate,
        }))
    }
}
