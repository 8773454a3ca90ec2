//! The objects of the message history page (`GET /api/messages`): encrypted for native
//! sessions, readable for personal tokens. They document the response; the messages service
//! writes its bytes, and the test below holds the two together.

use poem_openapi::{Enum, Object, Union};
use serde::Serialize;

/// Message content sealed to the caller's registered X25519 public key.
///
/// `shared = X25519(ephemeral_secret, recipient_public)`; `key = HKDF-SHA256(ikm = shared,
/// salt = empty, info = "switchboard-v1")`, 32 bytes; `ciphertext` = XChaCha20-Poly1305
/// (key, `nonce`, no associated data) of the UTF-8 JSON `{"body": <text, empty when
/// redacted>, "content": <Matrix event content>, "msgtype", "senderName",
/// "senderAvatarUrl", "media", "replyTo", "editedAt", "reactions"}` (the last seven as in
/// the ReadableMessage schema: `senderName` the sender's display name when the message was
/// sent, `senderAvatarUrl` the member avatar route or null, `media` a MessageMedia or null,
/// `reactions` a list of MessageReaction), tag appended. All fields standard base64 with
/// padding.
///
/// Open each envelope on its own with its own `ephemeralPubkey` and `nonce`. The server
/// uses one ephemeral key for all envelopes of one response (each with its own random
/// nonce) and may answer an unchanged page again with the identical bytes (the same
/// ephemeral key, nonces and ciphertexts: a repeat of one encryption, never a new
/// plaintext under a used key and nonce); clients must not assume either way.
///
/// Documents the response; it is written by the messages service.
#[derive(Debug, Clone, Object)]
#[oai(rename = "EncryptedContent", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EncryptedContent {
    /// The X25519 public key of the ephemeral key the content was sealed with (32 bytes);
    /// shared by the envelopes of one response.
    pub ephemeral_pubkey: String,
    /// 24 bytes.
    pub nonce: String,
    pub ciphertext: String,
}

/// A message for native clients: visible metadata, content sealed to the user's key.
/// The sender's display name and avatar route (`senderName`, `senderAvatarUrl`) are
/// content: they are inside `encryptedContent`, not in the clear.
///
/// Documents the response; it is written by the messages service.
#[derive(Debug, Object)]
#[oai(rename = "EncryptedMessage", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EncryptedMessageView {
    /// Message id (UUID): the id `DELETE /api/messages/{messageId}` takes.
    pub id: String,
    /// Matrix event id.
    pub event_id: String,
    /// Matrix room id.
    pub room_id: String,
    /// Matrix ID of the sender.
    pub sender_id: String,
    /// Origin server time, milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Matrix `msgtype` (`m.text`, `m.image`, …).
    pub msgtype: String,
    /// Platform of the room: `whatsapp`, `telegram`, `discord`; null for plain Matrix.
    pub platform: Option<String>,
    /// 0 to 1.
    pub importance: f64,
    /// Sent by the caller's own Matrix account.
    pub is_mine: bool,
    pub edited: bool,
    pub redacted: bool,
    pub encrypted_content: EncryptedContent,
}

#[derive(Debug, Clone, Copy, Enum, Serialize)]
#[serde(rename_all = "lowercase")]
#[oai(rename = "MessageDirection", rename_all = "lowercase")]
pub enum Direction {
    Incoming,
    Outgoing,
}

/// A message for personal tokens: readable text.
///
/// Documents the response; it is written by [`messages::readable::render`].
#[derive(Debug, Object)]
#[oai(rename = "ReadableMessage", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ReadableMessageView {
    pub event_id: String,
    /// Matrix room id.
    pub room_id: String,
    /// Matrix ID of the sender.
    pub sender_id: String,
    /// The sender's display name in this room as it was when the message was sent (the
    /// `displayname` of the sender's `m.room.member` state then in force: as the sync
    /// stored it, or for older history paged back from the homeserver, as that page's
    /// member state and the member events in it show it); the localpart of `senderId` when
    /// the sender has none. A later rename does not change it. Never fetched from the
    /// homeserver while reading.
    pub sender_name: String,
    /// `/api/rooms/{roomId}/members/{userId}/avatar` (URL-encoded), which serves the
    /// member's avatar thumbnail, when the sender had an avatar when the message was sent;
    /// null otherwise. Fetch it with the same token as this page.
    pub sender_avatar_url: Option<String>,
    /// Readable text; empty for redacted messages.
    pub text: String,
    /// The Matrix event content (after edits, the new content).
    pub content: serde_json::Value,
    /// `outgoing` when the sender is the user's Matrix ID or that of any account of the
    /// user's account group (linked identities); `incoming` otherwise.
    pub direction: Direction,
    /// Sent by the caller's own Matrix account.
    pub is_mine: bool,
    /// Origin server time, milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Matrix `msgtype` (`m.text`, `m.image`, `m.audio`, …; `m.sticker` for stickers).
    pub msgtype: String,
    /// The attachment, for `m.image`, `m.file`, `m.audio`, `m.video` and `m.sticker`
    /// messages; null otherwise. Its bytes: `GET /api/rooms/{roomId}/media/{eventId}`.
    pub media: Option<MessageMedia>,
    /// The event id this message replies to (`m.in_reply_to`); null when none.
    pub reply_to: Option<String>,
    /// When the message was last edited (milliseconds since the Unix epoch); null when
    /// never. The text and content are the edited ones.
    pub edited_at: Option<i64>,
    /// Reactions (`m.reaction` annotations) by key, in the order the keys were first used;
    /// redacted reactions are gone. Empty for redacted messages.
    pub reactions: Vec<MessageReaction>,
}

