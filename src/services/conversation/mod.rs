//! A conversation that feels alive and agrees with the user's other Matrix clients:
//! typing notices both ways, other members' read receipts, the privacy settings of what
//! the user's own reading and typing tell the other side, the marked-unread mark, the
//! room flags mirrored to the homeserver ([`mirror`]) and drafts ([`drafts`]).
//!
//! What comes *from* the homeserver (others typing, their receipts, flags another client
//! changed) is read by the sync worker (`workers::sync::conversation`); this module is
//! what the user does.

use rusqlite::Connection;

use self::local_writes::SharedFlag;
use super::params::validate_room_id;
use super::session::Principal;
use super::users;
use super::users::matrix_token;
use super::Context;
use crate::clients::matrix::MatrixClient;
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::upstream::homeserver_error;
use crate::store::conversation::{self, PresenceSettings, ReceiptRow};
use crate::store::rooms::{self, RoomRow};

pub mod drafts;
pub mod local_writes;
pub mod mirror;

/// Typing notice timeout when the client gives none, and the longest accepted (ms).
pub const DEFAULT_TYPING_TIMEOUT_MS: i64 = 30_000;
pub const MAX_TYPING_TIMEOUT_MS: i64 = 120_000;
pub const MIN_TYPING_TIMEOUT_MS: i64 = 1_000;

/// A visible (joined or invited) room of the user; 404 `not_found` otherwise.
pub(crate) fn find_visible(conn: &Connection, user_id: &str, room_id: &str) -> AppResult<RoomRow> {
    rooms::find(conn, user_id, room_id)?
        .filter(|r| r.membership != "leave")
        .ok_or_else(|| AppError::not_found("room"))
}

async fn visible_room(state: &Context, user_id: &str, room_id: &str) -> AppResult<RoomRow> {
    let room_id = validate_room_id(room_id)?;
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| find_visible(c, &uid, &room_id))
        .await
}

/// The homeserver client, the user's Matrix ID and access token.
pub(crate) struct Acting {
    pub matrix: MatrixClient,
    pub mxid: String,
    pub token: String,
}

pub(crate) async fn acting(state: &Context, user_id: &str) -> AppResult<Acting> {
    let matrix = state.matrix.clone().ok_or_else(|| AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    })?;
    let user = users::load(state, user_id).await?;
    let token = matrix_token(state, &user)?;
    let mxid = user.matrix_user_id.clone().ok_or_else(|| {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    })?;
    Ok(Acting {
        matrix,
        mxid,
        token,
    })
}

/// What `PUT …/typing` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypingOutcome {
    Sent,
    /// The user turned typing notices off: nothing was sent.
    Off,
}

/// `PUT /api/rooms/{roomId}/typing`: tells the room the user is typing (for `timeout_ms`,
/// default [`DEFAULT_TYPING_TIMEOUT_MS`]) or stopped; nothing when the user turned typing
/// notices off. Joined rooms only (409 `not_joined`).
pub async fn set_typing(
    state: &Context,
    principal: &Principal,
    room_id: &str,
    typing: bool,
    timeout_ms: Option<i64>,
) -> AppResult<TypingOutcome> {
    let timeout = timeout_ms.unwrap_or(DEFAULT_TYPING_TIMEOUT_MS);
    if !(MIN_TYPING_TIMEOUT_MS..=MAX_TYPING_TIMEOUT_MS).contains(&timeout) {
        return Err(AppError::invalid(
            "timeoutMs",
            format!("must be {MIN_TYPING_TIMEOUT_MS} to {MAX_TYPING_TIMEOUT_MS} milliseconds"),
        ));
    }
    let user_id = principal.user_id();
    let room = visible_room(state, user_id, room_id).await?;
    if room.membership != "join" {
        return Err(AppError::conflict(
            ErrorCode::NotJoined,
            "the user has not joined this room (an invitation not accepted yet): typing \
             notices would tell the inviter the user is reading",
        ));
    }
    if !presence_settings(state, user_id).await?.typing {
        return Ok(TypingOutcome::Off);
    }
    let a = acting(state, user_id).await?;
    a.matrix
        .set_typing(&a.token, &a.mxid, &room.room_id, typing, timeout as u64)
        .await
        .map_err(homeserver_error)?;
    Ok(TypingOutcome::Sent)
}

