//! Message history, deletion, statistics and sending: `/api/messages*` and
//! `POST /api/rooms/{roomId}/messages`.
//!
//! - History is one index range scan (`messages_room_ts`, order `ts DESC, event_id ASC`)
//!   per page; only the page is opened, and everything runs in one blocking store job.
//! - Native callers get each message's content sealed to their registered X25519 key
//!   ([`crypto::seal_to`], DESIGN §8 Seal) as the JSON `{"body", "content"}`; personal
//!   tokens get readable text and an opaque cursor.
//! - Rows whose content can no longer be opened (sealed under a data key destroyed by
//!   `DELETE /api/keys`) are left out of pages: that content is gone for good.
//! - Direction: a message is `outgoing` when its sender is the user's Matrix ID or the
//!   Matrix ID of any account of the user's account group (the user's linked identities);
//!   `isMine` is the user's own Matrix ID only.

use std::collections::{BTreeSet, HashSet};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::stream::{self, StreamExt};
use rusqlite::{Connection, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::conversations::{self, MessageContent};
use super::keys::validate_public_key;
use super::session::Principal;
use super::users;
use crate::crypto::{self, Envelope};
use crate::error::{AppError, AppResult};
use crate::events::kind;
use crate::matrix::MatrixError;
use crate::ratelimit::unix_now;
use crate::state::AppState;
use crate::store::messages::{self as stored, MessageRow, MessageStats, PageStart};
use crate::store::sent_transactions::{self, SentTransaction};
use crate::store::users::UserRow;
use crate::store::{rooms, user_keys};

/// Page size when `limit` is absent; `limit` must be 1 to [`MAX_LIMIT`].
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;
/// The exact value `X-Confirm-Delete` must carry.
pub const DELETE_CONFIRMATION: &str = "DELETE_MESSAGES";
/// Messages with at least this importance count as high importance in the statistics.
pub const HIGH_IMPORTANCE: f64 = 0.7;
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
const MAX_ROOM_ID_CHARS: usize = 255;
const MAX_CURSOR_CHARS: usize = 2048;

/// The query of `GET /api/messages`, as received.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    pub room_id: Option<String>,
    pub before: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<i64>,
}

/// A native message: visible metadata and the sealed content.
#[derive(Debug, Clone)]
pub struct SealedMessage {
    /// The stored row (its `content_enc` emptied).
    pub row: MessageRow,
    pub platform: Option<String>,
    pub is_mine: bool,
    pub envelope: Envelope,
}

/// A personal-token message: readable text.
#[derive(Debug, Clone)]
pub struct ReadableMessage {
    pub event_id: String,
    pub room_id: String,
    pub sender_id: String,
    /// Empty for redacted messages.
    pub text: String,
    pub content: Value,
    pub outgoing: bool,
    pub is_mine: bool,
    pub timestamp: i64,
}

#[derive(Debug, Clone)]
pub enum History {
    Encrypted(Vec<SealedMessage>),
    Readable {
        messages: Vec<ReadableMessage>,
        next_cursor: Option<String>,
    },
}

pub fn parse_limit(limit: Option<i64>) -> AppResult<i64> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(AppError::invalid(
            "limit",
            format!("must be an integer from 1 to {MAX_LIMIT}"),
        )),
    }
}

/// `before`: milliseconds since the Unix epoch, or an RFC 3339 date-time.
pub fn parse_before(before: Option<&str>) -> AppResult<Option<i64>> {
    let Some(raw) = before.map(str::trim) else {
        return Ok(None);
    };
    let bad = || {
        AppError::invalid(
            "before",
            "must be a timestamp in milliseconds or an RFC 3339 date-time",
        )
    };
    if let Ok(ms) = raw.parse::<i64>() {
        return if ms >= 0 { Ok(Some(ms)) } else { Err(bad()) };
    }
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| Some(t.timestamp_millis()))
        .map_err(|_| bad())
}

