//! "Undo send": a message sent with `undoSeconds` is held here, its compose fields sealed
//! (JSON under the owner's data key, AAD `email_outbox` / `request` / id), and sent by the
//! scheduler when the window ends.
//!
//! Exactly once: the scheduler claims due rows in one statement (`pending` → `sending`),
//! so a row is handed to one delivery only, and a row is never claimed twice. A held
//! message survives a restart (still `pending`, due at its time or at once after start).
//! A stop in the middle of a delivery leaves the row `sending`; at the next start it is
//! marked `failed` ("interrupted") rather than sent again: whether the SMTP server took
//! it cannot be known, and a mail sent twice cannot be taken back. `DELETE` cancels while
//! the row is `pending`; once it is `sending` or `sent` the answer is 409 `already_sent`.

use super::compose::ComposeInput;
use super::{now_ms, open_json, parse_id, seal_json, user_key};
use crate::crypto::Aad;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::email::outgoing::{self as store, OutboxRow};

pub const T: &str = "email_outbox";
/// Held messages claimed per scheduler round (the rest in the next one, at once).
pub const CLAIM_BATCH: i64 = 16;
/// Finished outbox rows are kept this long for `GET /api/email/outbox/{id}`.
pub const KEEP_FINISHED_MS: i64 = 7 * 24 * 60 * 60 * 1000;

pub struct Status {
    pub id: String,
    pub status: String,
    pub send_at: i64,
    pub error: Option<String>,
}

/// Holds `input` (checked already) for `undo_seconds`; returns `(outboxId, sendAt)`.
pub async fn hold(
    state: &Context,
    user_id: &str,
    input: &ComposeInput,
    undo_seconds: u32,
) -> AppResult<(String, i64)> {
    let dek = user_key(state, user_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let now = now_ms();
    let send_at = now + i64::from(undo_seconds) * 1000;
    let row = OutboxRow {
        request_enc: seal_json(&dek, input, T, "request", &id),
        upload_ids: input.attachments.join(" "),
        id: id.clone(),
        user_id: user_id.to_owned(),
        send_at,
        status: "pending".into(),
        created_at: now,
    };
    state
        .db(move |c| Ok(store::insert_outbox(c, &row)?))
        .await?;
    state.scheduler_wakeup.notify_one();
    Ok((id, send_at))
}

/// Cancels a held message: nothing is sent. 404 unknown (or another user's), 409
/// `already_sent` once it is on its way or sent; a cancelled or failed one stays so (204).
pub async fn cancel(state: &Context, user_id: &str, id: &str) -> AppResult<()> {
    let id = parse_id("outbox message", id)?;
    let (uid, now) = (user_id.to_owned(), now_ms());
    let status = state
        .db(move |c| {
            if store::cancel_outbox(c, &uid, &id, now)? {
                return Ok(Some("cancelled".to_owned()));
            }
            Ok(store::outbox_status(c, &uid, &id)?)
        })
        .await?;
    match status.as_deref() {
        None => Err(AppError::not_found("outbox message")),
        Some("sending") | Some("sent") => Err(AppError::conflict(
            ErrorCode::AlreadySent,
            "the message has already been sent (or is being sent): it cannot be undone",
        )),
        Some(_) => Ok(()),
    }
}

pub async fn status(state: &Context, user_id: &str, id: &str) -> AppResult<Status> {
    let id = parse_id("outbox message", id)?;
    let dek = user_key(state, user_id).await?;
    let (uid, oid) = (user_id.to_owned(), id.clone());
    let (status, send_at, error_enc) = state
        .db(move |c| {
            store::outbox_state(c, &uid, &oid)?.ok_or_else(|| AppError::not_found("outbox message"))
        })
        .await?;
    Ok(Status {
        error: error_enc.and_then(|e| dek.open_string(&e, &Aad::new(T, "error", &id)).ok()),
        id,
        status,
        send_at,
    })
}

/// Rows a stop left in `sending` are `failed` ("interrupted"); called once at start.
pub async fn recover(state: &Context) -> AppResult<usize> {
    let rows = state.db(|c| Ok(store::interrupted(c)?)).await?;
    let n = rows.len();
    for (id, user_id) in rows {
        let reason = "interrupted by a server stop while sending: it may or may not have \
                      been delivered; check the Sent mailbox";
        finish(state, &id, &user_id, Err(reason.to_owned())).await;
    }
    if n > 0 {
        tracing::warn!(
            messages = n,
            "held mails interrupted mid-send were marked failed"
        );
    }
    Ok(n)
}

async fn finish(state: &Context, id: &str, user_id: &str, outcome: Result<(), String>) {
    let error_enc = match &outcome {
        Ok(()) => None,
        Err(reason) => user_key(state, user_id)
            .await
            .ok()
            .map(|dek| dek.seal_str(reason, &Aad::new(T, "error", id))),
    };
    let status = if outcome.is_ok() { "sent" } else { "failed" };
    let (id, now) = (id.to_owned(), now_ms());
    let r = state
        .db(move |c| {
            Ok(store::finish_outbox(
                c,
                &id,
                status,
                error_enc.as_deref(),
                now,
            )?)
        })
        .await;
    if let Err(e) = r {
        tracing::warn!(error = %e, "could not record the outcome of a held mail");
    }
}

/// Claims the due held messages and sends each on its own task (the scheduler does not
/// wait on mail servers). Returns how many were claimed.
pub async fn send_due(state: &Context) -> AppResult<usize> {
    let now = now_ms();
    let rows = state
        .db(move |c| {
            let _ = store::purge_outbox(c, now - KEEP_FINISHED_MS)?;
            Ok(store::claim_due(c, now, CLAIM_BATCH)?)
        })
        .await?;
    let n = rows.len();
    for row in rows {
        let state = state.clone();
        tokio::spawn(async move {
            let outcome = match open_request(&state, &row).await {
                Ok(input) => super::deliver::deliver(&state, &row.user_id, input)
                    .await
                    .map(|_| ())
                    .or_else(|e| match e {
                        // Sent, only not filed in Sent: it went out.
                        AppError::BadGateway {
                            code: ErrorCode::MailAppendFailed,
                            ..
                        } => Ok(()),
                        e => Err(e.to_string()),
                    }),
                Err(e) => Err(e.to_string()),
            };
            if let Err(reason) = &outcome {
                tracing::warn!(id = %row.id, %reason, "a held mail could not be sent");
            }
            finish(&state, &row.id, &row.user_id, outcome).await;
        });
    }
    Ok(n)
}

async fn open_request(state: &Context, row: &OutboxRow) -> AppResult<ComposeInput> {
    let dek = user_key(state, &row.user_id).await?;
    open_json(&dek, &row.request_enc, T, "request", &row.id)
}

pub async fn next_due(state: &Context) -> AppResult<Option<i64>> {
    state.db(|c| Ok(store::next_due(c)?)).await
}
