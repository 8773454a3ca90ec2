//! Sending: approved text to one room (`POST /api/rooms/{roomId}/messages`, idempotent per
//! client `txnId` through `sent_transactions` and the homeserver's own transaction ids) and
//! one text to several rooms (`POST /api/messages/send-multi`).

use std::collections::HashSet;

use futures_util::stream::{self, StreamExt};
use rusqlite::TransactionBehavior;
use serde_json::{json, Value};

use super::{load_user, parse_room_id, room_not_found};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::e2ee::{self, Outgoing, SendFailure};
use crate::services::users;
use crate::services::Context;
use crate::store::rooms;
use crate::store::sent_transactions::{self, SentTransaction};
use crate::store::users::UserRow;

/// Longest text that can be sent, in characters.
pub const MAX_TEXT_CHARS: usize = 65_536;
/// Longest client transaction id, in characters.
pub const MAX_TXN_ID_CHARS: usize = 255;
/// Most rooms one multi-send may address.
pub const MAX_MULTI_ROOMS: usize = 100;
/// Sends of one multi-send in flight at once.
pub const MULTI_SEND_CONCURRENCY: usize = 8;
/// Message types a multi-send may use.
pub const TEXT_MSGTYPES: &[&str] = &["m.text", "m.notice", "m.emote"];
/// Matrix transaction ids of single sends are the client's `txnId` under this prefix, so
/// they cannot collide with transaction ids the native app uses on the same Matrix account.
const MATRIX_TXN_PREFIX: &str = "sb-api.";

/// Text to send: 1 to [`MAX_TEXT_CHARS`] characters, not only whitespace.
pub fn validate_text(field: &str, text: &str) -> AppResult<()> {
    let n = text.chars().count();
    if n == 0 || n > MAX_TEXT_CHARS || text.trim().is_empty() {
        return Err(AppError::invalid(
            field,
            format!("must be 1 to {MAX_TEXT_CHARS} characters and not only whitespace"),
        ));
    }
    Ok(())
}

/// `txnId`: 1 to 255 characters out of `A-Z a-z 0-9 . _ ~ -`.
pub fn validate_txn_id(txn_id: &str) -> AppResult<()> {
    let ok = (1..=MAX_TXN_ID_CHARS).contains(&txn_id.len())
        && txn_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'));
    if !ok {
        return Err(AppError::invalid(
            "txnId",
            format!("must be 1 to {MAX_TXN_ID_CHARS} characters of A-Z a-z 0-9 . _ ~ -"),
        ));
    }
    Ok(())
}

/// Sending needs the user in the room: an invitation (not from a configured bridge) must
/// be accepted in the native app first, so a script cannot talk to whoever invited the user.
fn not_joined() -> AppError {
    AppError::conflict(
        ErrorCode::NotJoined,
        "the user has not joined this room (an invitation not accepted yet, or a room left): \
         accept the invitation in the native app first",
    )
}

fn no_homeserver() -> AppError {
    AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    }
}

fn matrix_token(state: &Context, user: &UserRow) -> AppResult<String> {
    users::matrix_token_of(&state.master, user)?.ok_or_else(|| {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    })
}

fn text_content(msgtype: &str, body: &str) -> Value {
    json!({ "msgtype": msgtype, "body": body })
}

/// Result of a single send.
#[derive(Debug, Clone)]
pub struct Sent {
    pub event_id: String,
    pub room_id: String,
    pub txn_id: String,
    /// The `txnId` had been used before: nothing new was sent.
    pub duplicate: bool,
}

enum Prepared {
    Done(String),
    Send { token: String, duplicate: bool },
}

/// `POST /api/rooms/{roomId}/messages`: sends `text` as `m.text`, once per (user, `txnId`).
pub async fn send_to_room(
    state: &Context,
    user_id: &str,
    room_id: &str,
    text: &str,
    txn_id: &str,
) -> AppResult<Sent> {
    let room_id = parse_room_id("roomId", room_id)?;
    validate_text("content", text)?;
    validate_txn_id(txn_id)?;
    let matrix = state.matrix.clone().ok_or_else(no_homeserver)?;
    let (uid, room, txn, st) = (
        user_id.to_owned(),
        room_id.clone(),
        txn_id.to_owned(),
        state.clone(),
    );
    let prepared = state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let user = load_user(&tx, &uid)?;
            let earlier = sent_transactions::find(&tx, &uid, &txn)?;
            if let Some(t) = &earlier {
                if t.room_id != room {
                    return Err(AppError::conflict(
                        ErrorCode::TxnIdConflict,
                        "this txnId was already used for another room; use a new txnId per message",
                    ));
                }
                if let Some(event_id) = &t.event_id {
                    return Ok(Prepared::Done(event_id.clone()));
                }
            }
            let r = rooms::find(&tx, &uid, &room)?.ok_or_else(room_not_found)?;
            if r.membership != "join" {
                return Err(not_joined());
            }
            if r.is_direct && r.recipient_id.is_none() {
                return Err(AppError::conflict(
                    ErrorCode::RecipientUnresolved,
                    "the recipient of this direct conversation is not verified yet: \
                     verify this conversation in the native app first",
                ));
            }
            let token = matrix_token(&st, &user)?;
            if earlier.is_none() {
                sent_transactions::insert_if_new(
                    &tx,
                    &SentTransaction {
                        user_id: uid.clone(),
                        txn_id: txn.clone(),
                        room_id: room.clone(),
                        event_id: None,
                        created_at: unix_now() as i64,
                    },
                )?;
            }
            tx.commit()?;
            Ok(Prepared::Send {
                token,
                duplicate: earlier.is_some(),
            })
        })
        .await?;
    let sent = |event_id, duplicate| Sent {
        event_id,
        room_id: room_id.clone(),
        txn_id: txn_id.to_owned(),
        duplicate,
    };
    let (token, duplicate) = match prepared {
        Prepared::Done(event_id) => return Ok(sent(event_id, true)),
        Prepared::Send { token, duplicate } => (token, duplicate),
    };
    let out = Outgoing {
        room_id: &room_id,
        txn_id: &format!("{MATRIX_TXN_PREFIX}{txn_id}"),
        event_type: "m.room.message",
        content: &text_content("m.text", text),
    };
    let event_id = e2ee::send_event(state, &matrix, user_id, &token, &out)
        .await
        .map_err(SendFailure::into_app_error)?;
    let (uid, txn, ev) = (user_id.to_owned(), txn_id.to_owned(), event_id.clone());
    state
        .db(move |c| Ok(sent_transactions::set_event_id(c, &uid, &txn, &ev)?))
        .await?;
    Ok(sent(event_id, duplicate))
}

