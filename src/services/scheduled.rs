//! Scheduled messages: validation, the user-facing state machine and what the scheduler
//! needs to send one.
//!
//! States: a message starts `pending`; the scheduler moves it to `sent` (with the event id)
//! or, after its retries, to `failed` (with the reason); `DELETE` moves a pending one to
//! `cancelled`. `sent`, `cancelled` and `failed` are final: PATCH and DELETE answer 400
//! `not_pending`. While the scheduler holds a message (a send in progress) it still reads
//! `pending` but cannot be changed or cancelled (400 `not_pending`, "being sent").
//!
//! Body: the client seals the message to the server's X25519 key (`GET /api/attestation`
//! `serverPublicKey`) with the envelope of `crypto::envelope`; the envelope is checked to open at create
//! and update time and stored as given. The plaintext is UTF-8: either the text of an
//! `m.text` message, or a JSON object with string `msgtype` and `body`, sent as the event
//! content as is (formatted messages, notices).

mod input;

use self::input::{check_body, validate_platform};
pub use self::input::{
    message_content, now_ms, open_body, parse_id, parse_page, parse_schedule_time, to_time,
    validate_room_id, MAX_BODY_BYTES, STATUSES,
};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::Context;
use crate::store::scheduled_messages::{self as store, ListFilter, ScheduledRow, Stats, PENDING};
use crate::store::Conn;

pub struct NewScheduled {
    pub room_id: String,
    pub encrypted_body: String,
    pub nonce: String,
    pub ephemeral_pubkey: String,
    pub scheduled_for: String,
    pub target_platform: Option<String>,
}

/// `scheduled.updated` `{id, roomId, status}` on the owner's event stream.
pub fn publish(state: &Context, user_id: &str, id: &str, room_id: &str, status: &str) {
    state.events.publish(
        user_id,
        ChangeEvent::ScheduledUpdated {
            id: id.to_owned(),
            room_id: room_id.to_owned(),
            status: status.to_owned(),
        },
    );
}

pub async fn create(state: &Context, user_id: &str, new: NewScheduled) -> AppResult<ScheduledRow> {
    let room_id = validate_room_id("roomId", &new.room_id)?;
    let target_platform = validate_platform(new.target_platform.as_deref())?;
    let now = now_ms();
    let scheduled_for = parse_schedule_time(&new.scheduled_for, now)?;
    check_body(
        state,
        &new.encrypted_body,
        &new.nonce,
        &new.ephemeral_pubkey,
    )?;
    let row = ScheduledRow {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: user_id.to_owned(),
        room_id,
        target_platform,
        encrypted_body: new.encrypted_body.trim().to_owned(),
        nonce: new.nonce.trim().to_owned(),
        ephemeral_pubkey: new.ephemeral_pubkey.trim().to_owned(),
        status: PENDING.to_owned(),
        scheduled_for,
        next_attempt_at: scheduled_for,
        created_at: now,
        updated_at: now,
        ..ScheduledRow::default()
    };
    let stored = row.clone();
    state
        .store
        .query(move |c| store::insert(c, &stored))
        .await?;
    publish(state, user_id, &row.id, &row.room_id, PENDING);
    state.scheduler_wakeup.notify_one();
    Ok(row)
}

pub struct ListQuery {
    pub room_id: Option<String>,
    pub status: Option<String>,
    pub limit: Option<String>,
    pub offset: Option<String>,
}

pub struct Page {
    pub items: Vec<ScheduledRow>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

pub async fn list(state: &Context, user_id: &str, q: ListQuery) -> AppResult<Page> {
    let (limit, offset) = parse_page(q.limit.as_deref(), q.offset.as_deref())?;
    let status = match q.status.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) if STATUSES.contains(&s) => Some(s.to_owned()),
        Some(_) => {
            return Err(AppError::invalid(
                "status",
                "must be one of pending, sent, cancelled, failed",
            ))
        }
    };
    let room_id = match q.room_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(r) => Some(r.to_owned()),
    };
    let filter = ListFilter {
        room_id,
        status,
        limit,
        offset,
    };
    let uid = user_id.to_owned();
    let (items, total) = state
        .store
        .query(move |c| store::list(c, &uid, &filter))
        .await?;
    Ok(Page {
        items,
        total,
        limit,
        offset,
    })
}

pub async fn get(state: &Context, user_id: &str, id: &str) -> AppResult<ScheduledRow> {
    let id = parse_id("id", id)?;
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| {
            store::find(c, &uid, &id)?.ok_or_else(|| AppError::not_found("scheduled message"))
        })
        .await
}

