//! Request and response objects of the delete, statistics and send routes.

use super::*;

#[derive(Debug, Object)]
#[oai(rename = "MessageDeleteCriteria", rename_all = "camelCase")]
pub struct DeleteCriteria {
    /// The room the deletion was limited to; null for all rooms.
    pub room_id: Option<String>,
    /// Cutoff (milliseconds since the Unix epoch): messages strictly older were deleted;
    /// null for no cutoff.
    pub before: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename = "MessagesDeleted", rename_all = "camelCase")]
pub struct DeleteResult {
    pub message: String,
    pub deleted_count: u64,
    pub criteria: DeleteCriteria,
}

#[derive(Debug, Object)]
#[oai(rename = "MessageDeleted", rename_all = "camelCase")]
pub struct DeleteOneResult {
    pub message: String,
    pub deleted_id: String,
}

/// Aggregates over the caller's stored messages.
#[derive(Debug, Object)]
#[oai(rename = "MessageStats")]
pub struct Stats {
    pub total_messages: i64,
    /// Rooms with at least one stored message.
    pub total_rooms: i64,
    /// Mean importance (0 to 1); 0 without messages.
    pub avg_importance: f64,
    /// Messages with importance of at least 0.7.
    pub high_importance_count: i64,
    /// Messages detected as questions.
    pub questions_count: i64,
    /// Distinct categories, sorted.
    pub all_categories: Vec<String>,
}

impl From<MessageStats> for Stats {
    fn from(s: MessageStats) -> Self {
        Self {
            total_messages: s.total_messages,
            total_rooms: s.total_rooms,
            avg_importance: s.avg_importance,
            high_importance_count: s.high_importance_count,
            questions_count: s.questions_count,
            all_categories: s.categories,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "MessageStatsResult")]
pub struct StatsResult {
    pub stats: Stats,
}

#[derive(Debug, Object)]
#[oai(rename = "SendMessageRequest", rename_all = "camelCase")]
pub struct SendRequest {
    /// The approved text, sent as an `m.text` message: 1 to 65536 characters, not only
    /// whitespace.
    pub content: String,
    /// Client transaction id: 1 to 255 characters of `A-Z a-z 0-9 . _ ~ -`. A repeat of
    /// the same `txnId` sends nothing and returns the first send's event.
    pub txn_id: String,
    /// Event id of a message of this room this one replies to (`m.in_reply_to`).
    pub reply_to: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "SendMessageResult", rename_all = "camelCase")]
pub struct SendResult {
    pub event_id: String,
    pub room_id: String,
    pub txn_id: String,
    /// True when this `txnId` had been sent before and nothing new was sent.
    pub duplicate: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "MultiSendRequest", rename_all = "camelCase")]
pub struct MultiSendRequest {
    /// 1 to 100 room ids; repeated ids are sent to once.
    pub room_ids: Vec<String>,
    /// 1 to 65536 characters, not only whitespace.
    pub body: String,
    /// `m.text` (default), `m.notice` or `m.emote`.
    pub msgtype: Option<String>,
}

/// The outcome for one room.
#[derive(Debug, Object)]
#[oai(rename = "MultiSendRoomResult", rename_all = "camelCase")]
pub struct MultiSendRoomResult {
    pub room_id: String,
    pub success: bool,
    /// Matrix event id when sent.
    pub event_id: Option<String>,
    /// Error code when not sent: `not_found` (not a room of the caller),
    /// `homeserver_error`, `homeserver_unavailable`, `matrix_account_missing`.
    pub error: Option<String>,
    /// Explanation of `error`.
    pub message: Option<String>,
}

impl From<MultiSendItem> for MultiSendRoomResult {
    fn from(item: MultiSendItem) -> Self {
        match item.result {
            Ok(event_id) => Self {
                room_id: item.room_id,
                success: true,
                event_id: Some(event_id),
                error: None,
                message: None,
            },
            Err(e) => Self {
                room_id: item.room_id,
                success: false,
                event_id: None,
                error: Some(e.code().to_owned()),
                message: Some(match e {
                    AppError::Internal(_) => "an internal error occurred".to_owned(),
                    other => other.to_string(),
                }),
            },
        }
    }
}

/// Multi-send result: one entry per distinct room, in request order.
#[derive(Debug, Object)]
#[oai(rename = "MultiSendResult")]
pub struct MultiSendResult {
    pub results: Vec<MultiSendRoomResult>,
    pub sent: u64,
    pub failed: u64,
    pub total: u64,
}

#[derive(Debug, ApiResponse)]
pub enum MultiSendResponse {
    /// Sent to every room.
    #[oai(status = 200)]
    AllSent(Json<MultiSendResult>),
    /// Sent to some rooms; `results` says which.
    #[oai(status = 207)]
    Partial(Json<MultiSendResult>),
    /// Sent to no room (same shape).
    #[oai(status = 500)]
    AllFailed(Json<MultiSendResult>),
}
