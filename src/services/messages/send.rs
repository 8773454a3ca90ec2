//! Sending: approved text to one room (`POST /api/rooms/{roomId}/messages`, idempotent per
//! client `txnId` through `sent_transactions` and the homeserver's own transaction ids) and
//! one text to several rooms (`POST /api/messages/send-multi`, in [`super::multi`]).

use rusqlite::TransactionBehavior;
use serde_json::{json, Value};

mod target;

use self::target::check_target;
pub use self::target::{parse_event_id, Target, TargetRule};
use super::{parse_room_id, room_not_found};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::e2ee::{self, Outgoing, SendFailure};
use crate::services::users::load_row;

use crate::services::upstream::homeserver_error;
use crate::services::Context;
use crate::store::rooms;
use crate::store::sent_transactions::{self, SentTransaction};

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
pub(super) fn not_joined() -> AppError {
    AppError::conflict(
        ErrorCode::NotJoined,
        "the user has not joined this room (an invitation not accepted yet, or a room left): \
         accept the invitation in the native app first",
    )
}

pub(super) fn no_homeserver() -> AppError {
    AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    }
}

pub(crate) use crate::services::users::matrix_token;

pub(super) fn text_content(msgtype: &str, body: &str) -> Value {
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

/// What goes to the homeserver.
#[derive(Debug, Clone)]
pub enum Action {
    /// `PUT /rooms/{roomId}/send/{type}/{txnId}` (encrypted in an encrypted room).
    Send {
        event_type: &'static str,
        content: Value,
    },
    /// `PUT /rooms/{roomId}/redact/{eventId}/{txnId}` (redactions are never encrypted in
    /// Matrix: the homeserver must be able to apply them).
    Redact { event_id: String },
}

/// One outgoing action, idempotent per (user, `txn_id`).
#[derive(Debug, Clone)]
pub struct Outbound {
    pub room_id: String,
    /// The client's transaction id (validated by the caller).
    pub txn_id: String,
    pub action: Action,
    pub target: Option<Target>,
}

/// `POST /api/rooms/{roomId}/messages`: sends `text` as `m.text` (a reply when `reply_to`
/// names a message of the room), once per (user, `txnId`).
pub async fn send_to_room(
    state: &Context,
    user_id: &str,
    room_id: &str,
    text: &str,
    txn_id: &str,
    reply_to: Option<&str>,
) -> AppResult<Sent> {
    let room_id = parse_room_id("roomId", room_id)?;
    validate_text("content", text)?;
    validate_txn_id(txn_id)?;
    let mut content = text_content("m.text", text);
    let target = match reply_to {
        Some(reply) => {
            let event_id = parse_event_id("replyTo", reply)?;
            content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": event_id}});
            Some(Target {
                field: "replyTo",
                event_id,
                rule: TargetRule::ReplyIn,
            })
        }
        None => None,
    };
    let out = Outbound {
        room_id,
        txn_id: txn_id.to_owned(),
        action: Action::Send {
            event_type: "m.room.message",
            content,
        },
        target,
    };
    send_once(state, user_id, out).await
}

/// The checks of a send, in the caller's transaction: the `txnId` (a repeat is `Done`),
/// the room (joined, recipient known), the target; with `record`, the transaction is
/// recorded as in flight.
fn prepare(
    tx: &rusqlite::Connection,
    st: &Context,
    uid: &str,
    room: &str,
    txn: &str,
    target: Option<&Target>,
    record: bool,
) -> AppResult<Prepared> {
    let user = load_row(tx, uid)?;
    let earlier = sent_transactions::find(tx, uid, txn)?;
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
    let r = rooms::find(tx, uid, room)?.ok_or_else(room_not_found)?;
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
    if let Some(target) = target {
        check_target(tx, &user, room, target)?;
    }
    let token = matrix_token(st, &user)?;
    if earlier.is_none() && record {
        sent_transactions::insert_if_new(
            tx,
            &SentTransaction {
                user_id: uid.to_owned(),
                txn_id: txn.to_owned(),
                room_id: room.to_owned(),
                event_id: None,
                created_at: unix_now() as i64,
            },
        )?;
    }
    Ok(Prepared::Send {
        token,
        duplicate: earlier.is_some(),
    })
}

/// The checks of [`send_once`] without recording anything (before work that should not
/// be done for a repeat, such as an upload): `Ok(Ok(sent))` for a `txnId` sent already,
/// `Ok(Err(token))` (the caller's Matrix token) when it is to be sent.
pub async fn precheck(
    state: &Context,
    user_id: &str,
    out: &Outbound,
) -> AppResult<Result<Sent, String>> {
    let (uid, room, txn, st, target) = (
        user_id.to_owned(),
        out.room_id.clone(),
        out.txn_id.clone(),
        state.clone(),
        out.target.clone(),
    );
    let prepared = state
        .db(move |c| prepare(c, &st, &uid, &room, &txn, target.as_ref(), false))
        .await?;
    Ok(match prepared {
        Prepared::Done(event_id) => Ok(Sent {
            event_id,
            room_id: out.room_id.clone(),
            txn_id: out.txn_id.clone(),
            duplicate: true,
        }),
        Prepared::Send { token, .. } => Err(token),
    })
}

/// Sends one action once per (user, `txn_id`): recorded in `sent_transactions` before the
/// homeserver is asked, completed with the event id after; a repeat returns the first
/// event (`duplicate`). The homeserver deduplicates its own transaction ids as well.
pub async fn send_once(state: &Context, user_id: &str, out: Outbound) -> AppResult<Sent> {
    let matrix = state.matrix.clone().ok_or_else(no_homeserver)?;
    let (uid, room, txn, st, target) = (
        user_id.to_owned(),
        out.room_id.clone(),
        out.txn_id.clone(),
        state.clone(),
        out.target.clone(),
    );
    let prepared = state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let prepared = prepare(&tx, &st, &uid, &room, &txn, target.as_ref(), true)?;
            tx.commit()?;
            Ok::<_, AppError>(prepared)
        })
        .await?;
    let sent = |event_id, duplicate| Sent {
        event_id,
        room_id: out.room_id.clone(),
        txn_id: out.txn_id.clone(),
        duplicate,
    };
    let (token, duplicate) = match prepared {
        Prepared::Done(event_id) => return Ok(sent(event_id, true)),
        Prepared::Send { token, duplicate } => (token, duplicate),
    };
    let matrix_txn = format!("{MATRIX_TXN_PREFIX}{}", out.txn_id);
    let event_id = match &out.action {
        Action::Send {
            event_type,
            content,
        } => {
            let o = Outgoing {
                room_id: &out.room_id,
                txn_id: &matrix_txn,
                event_type,
                content,
            };
            e2ee::send_event(state, &matrix, user_id, &token, &o)
                .await
                .map_err(SendFailure::into_app_error)?
        }
        Action::Redact { event_id } => matrix
            .redact(&token, &out.room_id, event_id, &matrix_txn)
            .await
            .map_err(homeserver_error)?,
    };
    let (uid, txn, ev) = (user_id.to_owned(), out.txn_id.clone(), event_id.clone());
    state
        .db(move |c| Ok(sent_transactions::set_event_id(c, &uid, &txn, &ev)?))
        .await?;
    if is_new_message(&out.action) {
        // What the draft was for has been sent (an edit or a reaction is not that).
        crate::services::conversation::drafts::discard(state, user_id, &out.room_id).await?;
    }
    Ok(sent(event_id, duplicate))
}

/// A new message of the user (text or media), not an edit, reaction or redaction.
fn is_new_message(action: &Action) -> bool {
    match action {
        Action::Send {
            event_type,
            content,
        } => {
            *event_type == "m.room.message"
                && content["m.relates_to"]["rel_type"].as_str() != Some("m.replace")
        }
        Action::Redact { .. } => false,
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
