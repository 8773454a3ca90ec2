//! The stored message an action names (`replyTo`, a reaction's, edit's or deletion's
//! target): its event id checked, and what it must be for the action.

use super::TEXT_MSGTYPES;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::store::users::UserRow;

/// What a stored message must be for an action naming it (`replyTo`, a reaction's,
/// edit's or deletion's target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetRule {
    /// A message of the room; otherwise 400 naming the field (a reply).
    ReplyIn,
    /// A message of the room; otherwise 404.
    InRoom,
    /// The caller's own text message (edits): others' are 403 `not_own_message`.
    OwnText,
    /// The caller's own message (deletion for everyone).
    Own,
}

/// The stored message an action names.
#[derive(Debug, Clone)]
pub struct Target {
    pub field: &'static str,
    pub event_id: String,
    pub rule: TargetRule,
}

/// Longest event id accepted, in bytes (the Matrix limit).
const MAX_EVENT_ID_BYTES: usize = 255;

/// An event id: `$` and at most 255 bytes.
pub fn parse_event_id(field: &str, event_id: &str) -> AppResult<String> {
    let e = event_id.trim();
    if !e.starts_with('$') || e.len() < 2 || e.len() > MAX_EVENT_ID_BYTES {
        return Err(AppError::invalid(
            field,
            format!("must be a Matrix event id ($…, at most {MAX_EVENT_ID_BYTES} bytes)"),
        ));
    }
    Ok(e.to_owned())
}

/// Checks `target` against the stored messages of `room` (see [`TargetRule`]).
pub(super) fn check_target(
    c: &rusqlite::Connection,
    user: &UserRow,
    room: &str,
    target: &Target,
) -> AppResult<()> {
    let found = crate::store::messages::find_by_event(c, &user.id, &target.event_id)?
        .filter(|m| m.room_id == room);
    let Some(m) = found else {
        return Err(match target.rule {
            TargetRule::ReplyIn => AppError::invalid(target.field, "is not a message of this room"),
            _ => AppError::not_found("message"),
        });
    };
    let own = m.is_mine || user.matrix_user_id.as_deref() == Some(m.sender_id.as_str());
    match target.rule {
        TargetRule::ReplyIn | TargetRule::InRoom => Ok(()),
        TargetRule::OwnText | TargetRule::Own if !own => Err(AppError::forbidden(
            ErrorCode::NotOwnMessage,
            "only your own messages can be edited or deleted for everyone",
        )),
        TargetRule::OwnText if m.redacted => {
            Err(AppError::invalid(target.field, "the message was deleted"))
        }
        TargetRule::OwnText if !TEXT_MSGTYPES.contains(&m.msgtype.as_str()) => Err(
            AppError::invalid(target.field, "only text messages can be edited"),
        ),
        TargetRule::OwnText | TargetRule::Own => Ok(()),
    }
}