fn parse_room_id(field: &str, room_id: &str) -> AppResult<String> {
    let trimmed = room_id.trim();
    let n = trimmed.chars().count();
    if n == 0 || n > MAX_ROOM_ID_CHARS {
        return Err(AppError::invalid(
            field,
            format!("must be a room id of 1 to {MAX_ROOM_ID_CHARS} characters"),
        ));
    }
    Ok(trimmed.to_owned())
}

fn parse_optional_room_id(room_id: Option<&str>) -> AppResult<Option<String>> {
    room_id.map(|r| parse_room_id("roomId", r)).transpose()
}

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

/// Position in a personal-token listing; sent to the client as base64url JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    v: u8,
    /// Issued for a listing of one room (`roomId` given) rather than the walk over all.
    one: bool,
    /// The room the next page is read from.
    r: String,
    /// The last row returned (absent: start at the room's newest message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
}

impl Cursor {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(raw: &str) -> AppResult<Self> {
        let bad = || AppError::invalid("cursor", "not a cursor this service issued");
        if raw.len() > MAX_CURSOR_CHARS {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw.trim()).map_err(|_| bad())?;
        let c: Self = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if c.v != 1 || c.r.is_empty() || c.t.is_some() != c.e.is_some() {
            return Err(bad());
        }
        Ok(c)
    }

    fn start(&self) -> PageStart {
        match (self.t, &self.e) {
            (Some(t), Some(e)) => PageStart::after(t, e),
            _ => PageStart::newest(),
        }
    }
}

fn load_user(c: &Connection, user_id: &str) -> AppResult<UserRow> {
    crate::store::users::find(c, user_id)?.ok_or_else(|| AppError::not_found("user"))
}

fn room_not_found() -> AppError {
    AppError::not_found("room")
}

/// `GET /api/messages`: the encrypted view for native sessions, the readable one for
/// personal tokens.
pub async fn history(
    state: &AppState,
    principal: &Principal,
    q: HistoryQuery,
) -> AppResult<History> {
    let limit = parse_limit(q.limit)?;
    let room_id = parse_optional_room_id(q.room_id.as_deref())?;
    let master = state.master.clone();
    let uid = principal.user_id().to_owned();
    if conversations::wants_readable(principal) {
        if q.before.is_some() {
            return Err(AppError::invalid(
                "before",
                "personal tokens page with `cursor` (from `nextCursor`), not `before`",
            ));
        }
        let cursor = q.cursor.as_deref().map(Cursor::decode).transpose()?;
        return state
            .store
            .run(move |c| {
                let user = load_user(c, &uid)?;
                conversations::require_readable(&user)?;
                let dek = users::data_key(&master, &user)?;
                readable_page(c, &user, &dek, room_id, cursor, limit)
            })
            .await;
    }
    if q.cursor.is_some() {
        return Err(AppError::invalid(
            "cursor",
            "native sessions page with `before` (a timestamp), not `cursor`",
        ));
    }
    let start = match parse_before(q.before.as_deref())? {
        Some(ms) => PageStart::before(ms),
        None => PageStart::newest(),
    };
    state
        .store
        .run(move |c| {
            let user = load_user(c, &uid)?;
            let key = user_keys::find(c, &uid)?.ok_or_else(conversations::keys_not_registered)?;
            let recipient = validate_public_key(&key.public_key)
                .map_err(|_| AppError::internal("stored public key is malformed"))?;
            let rows = match room_id {
                Some(room_id) => {
                    let platform =
                        stored::room_platform(c, &uid, &room_id)?.ok_or_else(room_not_found)?;
                    stored::room_page(c, &uid, &room_id, &start, limit)?
                        .into_iter()
                        .map(|m| (m, platform.clone()))
                        .collect()
                }
                None => stored::user_page(c, &uid, &start, limit)?,
            };
            let dek = users::data_key(&master, &user)?;
            seal_page(&user, &dek, &recipient, rows)
        })
        .await
}

/// Opens a stored message: `None` when its content is unreadable (shredded data key).
fn open(dek: &crypto::DataKey, row: &MessageRow) -> Option<MessageContent> {
    match conversations::open_message(dek, &row.id, &row.content_enc) {
        Ok(mut content) => {
            if row.redacted {
                content.body.clear();
            }
            Some(content)
        }
        Err(e) => {
            tracing::debug!(message_id = %row.id, error = %e, "message content unreadable; left out");
            None
        }
    }
}

