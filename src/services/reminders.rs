//! Reminders: the user's to-dos with a due time, optionally pointing at a room or message.
//!
//! Title and notes are sealed under the user's data key (AAD `("reminders", "title" |
//! "notes", id)`). Routes answer 409 `NO_SIGNING_KEY` after `DELETE /api/keys` until new
//! keys are registered; reminders sealed under the destroyed key then read with
//! `title: null` (their content is gone).
//!
//! Due: the scheduler announces each reminder once when `dueAt` has passed and it is not
//! completed: `reminder.due` on the sync stream with `{id, dueAt}` (no text, by design:
//! the client re-reads the reminder) and a push to the user's devices. Changing `dueAt`
//! re-arms the announcement.

use super::scheduled::{now_ms, parse_id, parse_page, validate_room_id};
use super::users;
use crate::clients::push::Notification;
use crate::crypto::{Aad, DataKey, MasterKey};
use crate::error::{AppError, AppResult};
use crate::events::ChangeEvent;
use crate::services::conversations::require_readable;
use crate::services::Context;
use crate::store::reminders::{self as store, ReminderRow};

pub const MAX_TITLE_CHARS: usize = 500;
pub const MAX_NOTES_CHARS: usize = 10_000;
/// Reminders announced per scheduler round at most.
pub const ANNOUNCE_BATCH: usize = 500;

/// A reminder as its owner sees it.
#[derive(Debug, Clone)]
pub struct Reminder {
    pub row: ReminderRow,
    /// `None` when the content was destroyed by key deletion.
    pub title: Option<String>,
    pub notes: Option<String>,
}

fn aad<'a>(column: &'a str, id: &'a str) -> Aad<'a> {
    Aad::new("reminders", column, id)
}

fn open(dek: &DataKey, row: ReminderRow) -> Reminder {
    let title = dek.open_string(&row.title_enc, &aad("title", &row.id)).ok();
    let notes = match (&title, &row.notes_enc) {
        (Some(_), Some(sealed)) => dek.open_string(sealed, &aad("notes", &row.id)).ok(),
        _ => None,
    };
    Reminder { row, title, notes }
}

pub fn validate_title(title: &str) -> AppResult<String> {
    let t = title.trim();
    let n = t.chars().count();
    if n == 0 || n > MAX_TITLE_CHARS {
        return Err(AppError::invalid(
            "title",
            format!("must be 1 to {MAX_TITLE_CHARS} characters"),
        ));
    }
    if t.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "title",
            "must not contain control characters",
        ));
    }
    Ok(t.to_owned())
}

pub fn validate_notes(notes: &str) -> AppResult<Option<String>> {
    if notes.chars().count() > MAX_NOTES_CHARS {
        return Err(AppError::invalid(
            "notes",
            format!("must be at most {MAX_NOTES_CHARS} characters"),
        ));
    }
    Ok((!notes.is_empty()).then(|| notes.to_owned()))
}

/// `dueAt`: an RFC 3339 date-time (past times are accepted: the reminder is due at once).
pub fn parse_due(value: &str) -> AppResult<i64> {
    chrono::DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            AppError::invalid(
                "dueAt",
                "must be an RFC 3339 date-time such as 2030-01-01T09:00:00Z",
            )
        })
}

fn validate_event_id(event_id: &str) -> AppResult<String> {
    let e = event_id.trim();
    if !e.starts_with('$')
        || e.len() < 2
        || e.len() > 255
        || e.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(AppError::invalid(
            "eventId",
            "must be a Matrix event id such as $abc",
        ));
    }
    Ok(e.to_owned())
}

/// A field of a partial update: absent, explicitly null, or a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

#[derive(Debug, Default)]
pub struct ReminderInput {
    pub title: Option<String>,
    pub notes: Patch<String>,
    pub due_at: Option<String>,
    pub room_id: Patch<String>,
    pub event_id: Patch<String>,
    pub completed: Option<bool>,
}

async fn user_and_key(state: &Context, user_id: &str) -> AppResult<DataKey> {
    let user = users::load(state, user_id).await?;
    require_readable(&user)?;
    users::data_key(&state.master, &user)
}