/// `GET /api/rooms/{roomId}/receipts`: the other members' latest public read receipts.
pub async fn receipts(
    state: &Context,
    principal: &Principal,
    room_id: &str,
) -> AppResult<Vec<ReceiptRow>> {
    let room = visible_room(state, principal.user_id(), room_id).await?;
    let uid = principal.user_id().to_owned();
    Ok(state
        .store
        .query(move |c| conversation::receipts(c, &uid, &room.room_id))
        .await?)
}

/// `POST /api/rooms/{roomId}/unread`: marks the room unread here and as `m.marked_unread`
/// room account data on the homeserver (best effort: the mark stays here when the
/// homeserver cannot be told; returns whether it was). Reading the room clears it.
pub async fn mark_unread(state: &Context, principal: &Principal, room_id: &str) -> AppResult<bool> {
    let user_id = principal.user_id();
    let room = visible_room(state, user_id, room_id).await?;
    let (uid, rid) = (user_id.to_owned(), room.room_id.clone());
    let _writing = state
        .local_writes
        .begin(user_id, &room.room_id, SharedFlag::MarkedUnread);
    state
        .db(move |c| Ok(conversation::set_marked_unread(c, &uid, &rid, true)?))
        .await?;
    state.events.publish(
        user_id,
        ChangeEvent::RoomUpdated {
            room_id: room.room_id.clone(),
        },
    );
    Ok(mirror::marked_unread(state, user_id, &room.room_id, true).await)
}

/// Clears the marked-unread mark of a room that was just read (here and on the homeserver
/// when it was set); no-op otherwise.
pub async fn clear_marked_unread(state: &Context, user_id: &str, room_id: &str) -> AppResult<()> {
    let (uid, rid) = (user_id.to_owned(), room_id.to_owned());
    // A sync response begun before this clear may still carry the mark (e.g. the echo of
    // setting it); it must not bring the mark back.
    let _writing = state
        .local_writes
        .begin(user_id, room_id, SharedFlag::MarkedUnread);
    let was = state
        .db(move |c| Ok(conversation::set_marked_unread(c, &uid, &rid, false)?))
        .await?;
    if was {
        mirror::marked_unread(state, user_id, room_id, false).await;
    }
    Ok(())
}

/// The user's privacy settings (defaults: public receipts, typing notices on).
pub async fn presence_settings(state: &Context, user_id: &str) -> AppResult<PresenceSettings> {
    let uid = user_id.to_owned();
    Ok(state
        .store
        .query(move |c| conversation::presence_settings(c, &uid))
        .await?)
}

/// `PUT /api/settings/presence`: replaces the fields given; returns the settings now.
pub async fn update_presence_settings(
    state: &Context,
    user_id: &str,
    read_receipts: Option<&str>,
    typing: Option<bool>,
) -> AppResult<PresenceSettings> {
    let private = match read_receipts {
        None => None,
        Some("public") => Some(false),
        Some("private") => Some(true),
        Some(_) => {
            return Err(AppError::invalid(
                "readReceipts",
                "must be \"public\" or \"private\"",
            ))
        }
    };
    let uid = user_id.to_owned();
    state
        .db(move |c| {
            let mut s = conversation::presence_settings(c, &uid)?;
            if let Some(p) = private {
                s.private_receipts = p;
            }
            if let Some(t) = typing {
                s.typing = t;
            }
            conversation::set_presence_settings(c, &uid, s, unix_now() as i64)?;
            Ok(s)
        })
        .await
}