fn not_pending(row: &ScheduledRow, now: i64) -> Option<AppError> {
    if row.status != PENDING {
        return Some(AppError::bad_request(
            ErrorCode::NotPending,
            format!(
                "the scheduled message is {}; only pending messages can be changed",
                row.status
            ),
        ));
    }
    if row.is_leased(now) {
        return Some(AppError::bad_request(
            ErrorCode::NotPending,
            "the scheduled message is being sent right now and can no longer be changed",
        ));
    }
    None
}

#[derive(Debug, Default)]
pub struct ScheduledChange {
    pub scheduled_for: Option<String>,
    pub encrypted_body: Option<String>,
    pub nonce: Option<String>,
    pub ephemeral_pubkey: Option<String>,
}

/// PATCH: replaces the time and/or the envelope of a pending message. The three envelope
/// fields go together (a new envelope has its own ephemeral key and nonce). Resets the
/// attempt count and the last failure.
pub async fn update(
    state: &Context,
    user_id: &str,
    id: &str,
    change: ScheduledChange,
) -> AppResult<ScheduledRow> {
    let id = parse_id("id", id)?;
    let mut row = {
        let uid = user_id.to_owned();
        let id = id.clone();
        state
            .store
            .run(move |c| {
                store::find(c, &uid, &id)?.ok_or_else(|| AppError::not_found("scheduled message"))
            })
            .await?
    };
    let now = now_ms();
    if let Some(e) = not_pending(&row, now) {
        return Err(e);
    }
    let envelope = change.envelope()?;
    if let Some(at) = &change.scheduled_for {
        row.scheduled_for = parse_schedule_time(at, now)?;
    }
    if let Some((b, n, e)) = envelope {
        check_body(state, &b, &n, &e)?;
        row.encrypted_body = b;
        row.nonce = n;
        row.ephemeral_pubkey = e;
    }
    if change.scheduled_for.is_none() && change.encrypted_body.is_none() {
        return Ok(row);
    }
    row.next_attempt_at = row.scheduled_for;
    row.attempts = 0;
    row.failure_reason = None;
    row.updated_at = now;
    let stored = row.clone();
    let changed = state
        .db(move |c| store_if_still_pending(c, &stored))
        .await?;
    if changed == 0 {
        return Err(AppError::not_found("scheduled message"));
    }
    publish(state, user_id, &row.id, &row.room_id, PENDING);
    state.scheduler_wakeup.notify_one();
    Ok(row)
}

impl ScheduledChange {
    /// The new envelope, trimmed: none, or all three fields (a new envelope has its own
    /// ephemeral key and nonce); 400 for some but not all.
    fn envelope(&self) -> AppResult<Option<(String, String, String)>> {
        match (&self.encrypted_body, &self.nonce, &self.ephemeral_pubkey) {
            (None, None, None) => Ok(None),
            (Some(b), Some(n), Some(e)) => Ok(Some((
                b.trim().to_owned(),
                n.trim().to_owned(),
                e.trim().to_owned(),
            ))),
            _ => Err(AppError::invalid(
                "encryptedBody",
                "encryptedBody, nonce and ephemeralPubkey must be replaced together",
            )),
        }
    }
}

/// Writes the changed row; checked again inside the write, as the scheduler may have
/// claimed it meanwhile. The number of rows changed.
fn store_if_still_pending(c: &mut Conn, row: &ScheduledRow) -> AppResult<usize> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let current = store::find(&tx, &row.user_id, &row.id)?
        .ok_or_else(|| AppError::not_found("scheduled message"))?;
    if let Some(e) = not_pending(&current, now_ms()) {
        return Err(e);
    }
    let n = store::update_pending(&tx, row)?;
    tx.commit()?;
    Ok(n)
}

/// DELETE: cancels a pending message; returns its id.
pub async fn cancel(state: &Context, user_id: &str, id: &str) -> AppResult<String> {
    let id = parse_id("id", id)?;
    let uid = user_id.to_owned();
    let mid = id.clone();
    let room_id = state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let row = store::find(&tx, &uid, &mid)?
                .ok_or_else(|| AppError::not_found("scheduled message"))?;
            let now = now_ms();
            if let Some(e) = not_pending(&row, now) {
                return Err(e);
            }
            store::cancel(&tx, &uid, &mid, now)?;
            tx.commit()?;
            Ok(row.room_id)
        })
        .await?;
    publish(state, user_id, &id, &room_id, store::CANCELLED);
    state.scheduler_wakeup.notify_one();
    Ok(id)
}

pub async fn stats(state: &Context, user_id: &str) -> AppResult<Stats> {
    let uid = user_id.to_owned();
    Ok(state.store.query(move |c| store::stats(c, &uid)).await?)
}