/// The user's data key read in the caller's transaction, for sealing what that transaction
/// writes (a key read before an `.await` may have been deleted meanwhile).
fn key_in(
    conn: &rusqlite::Connection,
    state_master: &MasterKey,
    user_id: &str,
) -> AppResult<DataKey> {
    let user = crate::store::users::find(conn, user_id)?
        .ok_or_else(|| AppError::unauthorized("the signed-in user no longer exists"))?;
    require_readable(&user)?;
    users::data_key(state_master, &user)
}

fn apply(dek: &DataKey, row: &mut ReminderRow, input: ReminderInput, now: i64) -> AppResult<()> {
    if let Some(title) = &input.title {
        row.title_enc = dek.seal_str(&validate_title(title)?, &aad("title", &row.id));
    }
    match &input.notes {
        Patch::Absent => {}
        Patch::Null => row.notes_enc = None,
        Patch::Value(n) => {
            row.notes_enc = validate_notes(n)?.map(|n| dek.seal_str(&n, &aad("notes", &row.id)));
        }
    }
    if let Some(due) = &input.due_at {
        let due = parse_due(due)?;
        if due != row.due_at {
            row.due_at = due;
            row.notified_at = None;
        }
    }
    match &input.room_id {
        Patch::Absent => {}
        Patch::Null => row.room_id = None,
        Patch::Value(r) => row.room_id = Some(validate_room_id("roomId", r)?),
    }
    match &input.event_id {
        Patch::Absent => {}
        Patch::Null => row.event_id = None,
        Patch::Value(e) => row.event_id = Some(validate_event_id(e)?),
    }
    if row.event_id.is_some() && row.room_id.is_none() {
        return Err(AppError::invalid("eventId", "needs a roomId"));
    }
    if let Some(done) = input.completed {
        if done != row.completed {
            row.completed = done;
            row.completed_at = done.then_some(now);
        }
    }
    row.updated_at = now;
    Ok(())
}

pub async fn create(state: &Context, user_id: &str, input: ReminderInput) -> AppResult<Reminder> {
    if input.title.is_none() {
        return Err(AppError::invalid("title", "is required"));
    }
    let Some(due) = input.due_at.as_deref() else {
        return Err(AppError::invalid("dueAt", "is required"));
    };
    let due_at = parse_due(due)?;
    let now = now_ms();
    let mut row = ReminderRow {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: user_id.to_owned(),
        due_at,
        created_at: now,
        ..ReminderRow::default()
    };
    let master = state.master.clone();
    let (row, dek) = state
        .db(move |c| {
            let tx = c.transaction()?;
            let dek = key_in(&tx, &master, &row.user_id)?;
            apply(&dek, &mut row, input, now)?;
            store::insert(&tx, &row)?;
            tx.commit()?;
            Ok((row, dek))
        })
        .await?;
    state.scheduler_wakeup.notify_one();
    Ok(open(&dek, row))
}

pub async fn update(
    state: &Context,
    user_id: &str,
    id: &str,
    input: ReminderInput,
) -> AppResult<Reminder> {
    let id = parse_id("id", id)?;
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let row = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let dek = key_in(&tx, &master, &uid)?;
            let mut row =
                store::find(&tx, &uid, &id)?.ok_or_else(|| AppError::not_found("reminder"))?;
            apply(&dek, &mut row, input, now_ms())?;
            store::update(&tx, &row)?;
            tx.commit()?;
            Ok((row, dek))
        })
        .await?;
    state.scheduler_wakeup.notify_one();
    Ok(open(&row.1, row.0))
}

pub async fn delete(state: &Context, user_id: &str, id: &str) -> AppResult<String> {
    let id = parse_id("id", id)?;
    let user = users::load(state, user_id).await?;
    require_readable(&user)?;
    let uid = user_id.to_owned();
    let rid = id.clone();
    let n = state
        .store
        .query(move |c| store::delete(c, &uid, &rid))
        .await?;
    if n == 0 {
        return Err(AppError::not_found("reminder"));
    }
    Ok(id)
}

