//! The objects of the rooms API.

use super::*;

/// A room (Matrix conversation) of the caller. Which optional fields are present depends
/// on the caller:
///
/// - native clients (JWT access token): `encryptedName`, `encryptedAvatar` and `nonce`
///   (the values the client set with `PUT /api/rooms/{roomId}`, null when never set) and
///   `sealedMeta` (the room's readable names sealed to the user's key); `name`, `topic` and
///   `avatarUrl` are absent;
/// - personal API tokens: readable `name`, `topic` and `avatarUrl` (null when the room has
///   none); `encryptedName`, `encryptedAvatar`, `nonce` and `sealedMeta` are absent.
///
/// Lists omit `memberIds` (loaded lazily); the single-room read
/// (`GET /api/rooms/{roomId}`) refreshes and includes them.
#[derive(Debug, Clone, Object)]
#[oai(rename = "Room", rename_all = "camelCase")]
pub struct RoomObject {
    /// Matrix room ID; same value as `roomId`.
    pub id: String,
    /// Matrix room ID, used for lookup, history and sending; URL-encode it in paths.
    pub room_id: String,
    /// Readable room name (personal tokens only).
    pub name: MaybeUndefined<String>,
    /// Readable room topic (personal tokens only).
    pub topic: MaybeUndefined<String>,
    /// Room avatar, an `mxc://` URL (personal tokens only).
    pub avatar_url: MaybeUndefined<String>,
    /// The native client's own encrypted name, base64 (native clients only).
    pub encrypted_name: MaybeUndefined<String>,
    /// The native client's own encrypted avatar, base64 (native clients only).
    pub encrypted_avatar: MaybeUndefined<String>,
    /// Nonce of `encryptedName`/`encryptedAvatar`, base64 (native clients only).
    pub nonce: MaybeUndefined<String>,
    /// Native clients only: the room's names as the UTF-8 JSON `{"name", "topic",
    /// "avatarUrl", "recipientName"}` (each a string or null; `recipientName` is the direct
    /// partner's display name, null for groups or when unknown), sealed to the user's
    /// registered X25519 key with the envelope of `encryptedContent` (X25519 with the
    /// `ephemeralPubkey`, HKDF-SHA256 info `switchboard-v1`, XChaCha20-Poly1305; one
    /// ephemeral key per answer, a nonce per room). Null before a key is registered (and
    /// after `DELETE /api/keys`). `encryptedName` stays the client's own override.
    pub sealed_meta: MaybeUndefined<EncryptedContent>,
    /// Personal tokens only: the newest message of the room that is not deleted, for an
    /// inbox line such as "Anna: see you Saturday"; null for a room without messages.
    /// Read from the stored messages whenever the room is rendered, so it follows new
    /// messages (sync and back-fill), edits (the edited text) and deletions for everyone (a
    /// deleted last message gives way to the one before).
    pub last_message: MaybeUndefined<LastMessageObject>,
    /// Native clients only: `lastMessage` as the UTF-8 JSON `{"eventId", "senderName",
    /// "isMine", "msgtype", "text", "ts"}` sealed to the user's registered key with the
    /// envelope of `sealedMeta` (same ephemeral key, its own nonce). Null for a room
    /// without messages, and before a key is registered.
    pub sealed_last_message: MaybeUndefined<EncryptedContent>,
    /// `whatsapp`, `telegram`, `discord`, or null for a plain Matrix room.
    pub platform: Option<String>,
    /// Whether this is a one-to-one conversation.
    pub is_direct: bool,
    /// Whether the room is end-to-end encrypted on Matrix. Switchboard decrypts its
    /// messages with its own device and encrypts what it sends into it.
    pub encrypted: bool,
    /// Matrix ID of the direct recipient; null for groups or when unknown.
    pub recipient_id: Option<String>,
    /// Matrix IDs of the joined members (single-room read only; absent in lists).
    #[oai(skip_serializing_if_is_none)]
    pub member_ids: Option<Vec<String>>,
    /// Joined members as last known.
    pub member_count: i64,
    /// Unread messages.
    pub unread_count: i64,
    /// Unread highlights (mentions of the user).
    pub highlight_count: i64,
    /// The user marked the room unread (`POST /api/rooms/{roomId}/unread`, or another
    /// Matrix client through `m.marked_unread`); reading it clears the mark. Count the room
    /// as unread while it is set, whatever `unreadCount` says.
    pub marked_unread: bool,
    /// The room has a draft (`GET /api/rooms/{roomId}/draft`, native sessions).
    pub has_draft: bool,
    /// Time of the newest message, Unix milliseconds; null when there is none.
    pub last_message_at: Option<i64>,
    /// Importance from 0 to 1 (AI service, or the built-in heuristic).
    pub importance: f64,
    pub archived: bool,
    /// Whether the chat's notification level is `off` (see `notifications`).
    pub muted: bool,
    /// Which new messages of the chat are pushed (`PUT /api/rooms/{roomId}/notifications`).
    pub notifications: RoomNotifications,
    pub favorite: bool,
    pub pinned: bool,
    /// `join`, or `invite`: an invitation the user has not accepted yet (only
    /// invitations from the configured bridges are joined automatically; accept or
    /// decline others with `POST /api/rooms/{roomId}/accept` or `…/decline`). No read
    /// marker is sent to the homeserver for an invitation, and personal tokens cannot
    /// send to it.
    pub membership: String,
    /// Matrix ID of who invited the user, while `membership` is `invite` (null when
    /// joined or unknown).
    pub invited_by: Option<String>,
}

