//! `/api/reminders*`: the user's reminders. Native sessions and personal API tokens.

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::scheduled::{pagination, Pagination};
use super::security::TokenAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::reminders::{self, Patch, Reminder, ReminderInput};
use crate::services::scheduled::to_time;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename = "Reminder", rename_all = "camelCase")]
pub struct ReminderView {
    /// UUID.
    pub id: String,
    /// 1 to 500 characters. Null only when the content was destroyed by `DELETE /api/keys`.
    pub title: Option<String>,
    /// Up to 10,000 characters; null when none.
    pub notes: Option<String>,
    pub due_at: DateTime<Utc>,
    /// The Matrix room the reminder is about; null when none.
    pub room_id: Option<String>,
    /// The Matrix event (message) the reminder is about; null when none.
    pub event_id: Option<String>,
    pub completed: bool,
    pub completed_at: Option<DateTime<Utc>>,
    /// When `reminder.due` was emitted (and the push sent); null until then. Changing
    /// `dueAt` resets it.
    pub notified_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Reminder> for ReminderView {
    fn from(r: Reminder) -> Self {
        let row = r.row;
        Self {
            id: row.id,
            title: r.title,
            notes: r.notes,
            due_at: to_time(row.due_at),
            room_id: row.room_id,
            event_id: row.event_id,
            completed: row.completed,
            completed_at: row.completed_at.map(to_time),
            notified_at: row.notified_at.map(to_time),
            created_at: to_time(row.created_at),
            updated_at: to_time(row.updated_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReminderCreateRequest {
    /// 1 to 500 characters (trimmed), no control characters.
    pub title: String,
    /// Up to 10,000 characters.
    pub notes: Option<String>,
    /// RFC 3339 date-time; a past time makes the reminder due at once.
    pub due_at: String,
    /// Matrix room id (`!…`).
    pub room_id: Option<String>,
    /// Matrix event id (`$…`); needs `roomId`.
    pub event_id: Option<String>,
    /// Default false.
    pub completed: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReminderUpdateRequest {
    pub title: Option<String>,
    /// null clears the notes.
    pub notes: MaybeUndefined<String>,
    /// A new due time re-arms the `reminder.due` announcement.
    pub due_at: Option<String>,
    /// null clears the room (and needs `eventId` cleared too).
    pub room_id: MaybeUndefined<String>,
    /// null clears the event.
    pub event_id: MaybeUndefined<String>,
    pub completed: Option<bool>,
}

fn patch<T>(v: MaybeUndefined<T>) -> Patch<T> {
    match v {
        MaybeUndefined::Undefined => Patch::Absent,
        MaybeUndefined::Null => Patch::Null,
        MaybeUndefined::Value(v) => Patch::Value(v),
    }
}

fn opt<T>(v: Option<T>) -> Patch<T> {
    v.map_or(Patch::Absent, Patch::Value)
}

#[derive(Debug, Object)]
pub struct ReminderResult {
    pub reminder: ReminderView,
}

#[derive(Debug, Object)]
pub struct ReminderList {
    /// Earliest `dueAt` first.
    pub reminders: Vec<ReminderView>,
    pub pagination: Pagination,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReminderDeleted {
    pub message: String,
    pub deleted_id: String,
}

#[derive(ApiResponse)]
pub enum ReminderCreated {
    #[oai(status = 201)]
    Created(Json<ReminderResult>),
}

pub struct RemindersApi;

#[OpenApi(prefix_path = "/api/reminders", tag = "ApiTags::Reminders")]
impl RemindersApi {
    /// List reminders
    ///
    /// The caller's reminders, earliest `dueAt` first; `completed=true|false` filters (400
    /// otherwise); `limit` 1 to 100 (default 50), `offset` ≥ 0 (default 0), 400 outside.
    /// Personal tokens allowed. 409 `NO_SIGNING_KEY` after the keys were deleted, until new
    /// keys are registered.
    #[oai(path = "/", method = "get", operation_id = "reminders_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// `true` or `false`.
        completed: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<String>>,
        /// At least 0, default 0.
        offset: Query<Option<String>>,
    ) -> Result<Json<ReminderList>, AppError> {
        let page = reminders::list(
            &state,
            auth.user_id(),
            completed.0.as_deref(),
            limit.0.as_deref(),
            offset.0.as_deref(),
        )
        .await?;
        Ok(Json(ReminderList {
            pagination: pagination(page.total, page.limit, page.offset, page.items.len()),
            reminders: page.items.into_iter().map(Into::into).collect(),
        }))
    }

    /// Create a reminder
    ///
    /// Title and notes are stored encrypted. When `dueAt` passes (and the reminder is not
    /// completed) the server emits `reminder.due` `{id, dueAt}` on `GET /api/sync` (no text:
    /// re-read the reminder) and pushes "Reminder: <title>" to the caller's devices, once.
    /// Personal tokens allowed. 400 `invalid_request` for invalid fields.
    #[oai(path = "/", method = "post", operation_id = "reminders_create")]
    async fn create(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        body: Json<ReminderCreateRequest>,
    ) -> Result<ReminderCreated, AppError> {
        let b = body.0;
        let input = ReminderInput {
            title: Some(b.title),
            notes: opt(b.notes),
            due_at: Some(b.due_at),
            room_id: opt(b.room_id),
            event_id: opt(b.event_id),
            completed: b.completed,
        };
        let r = reminders::create(&state, auth.user_id(), input).await?;
        Ok(ReminderCreated::Created(Json(ReminderResult {
            reminder: r.into(),
        })))
    }

    /// Update a reminder
    ///
    /// Partial update: absent fields stay; `notes`, `roomId`, `eventId` can be cleared with
    /// null. 400 when `id` is not a UUID or a field is invalid; 404 when it is not a
    /// reminder of the caller. Personal tokens allowed.
    #[oai(path = "/:id", method = "put", operation_id = "reminders_update")]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Reminder id (UUID).
        id: Path<String>,
        body: Json<ReminderUpdateRequest>,
    ) -> Result<Json<ReminderResult>, AppError> {
        let b = body.0;
        let input = ReminderInput {
            title: b.title,
            notes: patch(b.notes),
            due_at: b.due_at,
            room_id: patch(b.room_id),
            event_id: patch(b.event_id),
            completed: b.completed,
        };
        let r = reminders::update(&state, auth.user_id(), &id, input).await?;
        Ok(Json(ReminderResult { reminder: r.into() }))
    }

    /// Delete a reminder
    ///
    /// 400 when `id` is not a UUID; 404 when it is not a reminder of the caller. Personal
    /// tokens allowed.
    #[oai(path = "/:id", method = "delete", operation_id = "reminders_delete")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// Reminder id (UUID).
        id: Path<String>,
    ) -> Result<Json<ReminderDeleted>, AppError> {
        let id = reminders::delete(&state, auth.user_id(), &id).await?;
        Ok(Json(ReminderDeleted {
            message: "reminder deleted".into(),
            deleted_id: id,
        }))
    }
}
