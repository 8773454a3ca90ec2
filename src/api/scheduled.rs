//! `/api/messages/schedule` and `/api/messages/scheduled*`: messages sent later by the
//! scheduler. Native sessions only (personal API tokens get 403 `forbidden_for_api_token`).

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::NativeAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::scheduled::{self, to_time, ListQuery, NewScheduled, ScheduledChange};
use crate::state::AppState;
use crate::store::scheduled_messages::{ScheduledRow, Stats};

/// A scheduled message. The body is not returned (it is sealed to the server's key).
#[derive(Debug, Object)]
#[oai(rename = "ScheduledMessage", rename_all = "camelCase")]
pub struct ScheduledMessageView {
    /// UUID; also the Matrix transaction id of the send.
    pub id: String,
    /// Matrix room id given at creation.
    pub room_id: String,
    /// `whatsapp`, `telegram` or `discord`: send to the room of that platform in the
    /// room's linked group; null to send to `roomId`.
    pub target_platform: Option<String>,
    /// `pending`, `sent`, `cancelled` or `failed`.
    pub status: String,
    pub scheduled_for: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When the homeserver accepted the message; null until sent.
    pub sent_at: Option<DateTime<Utc>>,
    /// Matrix event id of the sent message; null until sent.
    pub event_id: Option<String>,
    /// The room the message went to (differs from `roomId` with `targetPlatform`).
    pub sent_room_id: Option<String>,
    /// Last send error: while `pending`, the reason of the last failed attempt (a retry
    /// follows); when `failed`, why it was given up.
    pub failure_reason: Option<String>,
    /// Send attempts so far.
    pub attempts: i64,
}

