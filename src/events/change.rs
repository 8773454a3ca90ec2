//! The change notifications themselves: one variant per event name of the stream.

/// What changed, with its typed payload. Only `/api/sync` (`api/sync/feed.rs`) turns it into JSON; in-process
/// consumers (the push hook) match on it.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeEvent {
    /// `room.updated`: the room's row, flags, members or messages changed.
    RoomUpdated { room_id: String },
    /// `room.deleted`: the room left the user's list.
    RoomDeleted {
        room_id: String,
        messages_deleted: bool,
    },
    /// `message.created`: a new message was stored.
    MessageCreated {
        room_id: String,
        event_id: String,
        message_id: String,
    },
    /// `bridge.state`: a bridge login changed state.
    BridgeState {
        platform: &'static str,
        login_id: String,
        state_event: String,
        error: Option<String>,
    },
    /// `scheduled.updated`: a scheduled message changed status.
    ScheduledUpdated {
        id: String,
        room_id: String,
        status: String,
    },
    /// `reminder.due`: a reminder is due (`due_at` in RFC 3339).
    ReminderDue { id: String, due_at: String },
    /// `email.updated`: a mail thread of one of the user's mailboxes changed.
    EmailUpdated {
        account_id: String,
        thread_id: String,
    },
    /// `verification.updated`: a SAS verification with one of the user's other Matrix
    /// devices arrived or changed state (`state` as `GET /api/e2ee/verifications` has it).
    VerificationUpdated {
        id: String,
        other_device_id: String,
        state: &'static str,
    },
    /// `typing`: who else is typing in a room now (empty: nobody).
    Typing {
        room_id: String,
        user_ids: Vec<String>,
    },
    /// `receipt`: another member's read receipt moved (`ts` Unix ms).
    Receipt {
        room_id: String,
        user_id: String,
        event_id: String,
        ts: i64,
    },
    /// `draft.updated`: the room's draft was saved, deleted or sent.
    DraftUpdated { room_id: String },
}

impl ChangeEvent {
    /// The event's name on the stream.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RoomUpdated { .. } => "room.updated",
            Self::RoomDeleted { .. } => "room.deleted",
            Self::MessageCreated { .. } => "message.created",
            Self::BridgeState { .. } => "bridge.state",
            Self::ScheduledUpdated { .. } => "scheduled.updated",
            Self::ReminderDue { .. } => "reminder.due",
            Self::EmailUpdated { .. } => "email.updated",
            Self::VerificationUpdated { .. } => "verification.updated",
            Self::Typing { .. } => "typing",
            Self::Receipt { .. } => "receipt",
            Self::DraftUpdated { .. } => "draft.updated",
        }
    }
}
