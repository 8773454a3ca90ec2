//! The personal-token history page in its wire form. Rendered pages are cached in
//! [`crate::services::pages`].

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;

use super::rich::Rich;
use crate::error::{AppError, AppResult};
use crate::services::conversations::MessageContent;

/// A personal-token message: readable text.
#[derive(Debug, Clone)]
pub struct ReadableMessage {
    pub event_id: String,
    pub sender_id: String,
    /// `body` is the readable text (see [`ReadableMessage::text`]); `content` the event
    /// content. Shared with the content cache.
    pub content: Arc<MessageContent>,
    pub redacted: bool,
    /// Matrix `msgtype` (`m.sticker` for stickers).
    pub msgtype: String,
    /// `media`, `replyTo`, `editedAt`, `reactions`.
    pub rich: Rich,
    pub outgoing: bool,
    pub is_mine: bool,
    pub timestamp: i64,
}

impl ReadableMessage {
    /// The readable text; empty for redacted messages.
    pub fn text(&self) -> &str {
        if self.redacted {
            ""
        } else {
            &self.content.body
        }
    }
}

/// `ReadableMessage` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageOut<'a> {
    event_id: &'a str,
    room_id: &'a str,
    sender_id: &'a str,
    text: &'a str,
    content: &'a serde_json::Value,
    direction: &'static str,
    is_mine: bool,
    timestamp: i64,
    msgtype: &'a str,
    #[serde(flatten)]
    rich: &'a Rich,
}

/// `ReadableMessagePage` of the API document, as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageOut<'a> {
    messages: Vec<MessageOut<'a>>,
    next_cursor: Option<&'a str>,
}

/// Writes a page: `messages` (all of `room_id`, newest first) and the next cursor.
pub fn render(
    room_id: Option<&str>,
    messages: &[ReadableMessage],
    next_cursor: Option<&str>,
) -> AppResult<Bytes> {
    let room_id = room_id.unwrap_or_default();
    let page = PageOut {
        messages: messages
            .iter()
            .map(|m| MessageOut {
                event_id: &m.event_id,
                room_id,
                sender_id: &m.sender_id,
                text: m.text(),
                content: &m.content.content,
                direction: if m.outgoing { "outgoing" } else { "incoming" },
                is_mine: m.is_mine,
                timestamp: m.timestamp,
                msgtype: &m.msgtype,
                rich: &m.rich,
            })
            .collect(),
        next_cursor,
    };
    let mut body = Vec::with_capacity(384 * messages.len() + 256);
    serde_json::to_writer(&mut body, &page).map_err(AppError::internal)?;
    Ok(Bytes::from(body))
}
