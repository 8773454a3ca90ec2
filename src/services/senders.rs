//! Who said what: the sender's display name and avatar on every message object, and the
//! `lastMessage` of room objects (docs/names.md).
//!
//! Names come from stored member state, never from a homeserver request on the read path:
//! the sync worker keeps each room member's profile (`m.room.member` `displayname` and
//! `avatar_url`) in `member_profiles`, and seals the sender's profile of that moment into
//! each message row it stores (`messages.sender_enc`). A later rename is a new state event:
//! it changes the member's stored profile, not the messages already stored, so older
//! messages keep the name they were sent with. A message stored before profiles were kept
//! (or whose sender's member event was never seen) shows the member's stored profile, and
//! without one the localpart of the Matrix ID.

use std::collections::HashMap;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::crypto::{Aad, DataKey};
use crate::store::member_profiles;
use crate::store::messages::MessageRow;

/// A member's profile in one room, as sealed at rest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// `displayname` of the member event (trimmed; `None` when absent or empty).
    pub name: Option<String>,
    /// `avatar_url` of the member event (an `mxc://` URI).
    pub avatar: Option<String>,
}

/// A string field of a state event's content, trimmed; `None` when absent, not a string or
/// blank (a name or topic of only spaces is no name).
pub fn text_field(content: &serde_json::Value, key: &str) -> Option<String> {
    content[key]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl Profile {
    /// The profile a `join` member event announces.
    pub fn from_member_content(content: &serde_json::Value) -> Self {
        let text = |key: &str| text_field(content, key);
        Self {
            name: text("displayname"),
            avatar: text("avatar_url").filter(|u| u.starts_with("mxc://")),
        }
    }
}

fn member_key(user_id: &str, room_id: &str, member_id: &str) -> String {
    format!("{user_id}/{room_id}/{member_id}")
}

pub fn seal_member_profile(
    dek: &DataKey,
    user_id: &str,
    room_id: &str,
    member_id: &str,
    profile: &Profile,
) -> Vec<u8> {
    let json = serde_json::to_vec(profile).unwrap_or_default();
    let key = member_key(user_id, room_id, member_id);
    dek.seal(&json, &Aad::new("member_profiles", "profile", &key))
}

/// The member's stored profile; `None` when none is stored or it cannot be opened.
pub fn member_profile(
    conn: &Connection,
    dek: &DataKey,
    user_id: &str,
    room_id: &str,
    member_id: &str,
) -> rusqlite::Result<Option<Profile>> {
    let Some(sealed) = member_profiles::find(conn, user_id, room_id, member_id)? else {
        return Ok(None);
    };
    let key = member_key(user_id, room_id, member_id);
    Ok(dek
        .open(&sealed, &Aad::new("member_profiles", "profile", &key))
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok()))
}

/// Seals the sender's profile into a message row (AAD: messages, sender, id).
pub fn seal_sender(dek: &DataKey, message_id: &str, profile: &Profile) -> Vec<u8> {
    let json = serde_json::to_vec(profile).unwrap_or_default();
    dek.seal(&json, &Aad::new("messages", "sender", message_id))
}

fn open_sender(dek: &DataKey, row: &MessageRow) -> Option<Profile> {
    let json = dek
        .open(
            row.sender_enc.as_deref()?,
            &Aad::new("messages", "sender", &row.id),
        )
        .ok()?;
    serde_json::from_slice(&json).ok()
}

/// The localpart of a Matrix ID (`@anna:example.org` → `anna`), the name of last resort.
pub fn localpart(matrix_id: &str) -> &str {
    let id = matrix_id.strip_prefix('@').unwrap_or(matrix_id);
    id.split(':').next().filter(|s| !s.is_empty()).unwrap_or(id)
}

/// `senderAvatarUrl`: the member avatar route of Switchboard (path segments URL-encoded).
pub fn avatar_path(room_id: &str, member_id: &str) -> String {
    use crate::clients::matrix::encode;
    format!(
        "/api/rooms/{}/members/{}/avatar",
        encode(room_id),
        encode(member_id)
    )
}

/// `senderName` and `senderAvatarUrl` of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    pub name: String,
    pub avatar_url: Option<String>,
}

/// Resolves the senders of one page of messages: each row's sealed profile, else the
/// member's stored profile (looked up once per room and sender of the page), else the
/// localpart.
pub struct Senders<'a> {
    conn: &'a Connection,
    dek: &'a DataKey,
    user_id: &'a str,
    stored: HashMap<(String, String), Option<Profile>>,
}

impl<'a> Senders<'a> {
    pub fn new(conn: &'a Connection, dek: &'a DataKey, user_id: &'a str) -> Self {
        Self {
            conn,
            dek,
            user_id,
            stored: HashMap::new(),
        }
    }

    /// The sender of `row` (whose `room_id` must be set).
    pub fn of(&mut self, row: &MessageRow) -> rusqlite::Result<Sender> {
        let profile = match open_sender(self.dek, row) {
            Some(p) => Some(p),
            None => {
                let key = (row.room_id.clone(), row.sender_id.clone());
                match self.stored.get(&key) {
                    Some(p) => p.clone(),
                    None => {
                        let p = member_profile(
                            self.conn,
                            self.dek,
                            self.user_id,
                            &row.room_id,
                            &row.sender_id,
                        )?;
                        self.stored.insert(key, p.clone());
                        p
                    }
                }
            }
        };
        let profile = profile.unwrap_or_default();
        Ok(Sender {
            name: profile
                .name
                .unwrap_or_else(|| localpart(&row.sender_id).to_owned()),
            avatar_url: profile
                .avatar
                .map(|_| avatar_path(&row.room_id, &row.sender_id)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fall_back_to_the_localpart() {
        assert_eq!(localpart("@anna:example.org"), "anna");
        assert_eq!(localpart("@whatsapp_49151:x"), "whatsapp_49151");
        assert_eq!(localpart("weird"), "weird");
    }

    #[test]
    fn profiles_come_from_join_content_and_only_mxc_avatars_count() {
        let p = Profile::from_member_content(&serde_json::json!({
            "membership": "join", "displayname": " Anna Berg ", "avatar_url": "mxc://x/abc"}));
        assert_eq!(p.name.as_deref(), Some("Anna Berg"));
        assert_eq!(p.avatar.as_deref(), Some("mxc://x/abc"));
        let p = Profile::from_member_content(&serde_json::json!({
            "membership": "join", "displayname": "", "avatar_url": "https://evil/x.png"}));
        assert_eq!(p, Profile::default());
    }

    #[test]
    fn a_sealed_sender_opens_only_for_its_message() {
        let dek = DataKey::generate();
        let p = Profile {
            name: Some("Anna".into()),
            avatar: None,
        };
        let row = MessageRow {
            id: "m1".into(),
            sender_enc: Some(seal_sender(&dek, "m1", &p)),
            ..MessageRow::default()
        };
        assert_eq!(open_sender(&dek, &row), Some(p));
        let moved = MessageRow {
            id: "m2".into(),
            ..row
        };
        assert_eq!(open_sender(&dek, &moved), None);
    }
}
