//! The personal-token history page in its wire form, and the cache of rendered pages.
//!
//! Scripts poll the same page (the newest of a conversation) over and over. A page is
//! rendered to JSON once and served from memory until anything is written to the database
//! (the write epoch, [`crate::store::epoch`]): a new, edited or redacted message, a deleted
//! room, key deletion or an account change all end every cached page at once, so a cached
//! page is never older than the data it was rendered from. Only successful pages are
//! cached; the key holds everything the page depends on besides the stored data (caller,
//! room, cursor, limit).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::services::conversations::MessageContent;
use crate::store::epoch::{EpochCache, WriteEpoch};

/// A page is served from memory for at most this long: writes by this process end it at
/// once; this bounds how long a write by another process (e.g. a restore into a running
/// server) can go unseen.
const PAGE_CACHE_MAX_AGE: Duration = Duration::from_secs(1);

/// A personal-token message: readable text.
#[derive(Debug, Clone)]
pub struct ReadableMessage {
    pub event_id: String,
    pub sender_id: String,
    /// `body` is the readable text (see [`ReadableMessage::text`]); `content` the event
    /// content. Shared with the content cache.
    pub content: Arc<MessageContent>,
    pub redacted: bool,
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

/// What a rendered page depends on besides the stored data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub user_id: String,
    pub room_id: Option<String>,
    pub cursor: Option<String>,
    pub limit: i64,
}

/// Rendered pages (JSON bodies) by [`PageKey`]; `None` when turned off
/// (`storage.history_cache_mb = 0`).
pub struct PageCache(Option<EpochCache<PageKey, Bytes>>);

impl PageCache {
    pub fn new(epoch: &WriteEpoch, megabytes: u32) -> Self {
        Self((megabytes > 0).then(|| {
            EpochCache::new(
                epoch,
                u64::from(megabytes) * 1024 * 1024,
                PAGE_CACHE_MAX_AGE,
                Some(|body: &Bytes| u32::try_from(body.len()).unwrap_or(u32::MAX)),
            )
        }))
    }

    pub fn get(&self, key: &PageKey) -> Option<Bytes> {
        self.0.as_ref()?.get(key)
    }

    /// The epoch to take before reading the data of a page.
    pub fn epoch(&self) -> u64 {
        self.0.as_ref().map_or(0, EpochCache::epoch)
    }

    /// Files a page rendered from data read after `epoch` was taken.
    pub fn insert(&self, key: PageKey, epoch: u64, body: Bytes) {
        if let Some(cache) = &self.0 {
            cache.insert(key, epoch, body);
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
            })
            .collect(),
        next_cursor,
    };
    let mut body = Vec::with_capacity(384 * messages.len() + 256);
    serde_json::to_writer(&mut body, &page).map_err(AppError::internal)?;
    Ok(Bytes::from(body))
}