fn is_mine(user: &UserRow, row: &MessageRow) -> bool {
    row.is_mine || user.matrix_user_id.as_deref() == Some(row.sender_id.as_str())
}

fn seal_page(
    user: &UserRow,
    dek: &crypto::DataKey,
    recipient: &[u8; 32],
    rows: Vec<(MessageRow, Option<String>)>,
) -> AppResult<History> {
    let mut out = Vec::with_capacity(rows.len());
    for (mut row, platform) in rows {
        let Some(content) = open(dek, &row) else {
            continue;
        };
        let plaintext = serde_json::to_vec(&content).map_err(AppError::internal)?;
        let envelope = crypto::seal_to(recipient, &plaintext).map_err(|_| {
            AppError::conflict(
                "invalid_public_key",
                "the registered public key cannot be sealed to (a low-order X25519 point); \
                 replace it with PUT /api/keys",
            )
        })?;
        row.content_enc = Vec::new();
        out.push(SealedMessage {
            is_mine: is_mine(user, &row),
            row,
            platform,
            envelope,
        });
    }
    Ok(History::Encrypted(out))
}

/// One page of the readable listing. With `room_id`: that room, newest first. Without:
/// the user's rooms in room id order, each newest first, one room per page.
fn readable_page(
    c: &Connection,
    user: &UserRow,
    dek: &crypto::DataKey,
    room_id: Option<String>,
    cursor: Option<Cursor>,
    limit: i64,
) -> AppResult<History> {
    let uid = user.id.as_str();
    let one = room_id.is_some();
    if cursor
        .as_ref()
        .is_some_and(|cur| cur.one != one || (one && room_id.as_deref() != Some(&cur.r)))
    {
        return Err(AppError::invalid(
            "cursor",
            "was issued for other filters; keep roomId unchanged while paging",
        ));
    }
    let (room, start) = match (room_id, &cursor) {
        (Some(room), _) => {
            if stored::room_platform(c, uid, &room)?.is_none() {
                return Err(room_not_found());
            }
            (
                room,
                cursor
                    .as_ref()
                    .map_or_else(PageStart::newest, Cursor::start),
            )
        }
        (None, None) => match stored::room_from(c, uid, "", true)? {
            Some(first) => (first, PageStart::newest()),
            None => return Ok(readable(Vec::new(), None)),
        },
        (None, Some(cur)) => match stored::room_from(c, uid, &cur.r, true)? {
            // The cursor's room may have been removed meanwhile: continue with the next.
            Some(found) if found == cur.r => (found, cur.start()),
            Some(next) => (next, PageStart::newest()),
            None => return Ok(readable(Vec::new(), None)),
        },
    };
    let mut rows = stored::room_page(c, uid, &room, &start, limit + 1)?;
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next = match rows.last() {
        Some(last) if more => Some(Cursor {
            v: 1,
            one,
            r: room.clone(),
            t: Some(last.ts),
            e: Some(last.event_id.clone()),
        }),
        _ if one => None,
        _ => stored::room_from(c, uid, &room, false)?.map(|next| Cursor {
            v: 1,
            one,
            r: next,
            t: None,
            e: None,
        }),
    };
    let mut own: HashSet<String> = stored::group_matrix_ids(c, user.group_id())?
        .into_iter()
        .collect();
    own.extend(user.matrix_user_id.clone());
    let messages = rows
        .into_iter()
        .filter_map(|row| {
            let content = open(dek, &row)?;
            let is_mine = is_mine(user, &row);
            Some(ReadableMessage {
                outgoing: is_mine || own.contains(&row.sender_id),
                is_mine,
                text: content.body,
                content: content.content,
                timestamp: row.ts,
                event_id: row.event_id,
                room_id: row.room_id,
                sender_id: row.sender_id,
            })
        })
        .collect();
    Ok(readable(messages, next.map(|c| c.encode())))
}