impl From<ScheduledRow> for ScheduledMessageView {
    fn from(r: ScheduledRow) -> Self {
        Self {
            id: r.id,
            room_id: r.room_id,
            target_platform: r.target_platform,
            status: r.status,
            scheduled_for: to_time(r.scheduled_for),
            created_at: to_time(r.created_at),
            updated_at: to_time(r.updated_at),
            sent_at: r.sent_at.map(to_time),
            event_id: r.event_id,
            sent_room_id: r.sent_room_id,
            failure_reason: r.failure_reason,
            attempts: r.attempts,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduleRequest {
    /// Matrix room id (`!…`).
    pub room_id: String,
    /// Ciphertext (with tag) of the message, sealed to the server's X25519 key
    /// (`serverPublicKey` of `GET /api/attestation`): `shared = X25519(ephemeral_secret,
    /// server_public)`, `key = HKDF-SHA256(ikm = shared, salt = empty, info =
    /// "switchboard-v1")`, XChaCha20-Poly1305 with `nonce`, no associated data. Standard
    /// base64 with padding. The plaintext is UTF-8 text (sent as `m.text`), or a JSON object
    /// with string `msgtype` and `body` (sent as the event content); at most 65536 bytes.
    pub encrypted_body: String,
    /// 24 bytes, base64.
    pub nonce: String,
    /// The one-time X25519 public key of the envelope, 32 bytes, base64.
    pub ephemeral_pubkey: String,
    /// RFC 3339 date-time in the future.
    pub scheduled_for: String,
    /// Optional: `whatsapp`, `telegram` or `discord`.
    pub target_platform: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduleUpdateRequest {
    /// RFC 3339 date-time in the future.
    pub scheduled_for: Option<String>,
    /// A new envelope: `encryptedBody`, `nonce` and `ephemeralPubkey` together.
    pub encrypted_body: Option<String>,
    pub nonce: Option<String>,
    pub ephemeral_pubkey: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledResult {
    pub message: String,
    pub scheduled_message: ScheduledMessageView,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledMessageResult {
    pub scheduled_message: ScheduledMessageView,
}

/// The pagination object of offset-paged lists (shared with the admin API).
pub use super::admin::Pagination;

/// Pagination of a page of `returned` items.
pub fn pagination(total: i64, limit: i64, offset: i64, returned: usize) -> Pagination {
    Pagination {
        total,
        limit,
        offset,
        has_more: offset + (returned as i64) < total,
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledList {
    /// Earliest `scheduledFor` first.
    pub scheduled_messages: Vec<ScheduledMessageView>,
    pub pagination: Pagination,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledCancelResult {
    pub message: String,
    pub cancelled_id: String,
}

#[derive(Debug, Object)]
#[oai(rename = "ScheduledStats", rename_all = "camelCase")]
pub struct StatsView {
    pub pending_count: i64,
    pub sent_count: i64,
    pub cancelled_count: i64,
    pub failed_count: i64,
    /// Rooms with at least one pending message.
    pub rooms_with_scheduled: i64,
    /// The earliest pending `scheduledFor`; null without pending messages.
    pub next_scheduled: Option<DateTime<Utc>>,
}

impl From<Stats> for StatsView {
    fn from(s: Stats) -> Self {
        Self {
            pending_count: s.pending,
            sent_count: s.sent,
            cancelled_count: s.cancelled,
            failed_count: s.failed,
            rooms_with_scheduled: s.rooms_with_pending,
            next_scheduled: s.next_scheduled.map(to_time),
        }
    }
}

#[derive(Debug, Object)]
pub struct ScheduledStatsResult {
    pub stats: StatsView,
}

#[derive(ApiResponse)]
pub enum Created {
    /// Scheduled (status `pending`).
    #[oai(status = 201)]
    Created(Json<ScheduledResult>),
}

pub struct ScheduledApi;

#[OpenApi(prefix_path = "/api/messages", tag = "ApiTags::Scheduled")]
impl ScheduledApi {
    /// Schedule a message
    ///
    /// Stores a message sealed to the server's X25519 key (see `encryptedBody`) to be sent
    /// as the caller at `scheduledFor`; it starts `pending`. The scheduler opens it at that
    /// time and sends it to `roomId` (or, with `targetPlatform`, to the room of that
    /// platform in the room's linked group) with the message id as Matrix transaction id,
    /// so it is sent exactly once even across restarts. A failed send is retried (after 5
    /// s, 30 s, 2 min when the homeserver is unavailable; after 1 s and 4 s when it refuses,
    /// e.g. not a member), then the message is `failed` with `failureReason`. Each status
    /// change is published as `scheduled.updated` `{id, status}` on `GET /api/sync`.
    ///
    /// 400 `invalid_schedule_time` when `scheduledFor` is not an RFC 3339 date-time in the
    /// future; 400 `invalid_encryption` when the envelope is malformed or does not open with
    /// the server key; 400 `invalid_request` for other invalid fields.
    #[oai(path = "/schedule", method = "post", operation_id = "scheduled_create")]
    async fn create(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<ScheduleRequest>,
    ) -> Result<Created, AppError> {
        let b = body.0;
        let row = scheduled::create(
            &state,
            auth.user_id(),
            NewScheduled {
                room_id: b.room_id,
                encrypted_body: b.encrypted_body,
                nonce: b.nonce,
                ephemeral_pubkey: b.ephemeral_pubkey,
                scheduled_for: b.scheduled_for,
                target_platform: b.target_platform,
            },
        )
        .await?;
        Ok(Created::Created(Json(ScheduledResult {
            message: "message scheduled".into(),
            scheduled_message: row.into(),
        })))
    }

    /// List scheduled messages
    ///
    /// The caller's scheduled messages, earliest `scheduledFor` first, optionally only of
    /// `roomId` and/or of `status` (`pending`, `sent`, `cancelled`, `failed`; 400
    /// otherwise). `limit` 1 to 100 (default 50) and `offset` ≥ 0 (default 0); values
    /// outside are 400, not clamped.
    #[oai(path = "/scheduled", method = "get", operation_id = "scheduled_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Matrix room id.
        #[oai(name = "roomId")]
        room_id: Query<Option<String>>,
        /// `pending`, `sent`, `cancelled` or `failed`.
        status: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<String>>,
        /// At least 0, default 0.
        offset: Query<Option<String>>,
    ) -> Result<Json<ScheduledList>, AppError> {
        let page = scheduled::list(
            &state,
            auth.user_id(),
            ListQuery {
                room_id: room_id.0,
                status: status.0,
                limit: limit.0,
                offset: offset.0,
            },
        )
        .await?;
        Ok(Json(ScheduledList {
            pagination: pagination(page.total, page.limit, page.offset, page.items.len()),
            scheduled_messages: page.items.into_iter().map(Into::into).collect(),
        }))
    }

    /// Scheduled message statistics
    ///
    /// Counts of the caller's scheduled messages by status, the number of rooms with
    /// pending messages, and the earliest pending time (null without pending messages).
    #[oai(
        path = "/scheduled/stats",
        method = "get",
        operation_id = "scheduled_stats"
    )]
    async fn stats(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<ScheduledStatsResult>, AppError> {
        let stats = scheduled::stats(&state, auth.user_id()).await?;
        Ok(Json(ScheduledStatsResult {
            stats: stats.into(),
        }))
    }

    /// Get a scheduled message
    ///
    /// 400 when `id` is not a UUID; 404 when it is not a scheduled message of the caller.
    #[oai(
        path = "/scheduled/:id",
        method = "get",
        operation_id = "scheduled_get"
    )]
    async fn get(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Scheduled message id (UUID).
        id: Path<String>,
    ) -> Result<Json<ScheduledMessageResult>, AppError> {
        let row = scheduled::get(&state, auth.user_id(), &id).await?;
        Ok(Json(ScheduledMessageResult {
            scheduled_message: row.into(),
        }))
    }

    /// Change a pending scheduled message
    ///
    /// Replaces `scheduledFor` and/or the envelope (`encryptedBody`, `nonce` and
    /// `ephemeralPubkey` together, checked like at creation); absent fields stay. Resets
    /// `attempts` and `failureReason`. Only while `pending`: 400 `not_pending` for sent,
    /// cancelled and failed messages and while a send is in progress. 400
    /// `invalid_schedule_time` / `invalid_encryption` as at creation; 404 unknown.
    #[oai(
        path = "/scheduled/:id",
        method = "patch",
        operation_id = "scheduled_update"
    )]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Scheduled message id (UUID).
        id: Path<String>,
        body: Json<ScheduleUpdateRequest>,
    ) -> Result<Json<ScheduledResult>, AppError> {
        let b = body.0;
        let row = scheduled::update(
            &state,
            auth.user_id(),
            &id,
            ScheduledChange {
                scheduled_for: b.scheduled_for,
                encrypted_body: b.encrypted_body,
                nonce: b.nonce,
                ephemeral_pubkey: b.ephemeral_pubkey,
            },
        )
        .await?;
        Ok(Json(ScheduledResult {
            message: "scheduled message updated".into(),
            scheduled_message: row.into(),
        }))
    }

    /// Cancel a scheduled message
    ///
    /// A pending message becomes `cancelled` and is never sent. 400 `not_pending` for sent,
    /// cancelled and failed messages and while a send is in progress; 404 unknown.
    #[oai(
        path = "/scheduled/:id",
        method = "delete",
        operation_id = "scheduled_cancel"
    )]
    async fn cancel(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Scheduled message id (UUID).
        id: Path<String>,
    ) -> Result<Json<ScheduledCancelResult>, AppError> {
        let id = scheduled::cancel(&state, auth.user_id(), &id).await?;
        Ok(Json(ScheduledCancelResult {
            message: "scheduled message cancelled".into(),
            cancelled_id: id,
        }))
    }
}
