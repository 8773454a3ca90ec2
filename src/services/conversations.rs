//! Conventions shared by everything that stores or reads conversations: how room and
//! message fields are sealed at rest, and which key state a caller needs.
//!
//! Associated data binds each sealed value to its row: rooms use the row key
//! `"{user_id}/{room_id}"`, messages their UUID.

use serde::{Deserialize, Serialize};

use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::session::Principal;
use crate::store::users::UserRow;

/// Room columns that are sealed.
#[derive(Debug, Clone, Copy)]
pub enum RoomField {
    Name,
    Avatar,
    Topic,
    /// The direct partner's display name.
    RecipientName,
}

impl RoomField {
    fn column(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Avatar => "avatar",
            Self::Topic => "topic",
            Self::RecipientName => "recipient_name",
        }
    }
}

fn room_row_key(user_id: &str, room_id: &str) -> String {
    format!("{user_id}/{room_id}")
}

pub fn seal_room_field(
    dek: &DataKey,
    user_id: &str,
    room_id: &str,
    field: RoomField,
    value: &str,
) -> Vec<u8> {
    let key = room_row_key(user_id, room_id);
    dek.seal_str(value, &Aad::new("rooms", field.column(), &key))
}

/// Opens a sealed room field; `None` when absent or unreadable (shredded key).
pub fn open_room_field(
    dek: &DataKey,
    user_id: &str,
    room_id: &str,
    field: RoomField,
    sealed: Option<&[u8]>,
) -> Option<String> {
    let key = room_row_key(user_id, room_id);
    dek.open_string(sealed?, &Aad::new("rooms", field.column(), &key))
        .ok()
}

/// What a stored message holds, sealed as one JSON value.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MessageContent {
    /// Readable text (`content.body`, the replacement text after an edit, empty once redacted).
    pub body: String,
    /// The Matrix event content as received (after edits: the new content).
    pub content: serde_json::Value,
}

pub fn seal_message(dek: &DataKey, message_id: &str, content: &MessageContent) -> Vec<u8> {
    let json = serde_json::to_vec(content).unwrap_or_default();
    dek.seal(&json, &Aad::new("messages", "content", message_id))
}

pub fn open_message(dek: &DataKey, message_id: &str, sealed: &[u8]) -> AppResult<MessageContent> {
    let json = dek.open(sealed, &Aad::new("messages", "content", message_id))?;
    serde_json::from_slice(&json).map_err(AppError::internal)
}

/// Seals a reaction's annotation key (AAD: reactions, key, "{user_id}/{event_id}").
pub fn seal_reaction_key(dek: &DataKey, user_id: &str, event_id: &str, key: &str) -> Vec<u8> {
    let row = format!("{user_id}/{event_id}");
    dek.seal_str(key, &Aad::new("reactions", "key", &row))
}

/// Opens a reaction key; `None` when unreadable (shredded key).
pub fn open_reaction_key(
    dek: &DataKey,
    user_id: &str,
    event_id: &str,
    sealed: &[u8],
) -> Option<String> {
    let row = format!("{user_id}/{event_id}");
    dek.open_string(sealed, &Aad::new("reactions", "key", &row))
        .ok()
}

/// Readable routes (room names, message text) are refused after the user deleted their
/// keys, until new keys are registered: 409 `NO_SIGNING_KEY` (docs/design.md).
pub fn require_readable(user: &UserRow) -> AppResult<()> {
    if user.keys_shredded {
        return Err(AppError::Conflict {
            code: ErrorCode::NoSigningKey,
            message: "the account key was deleted; sign in again in the native app to restore it"
                .into(),
        });
    }
    Ok(())
}

/// Native encrypted routes need a registered X25519 key: 409 `keys_not_registered`.
pub fn keys_not_registered() -> AppError {
    AppError::conflict(
        ErrorCode::KeysNotRegistered,
        "register an X25519 public key (POST /api/keys/register) before using encrypted routes",
    )
}

/// Whether the caller gets readable (personal token) or encrypted (native) shapes.
pub fn wants_readable(principal: &Principal) -> bool {
    principal.is_api_token()
}