pub struct ReminderPage {
    pub items: Vec<Reminder>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

pub async fn list(
    state: &Context,
    user_id: &str,
    completed: Option<&str>,
    limit: Option<&str>,
    offset: Option<&str>,
) -> AppResult<ReminderPage> {
    let (limit, offset) = parse_page(limit, offset)?;
    let completed = match completed.map(str::trim) {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(AppError::invalid("completed", "must be true or false")),
    };
    let dek = user_and_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let (rows, total) = state
        .store
        .query(move |c| store::list(c, &uid, completed, limit, offset))
        .await?;
    Ok(ReminderPage {
        items: rows.into_iter().map(|r| open(&dek, r)).collect(),
        total,
        limit,
        offset,
    })
}

/// Announces due reminders (called by the scheduler): marks them notified, publishes
/// `reminder.due` `{id, dueAt}` and pushes "Reminder: <title>" to the owner's devices.
/// Returns how many were announced.
pub async fn announce_due(state: &Context) -> AppResult<usize> {
    let now = now_ms();
    let due = state
        .store
        .query(move |c| store::claim_due(c, now, ANNOUNCE_BATCH as i64))
        .await?;
    let count = due.len();
    for row in due {
        state.events.publish(
            &row.user_id,
            ChangeEvent::ReminderDue {
                id: row.id.clone(),
                due_at: super::scheduled::to_time(row.due_at).to_rfc3339(),
            },
        );
        if state.push.is_none() {
            continue;
        }
        let state = state.clone();
        tokio::spawn(async move {
            let title = match users::load(&state, &row.user_id).await {
                Ok(user) if !user.keys_shredded => users::data_key(&state.master, &user)
                    .ok()
                    .and_then(|dek| dek.open_string(&row.title_enc, &aad("title", &row.id)).ok()),
                _ => None,
            };
            let body: String = title
                .unwrap_or_else(|| "A reminder is due".to_owned())
                .chars()
                .take(200)
                .collect();
            let n = Notification::new("Reminder", body)
                .with("type", "reminder")
                .with("reminderId", row.id.clone());
            super::devices::notify_user(&state, &row.user_id, n).await;
        });
    }
    Ok(count)
}

/// The next due time of an unannounced reminder, ms.
pub async fn next_due(state: &Context) -> AppResult<Option<i64>> {
    Ok(state.store.query(|c| store::next_due(c)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_validated() {
        assert!(validate_title("  ").is_err());
        assert!(validate_title(&"x".repeat(501)).is_err());
        assert_eq!(
            validate_title(&"é".repeat(500)).unwrap().chars().count(),
            500
        );
        assert!(validate_title("a\u{7}b").is_err());
        assert!(validate_notes(&"n".repeat(10_001)).is_err());
        assert_eq!(validate_notes("").unwrap(), None);
        assert!(parse_due("soon").is_err());
        assert!(parse_due("2020-01-01T00:00:00Z").is_ok());
        assert!(validate_event_id("abc").is_err());
    }

    #[test]
    fn updates_seal_and_rearm() {
        let dek = DataKey::generate();
        let mut row = ReminderRow {
            id: "r1".into(),
            due_at: 1_000,
            notified_at: Some(1_000),
            ..ReminderRow::default()
        };
        let input = ReminderInput {
            title: Some(" Call Bob ".into()),
            notes: Patch::Value("about the thing".into()),
            due_at: Some("2030-01-01T00:00:00Z".into()),
            completed: Some(true),
            ..ReminderInput::default()
        };
        apply(&dek, &mut row, input, 5).unwrap();
        assert_eq!(
            row.notified_at, None,
            "a new due time re-arms the announcement"
        );
        assert_eq!(row.completed_at, Some(5));
        let r = open(&dek, row.clone());
        assert_eq!(r.title.as_deref(), Some("Call Bob"));
        assert_eq!(r.notes.as_deref(), Some("about the thing"));
        assert!(!String::from_utf8_lossy(&row.title_enc).contains("Call Bob"));
        let bad = ReminderInput {
            event_id: Patch::Value("$e".into()),
            ..ReminderInput::default()
        };
        assert!(
            apply(&dek, &mut row, bad, 6).is_err(),
            "eventId needs roomId"
        );
        // Sealed for one row, it does not open for another.
        let mut moved = row.clone();
        moved.id = "r2".into();
        assert_eq!(open(&dek, moved).title, None);
    }
}