/// What an attachment is (from its event; the bytes are never stored by Switchboard).
#[derive(Debug, Object)]
#[oai(rename = "MessageMedia", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MessageMedia {
    /// MIME type the sender announced (`application/octet-stream` when none).
    pub mimetype: String,
    /// Size in bytes the sender announced; null when not announced.
    pub size: Option<u64>,
    /// File name (the event's `filename`, else its body).
    pub name: String,
    /// Pixels (images, videos), when announced.
    pub width: Option<u64>,
    pub height: Option<u64>,
    /// Length of audio and video in milliseconds, when announced.
    pub duration_ms: Option<u64>,
    /// Whether `?thumbnail=true` has something to serve.
    pub has_thumbnail: bool,
}

/// One reaction key on a message.
#[derive(Debug, Object)]
#[oai(rename = "MessageReaction", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MessageReaction {
    /// The annotation key (an emoji or short text).
    pub key: String,
    /// How many users reacted with it.
    pub count: u32,
    /// The caller is one of them.
    pub mine: bool,
}

/// Native sessions: a page of encrypted messages (written by the messages service).
#[derive(Debug, Object)]
#[oai(rename = "EncryptedMessagePage")]
#[allow(dead_code)]
pub struct EncryptedHistory {
    /// Newest first.
    pub messages: Vec<EncryptedMessageView>,
}

/// Personal tokens: a page of readable messages (written by [`messages::readable::render`]).
#[derive(Debug, Object)]
#[oai(rename = "ReadableMessagePage", rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ReadableHistory {
    /// Newest first; all of one conversation.
    pub messages: Vec<ReadableMessageView>,
    /// Pass as `cursor` for the next page; null at the end. A page can be empty and still
    /// carry a cursor: keep following it.
    pub next_cursor: Option<String>,
}

/// The response of `GET /api/messages`: encrypted for native sessions, readable for
/// personal tokens (schema only; see [`MessagesApi::list`]).
#[derive(Debug, Union)]
#[oai(rename = "MessageHistory", one_of)]
#[allow(dead_code)]
pub enum History {
    Encrypted(EncryptedHistory),
    Readable(ReadableHistory),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::services::conversations::MessageContent;
    use crate::services::messages;
    use crate::services::messages::ReadableMessage;

    fn schema_properties(name: &str) -> Vec<String> {
        let spec = crate::api::spec_json();
        let mut keys: Vec<String> = spec["components"]["schemas"][name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {name} in the document"))
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    fn keys(value: &serde_json::Value) -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }

    #[test]
    fn the_readable_page_is_written_exactly_as_documented() {
        let message = ReadableMessage {
            event_id: "$e".into(),
            sender_id: "@s:x".into(),
            sender_name: "Sam".into(),
            sender_avatar_url: None,
            content: Arc::new(MessageContent {
                body: "secret".into(),
                content: serde_json::json!({"msgtype": "m.text", "body": "secret"}),
            }),
            redacted: true,
            msgtype: "m.image".into(),
            rich: messages::rich::rich(
                "m.image",
                &serde_json::json!({"body": "a.png", "url": "mxc://h/a", "info": {"mimetype": "image/png"}}),
                Some(9),
                vec![messages::rich::Reaction {
                    key: "👍".into(),
                    count: 2,
                    mine: true,
                }],
            ),
            outgoing: true,
            is_mine: false,
            timestamp: 7,
        };
        let body = messages::readable::render(Some("!r:x"), &[message], None).unwrap();
        let written: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(keys(&written), schema_properties("ReadableMessagePage"));
        let item = &written["messages"][0];
        assert_eq!(keys(item), schema_properties("ReadableMessage"));
        assert_eq!(item["text"], "", "redacted");
        assert_eq!(item["direction"], "outgoing");
        assert_eq!(item["senderName"], "Sam");
        assert!(item["senderAvatarUrl"].is_null());
        assert!(written["nextCursor"].is_null());
    }
}