fn readable(messages: Vec<ReadableMessage>, next_cursor: Option<String>) -> History {
    History::Readable {
        messages,
        next_cursor,
    }
}

/// What `DELETE /api/messages` removed, and the normalised criteria.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub count: usize,
    pub room_id: Option<String>,
    pub before_ms: Option<i64>,
}

/// `DELETE /api/messages`: the caller's stored messages, optionally of one room and/or
/// older than `before`. Needs `X-Confirm-Delete: DELETE_MESSAGES` (400
/// `confirmation_required`). Matrix is untouched.
pub async fn delete_matching(
    state: &AppState,
    user_id: &str,
    confirmation: Option<&str>,
    room_id: Option<&str>,
    before: Option<&str>,
) -> AppResult<Deleted> {
    if confirmation.map(str::trim) != Some(DELETE_CONFIRMATION) {
        return Err(AppError::bad_request(
            "confirmation_required",
            format!("send the header X-Confirm-Delete: {DELETE_CONFIRMATION} to delete messages"),
        ));
    }
    let room_id = parse_optional_room_id(room_id)?;
    let before_ms = parse_before(before)?;
    let uid = user_id.to_owned();
    let room = room_id.clone();
    let rooms: Vec<String> = state
        .store
        .run(move |c| {
            Ok::<_, AppError>(stored::delete_matching(
                c,
                &uid,
                room.as_deref(),
                before_ms,
            )?)
        })
        .await?;
    let count = rooms.len();
    for room in rooms.into_iter().collect::<BTreeSet<_>>() {
        state
            .events
            .publish(user_id, kind::ROOM_UPDATED, json!({ "roomId": room }));
    }
    Ok(Deleted {
        count,
        room_id,
        before_ms,
    })
}

/// `DELETE /api/messages/{messageId}`: 400 for a non-UUID id, 404 unless it is one of the
/// caller's messages. Returns the (normalised) id.
pub async fn delete_one(state: &AppState, user_id: &str, message_id: &str) -> AppResult<String> {
    let id = uuid::Uuid::parse_str(message_id.trim())
        .map_err(|_| AppError::invalid("messageId", "must be a UUID"))?
        .to_string();
    let uid = user_id.to_owned();
    let mid = id.clone();
    let room = state
        .store
        .run(move |c| Ok::<_, AppError>(stored::delete_one(c, &uid, &mid)?))
        .await?
        .ok_or_else(|| AppError::not_found("message"))?;
    state
        .events
        .publish(user_id, kind::ROOM_UPDATED, json!({ "roomId": room }));
    Ok(id)
}

/// `GET /api/messages/stats`: SQL aggregates over the caller's stored messages.
pub async fn stats(state: &AppState, user_id: &str) -> AppResult<MessageStats> {
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| Ok::<_, AppError>(stored::stats(c, &uid, HIGH_IMPORTANCE)?))
        .await
}

/// A homeserver failure as the API reports it: 503 when unreachable, 502 otherwise.
pub fn homeserver_error(e: MatrixError) -> AppError {
    match e {
        MatrixError::Unreachable(detail) => AppError::Unavailable {
            code: "homeserver_unavailable",
            message: format!("the Matrix homeserver is unreachable: {detail}"),
        },
        MatrixError::Http {
            status,
            errcode,
            message,
        } => AppError::BadGateway {
            code: "homeserver_error",
            message: format!(
                "the Matrix homeserver refused the message ({status} {errcode}): {message}"
            ),
        },
        MatrixError::Decode(detail) => AppError::BadGateway {
            code: "homeserver_error",
            message: format!("unexpected answer from the Matrix homeserver: {detail}"),
        },
    }
}

fn no_homeserver() -> AppError {
    AppError::Unavailable {
        code: "homeserver_unavailable",
        message: "no Matrix homeserver is configured on this server".into(),
    }
}