/// The last message of a room (`lastMessage`).
#[derive(Debug, Clone, Object)]
#[oai(rename = "RoomLastMessage", rename_all = "camelCase")]
pub struct LastMessageObject {
    /// Matrix event id of the message.
    pub event_id: String,
    /// The sender's display name when the message was sent (the localpart of the Matrix
    /// ID when none); see `senderName` of messages.
    pub sender_name: String,
    /// Sent by the caller's own Matrix account (clients show "You").
    pub is_mine: bool,
    /// Matrix `msgtype` (`m.text`, `m.image`, `m.audio`, …; `m.sticker` for stickers):
    /// clients show media as "📷 Photo", "🎤 Voice note" and the like.
    pub msgtype: String,
    /// The text, at most 140 characters; the file name for media.
    pub text: String,
    /// Origin server time, milliseconds since the Unix epoch.
    pub ts: i64,
}

impl From<crate::services::rooms::LastMessage> for LastMessageObject {
    fn from(m: crate::services::rooms::LastMessage) -> Self {
        Self {
            event_id: m.event_id,
            sender_name: m.sender_name,
            is_mine: m.is_mine,
            msgtype: m.msgtype,
            text: m.text,
            ts: m.ts,
        }
    }
}

fn sealed(
    m: Option<Option<crate::services::rooms::SealedMeta>>,
) -> MaybeUndefined<EncryptedContent> {
    match m {
        None => MaybeUndefined::Undefined,
        Some(None) => MaybeUndefined::Null,
        Some(Some(m)) => MaybeUndefined::Value(EncryptedContent {
            ephemeral_pubkey: m.ephemeral_pubkey,
            nonce: m.nonce,
            ciphertext: m.ciphertext,
        }),
    }
}

impl From<RoomView> for RoomObject {
    fn from(v: RoomView) -> Self {
        let r = v.row;
        let marks = v.marks;
        let native = v.readable.is_none();
        let maybe = |value: Option<String>, present: bool| match (present, value) {
            (false, _) => MaybeUndefined::Undefined,
            (true, Some(s)) => MaybeUndefined::Value(s),
            (true, None) => MaybeUndefined::Null,
        };
        let readable = v.readable.unwrap_or_default();
        let notifications = RoomNotifications {
            level: crate::services::push::levels::Level::of_row(&r)
                .as_str()
                .to_owned(),
            snooze_until: r
                .snooze_until
                .filter(|t| *t > crate::services::scheduled::now_ms()),
        };
        Self {
            id: r.room_id.clone(),
            room_id: r.room_id,
            name: maybe(readable.name, !native),
            topic: maybe(readable.topic, !native),
            avatar_url: maybe(readable.avatar_url, !native),
            encrypted_name: maybe(r.client_name, native),
            encrypted_avatar: maybe(r.client_avatar, native),
            nonce: maybe(r.client_nonce, native),
            sealed_meta: sealed(v.sealed_meta),
            last_message: match v.last_message {
                None => MaybeUndefined::Undefined,
                Some(None) => MaybeUndefined::Null,
                Some(Some(m)) => MaybeUndefined::Value(m.into()),
            },
            sealed_last_message: sealed(v.sealed_last_message),
            platform: r.platform,
            is_direct: r.is_direct,
            encrypted: r.encrypted,
            recipient_id: r.recipient_id,
            member_ids: v.member_ids,
            member_count: r.member_count,
            unread_count: r.unread_count,
            highlight_count: r.highlight_count,
            marked_unread: marks.marked_unread,
            has_draft: marks.has_draft,
            last_message_at: r.last_message_ts,
            importance: r.importance,
            archived: r.archived,
            muted: r.muted,
            notifications,
            favorite: r.favorite,
            pinned: r.pinned,
            membership: r.membership,
            invited_by: r.invited_by,
        }
    }
}

/// A chat's notification settings.
#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomNotifications {
    /// `all` (default), `mentions` or `off` (`off` ⇔ `muted`).
    pub level: String,
    /// Unix milliseconds until which nothing is pushed; null when not snoozed.
    pub snooze_until: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomListResult {
    pub rooms: Vec<RoomObject>,
    /// Opaque cursor of the next page; null at the end.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Object)]
pub struct RoomGetResult {
    pub room: RoomObject,
}

#[derive(Debug, Object)]
pub struct RoomPriorityResult {
    pub rooms: Vec<RoomObject>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomUpdateRequest {
    /// Encrypted room name, standard base64 (at most 4096 characters); null clears it,
    /// absent leaves it.
    pub encrypted_name: MaybeUndefined<String>,
    /// Encrypted avatar, standard base64 (at most 1 MiB of base64); null clears it.
    pub encrypted_avatar: MaybeUndefined<String>,
    /// Nonce, standard base64 (at most 256 characters); null clears it.
    pub nonce: MaybeUndefined<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomDeleteResult {
    pub message: String,
    pub room_id: String,
    /// Whether the stored messages of the room were deleted too.
    pub messages_deleted: bool,
    /// How many stored messages were deleted (0 without `deleteMessages=true`).
    pub deleted_messages_count: i64,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomArchiveResult {
    pub message: String,
    pub room_id: String,
    /// How the room becomes active again.
    pub note: String,
    /// Always true.
    pub archived: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomUnarchiveResult {
    pub message: String,
    pub room_id: String,
    pub archived: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomMuteResult {
    pub message: String,
    pub room_id: String,
    pub muted: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomFavoriteResult {
    pub message: String,
    pub room_id: String,
    pub favorite: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomPinResult {
    pub message: String,
    pub room_id: String,
    pub pinned: bool,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomLinkedGroupResult {
    /// The linked group the room is in; null when it is in none.
    pub linked_group: Option<LinkedGroup>,
}
