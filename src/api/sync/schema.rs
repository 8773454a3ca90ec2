//! The JSON of each `/api/sync` event, for the OpenAPI document: the stream itself writes
//! these objects from [`crate::events::ChangeEvent`] in `feed.rs`, so a field added there is
//! documented here.

use poem_openapi::{Object, Union};

/// `room.updated`: a room's row, members or messages changed; re-read it.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomUpdated {
    pub room_id: String,
}

/// `message.created`: a new message was stored.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct MessageCreated {
    pub room_id: String,
    /// Matrix event id.
    pub event_id: String,
    /// Switchboard message id (UUID).
    pub message_id: String,
}

/// `room.deleted`: the room was removed from the service.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomDeleted {
    pub room_id: String,
    /// Whether its stored messages were deleted too.
    pub messages_deleted: Option<bool>,
}

/// `bridge.state`: a bridge login changed state; re-read `/api/bridges/{platform}`.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct BridgeStateChanged {
    /// whatsapp, telegram or discord.
    pub platform: String,
    pub login_id: Option<String>,
    /// The bridge's state event, e.g. CONNECTED, BAD_CREDENTIALS, LOGGED_OUT.
    pub state_event: Option<String>,
    pub error: Option<String>,
}

/// `scheduled.updated`: a scheduled message was created, changed, sent, failed or cancelled.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledUpdated {
    /// Scheduled message id (UUID).
    pub id: String,
    pub room_id: Option<String>,
    /// pending, sent, cancelled or failed.
    pub status: Option<String>,
}

/// `reminder.due`: a reminder fell due.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReminderDue {
    /// Reminder id (UUID).
    pub id: String,
    pub due_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// `email.updated`: a thread of one of the user's mailboxes changed (new mail, flags,
/// labels, an action); re-read `GET /api/email/threads/{threadId}`.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct EmailUpdated {
    /// Mailbox account id.
    pub account_id: String,
    /// Thread id.
    pub thread_id: String,
}

/// `verification.updated`: a SAS verification with one of the user's other Matrix
/// devices arrived (`requested` or `started`) or changed state; re-read
/// `GET /api/e2ee/verifications` (native sessions) for the emoji.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct VerificationUpdated {
    /// Verification id (the flow's transaction id).
    pub id: String,
    /// The other Matrix device of the user.
    pub other_device_id: String,
    /// requested, ready, started, keys_exchanged, done or cancelled.
    pub state: String,
}

/// `typing`: who else is typing in a room now; an empty `userIds` means nobody is. A
/// typing notice lasts until the next `typing` of the room (the homeserver ends it after
/// its timeout, at most 30 s without a renewal).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct Typing {
    pub room_id: String,
    /// Matrix IDs of the other members typing (never the user).
    pub user_ids: Vec<String>,
}

/// `receipt`: another member's public read receipt moved: they have read the room up to
/// `eventId` (and everything before it). `GET /api/rooms/{roomId}/receipts` lists them.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct Receipt {
    pub room_id: String,
    /// Matrix ID of the reader.
    pub user_id: String,
    /// Matrix event id read up to.
    pub event_id: String,
    /// When, Unix milliseconds.
    pub ts: i64,
}

/// `draft.updated`: the room's draft was saved, deleted, or deleted by a sent message;
/// re-read `GET /api/rooms/{roomId}/draft` (native sessions only, like the draft routes).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct DraftUpdated {
    pub room_id: String,
}

/// `resync`: events were missed (the `Last-Event-ID` is older than the retained window
/// or from before a restart, or this stream fell behind); rescan rooms and messages.
#[derive(Debug, Object)]
pub struct Resync {
    pub reason: String,
}

/// The `data:` of each event: a JSON object whose `type` equals the SSE `event:` name.
/// Payloads may gain fields; clients ignore unknown ones.
#[derive(Debug, Union)]
#[oai(discriminator_name = "type")]
pub enum SyncEvent {
    #[oai(mapping = "room.updated")]
    RoomUpdated(RoomUpdated),
    #[oai(mapping = "message.created")]
    MessageCreated(MessageCreated),
    #[oai(mapping = "room.deleted")]
    RoomDeleted(RoomDeleted),
    #[oai(mapping = "bridge.state")]
    BridgeState(BridgeStateChanged),
    #[oai(mapping = "scheduled.updated")]
    ScheduledUpdated(ScheduledUpdated),
    #[oai(mapping = "reminder.due")]
    ReminderDue(ReminderDue),
    #[oai(mapping = "email.updated")]
    EmailUpdated(EmailUpdated),
    #[oai(mapping = "verification.updated")]
    VerificationUpdated(VerificationUpdated),
    #[oai(mapping = "typing")]
    Typing(Typing),
    #[oai(mapping = "receipt")]
    Receipt(Receipt),
    #[oai(mapping = "draft.updated")]
    DraftUpdated(DraftUpdated),
    #[oai(mapping = "resync")]
    Resync(Resync),
}