fn matrix_token(state: &AppState, user: &UserRow) -> AppResult<String> {
    users::matrix_token_of(&state.master, user)?.ok_or_else(|| {
        AppError::conflict(
            "matrix_account_missing",
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
    state: &AppState,
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
                        "txn_id_conflict",
                        "this txnId was already used for another room; use a new txnId per message",
                    ));
                }
                if let Some(event_id) = &t.event_id {
                    return Ok(Prepared::Done(event_id.clone()));
                }
            }
            let r = rooms::find(&tx, &uid, &room)?.ok_or_else(room_not_found)?;
            if r.is_direct && r.recipient_id.is_none() {
                return Err(AppError::conflict(
                    "recipient_unresolved",
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
    let event_id = matrix
        .send_event(
            &token,
            &room_id,
            "m.room.message",
            &format!("{MATRIX_TXN_PREFIX}{txn_id}"),
            &text_content("m.text", text),
        )
        .await
        .map_err(homeserver_error)?;
    let (uid, txn, ev) = (user_id.to_owned(), txn_id.to_owned(), event_id.clone());
    state
        .store
        .run(move |c| Ok::<_, AppError>(sent_transactions::set_event_id(c, &uid, &txn, &ev)?))
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
    state: &AppState,
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
    let (token, known) = state
        .store
        .run(move |c| {
            let user = load_user(c, &uid)?;
            let token = match st.matrix {
                Some(_) => matrix_token(&st, &user),
                None => Err(no_homeserver()),
            };
            let mut known = HashSet::new();
            for room in &wanted {
                if stored::room_platform(c, &uid, room)?.is_some() {
                    known.insert(room.clone());
                }
            }
            Ok::<_, AppError>((token, known))
        })
        .await?;
    let content = text_content(msgtype, body);
    let batch = uuid::Uuid::new_v4().simple().to_string();
    let (token, content, known, batch) = (&token, &content, &known, &batch);
    let items = stream::iter(unique.into_iter().enumerate())
        .map(|(i, room_id)| async move {
            let result = match (token, state.matrix.as_ref()) {
                _ if !known.contains(&room_id) => Err(room_not_found()),
                (Err(e), _) => Err(clone_error(e)),
                (Ok(_), None) => Err(no_homeserver()),
                (Ok(token), Some(matrix)) => matrix
                    .send_event(
                        token,
                        &room_id,
                        "m.room.message",
                        &format!("sb-multi.{batch}.{i}"),
                        content,
                    )
                    .await
                    .map_err(homeserver_error),
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
        AppError::Conflict { code, message } => AppError::conflict(code, message.clone()),
        AppError::Unavailable { code, message } => AppError::Unavailable {
            code,
            message: message.clone(),
        },
        other => AppError::internal(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_outside_1_to_100_are_refused_not_clamped() {
        assert_eq!(parse_limit(None).unwrap(), 50);
        assert_eq!(parse_limit(Some(1)).unwrap(), 1);
        assert_eq!(parse_limit(Some(100)).unwrap(), 100);
        for bad in [0, -1, 101] {
            assert_eq!(
                parse_limit(Some(bad)).unwrap_err().code(),
                "invalid_request"
            );
        }
    }

    #[test]
    fn before_accepts_milliseconds_and_rfc3339() {
        assert_eq!(parse_before(None).unwrap(), None);
        assert_eq!(
            parse_before(Some("1700000000123")).unwrap(),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_before(Some("2023-11-14T22:13:20.123Z")).unwrap(),
            Some(1_700_000_000_123)
        );
        for bad in ["", "yesterday", "-5", "2023-13-01T00:00:00Z"] {
            assert!(parse_before(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            v: 1,
            one: false,
            r: "!room:example.org".into(),
            t: Some(42),
            e: Some("$ev".into()),
        };
        let encoded = c.encode();
        assert!(!encoded.contains(':') && !encoded.contains('+') && !encoded.contains('/'));
        assert_eq!(Cursor::decode(&encoded).unwrap(), c);
        assert_eq!(
            Cursor::decode(&encoded).unwrap().start(),
            PageStart::after(42, "$ev")
        );
        let half = Cursor {
            t: None,
            ..c.clone()
        }
        .encode();
        for bad in ["", "1700000000000", "%%%", &half, &"A".repeat(5000)] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
    }

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