/// One room of a multi-send.
#[derive(Debug)]
pub struct MultiSendItem {
    pub room_id: String,
    pub result: AppResult<String>,
}

/// `POST /api/messages/send-multi`: `body` to each room (duplicates removed, first
/// occurrence kept), at most [`MULTI_SEND_CONCURRENCY`] at once. Per-room failures are
/// results, not errors; only invalid input is an error.
pub async fn send_multi(
    state: &Context,
    user_id: &str,
    room_ids: &[String],
    body: &str,
    msgtype: Option<&str>,
) -> AppResult<Vec<MultiSendItem>> {
    if room_ids.is_empty() || room_ids.len() > MAX_MULTI_ROOMS {
        return Err(AppError::invalid(
            "roomIds",
            format!("must hold 1 to {MAX_MULTI_ROOMS} room ids"),
        ));
    }
    let mut unique = Vec::with_capacity(room_ids.len());
    for (i, r) in room_ids.iter().enumerate() {
        let room = parse_room_id(&format!("roomIds[{i}]"), r)?;
        if !unique.contains(&room) {
            unique.push(room);
        }
    }
    validate_text("body", body)?;
    let msgtype = msgtype.map(str::trim).unwrap_or("m.text");
    if !TEXT_MSGTYPES.contains(&msgtype) {
        return Err(AppError::invalid(
            "msgtype",
            format!("must be one of {}", TEXT_MSGTYPES.join(", ")),
        ));
    }
    let (uid, wanted, st) = (user_id.to_owned(), unique.clone(), state.clone());
    let (token, known, joined) = state
        .db(move |c| {
            let user = load_user(c, &uid)?;
            let token = match st.matrix {
                Some(_) => matrix_token(&st, &user),
                None => Err(no_homeserver()),
            };
            let (mut known, mut joined) = (HashSet::new(), HashSet::new());
            for room in &wanted {
                if let Some(r) = rooms::find(c, &uid, room)? {
                    if r.membership == "join" {
                        joined.insert(room.clone());
                    }
                    known.insert(room.clone());
                }
            }
            Ok((token, known, joined))
        })
        .await?;
    let content = text_content(msgtype, body);
    let batch = uuid::Uuid::new_v4().simple().to_string();
    let (token, content, known, joined, batch) = (&token, &content, &known, &joined, &batch);
    let items = stream::iter(unique.into_iter().enumerate())
        .map(|(i, room_id)| async move {
            let result = match (token, state.matrix.as_ref()) {
                _ if !known.contains(&room_id) => Err(room_not_found()),
                _ if !joined.contains(&room_id) => Err(not_joined()),
                (Err(e), _) => Err(clone_error(e)),
                (Ok(_), None) => Err(no_homeserver()),
                (Ok(token), Some(matrix)) => {
                    let out = Outgoing {
                        room_id: &room_id,
                        txn_id: &format!("sb-multi.{batch}.{i}"),
                        event_type: "m.room.message",
                        content,
                    };
                    e2ee::send_event(state, matrix, user_id, token, &out)
                        .await
                        .map_err(SendFailure::into_app_error)
                }
            };
            MultiSendItem { room_id, result }
        })
        .buffered(MULTI_SEND_CONCURRENCY)
        .collect()
        .await;
    Ok(items)
}

/// The same error again (for reporting one cause on several rooms).
fn clone_error(e: &AppError) -> AppError {
    match e {
        AppError::Conflict { code, message } => AppError::conflict(*code, message.clone()),
        AppError::Unavailable {
            code,
            message,
            retry_after_secs,
        } => AppError::Unavailable {
            code: *code,
            message: message.clone(),
            retry_after_secs: *retry_after_secs,
        },
        other => AppError::internal(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_ids_and_texts_are_validated() {
        assert!(validate_txn_id("abc-1.2_3~").is_ok());
        assert!(validate_txn_id(&"a".repeat(255)).is_ok());
        for bad in ["", "has space", "slash/", "ü", &"a".repeat(256)] {
            assert!(validate_txn_id(bad).is_err(), "{bad}");
        }
        assert!(validate_text("content", "hi").is_ok());
        assert!(validate_text("content", &"é".repeat(MAX_TEXT_CHARS)).is_ok());
        assert!(validate_text("content", &"a".repeat(MAX_TEXT_CHARS + 1)).is_err());
        assert!(validate_text("content", "").is_err());
        assert!(validate_text("content", " \n ").is_err());
    }
}
