//! Paging back through a room's timeline (`GET /rooms/{roomId}/messages?dir=b`).

use std::time::Duration;

use serde::Deserialize;

use super::types::Event;
use super::{encode, MatrixClient, MatrixError};

/// One page of `/messages`, newest first.
#[derive(Debug, Default, Deserialize)]
pub struct MessagesPage {
    #[serde(default)]
    pub chunk: Vec<Event>,
    /// Where the next (older) page starts; absent when there is nothing older to see.
    #[serde(default)]
    pub end: Option<String>,
    /// With `lazy_load_members` in the filter: the `m.room.member` state of the chunk's
    /// senders. Synapse gives it as it was right after the chunk's first (newest) event.
    #[serde(default)]
    pub state: Vec<Event>,
}

/// A page is waited for at most this long: a reader is waiting for the answer.
const PAGE_TIMEOUT: Duration = Duration::from_secs(15);

impl MatrixClient {
    /// `GET /rooms/{roomId}/messages?dir=b`: up to `limit` events before `from`, back to
    /// `to` when given, of the types in `filter` (a JSON `RoomEventFilter`).
    pub async fn messages_back(
        &self,
        token: &str,
        room_id: &str,
        from: &str,
        to: Option<&str>,
        limit: u32,
        filter: &str,
    ) -> Result<MessagesPage, MatrixError> {
        let limit = limit.to_string();
        let mut query = vec![
            ("dir", "b"),
            ("from", from),
            ("limit", limit.as_str()),
            ("filter", filter),
        ];
        if let Some(to) = to {
            query.push(("to", to));
        }
        let path = format!("rooms/{}/messages", encode(room_id));
        self.get_with_query(token, &path, &query, PAGE_TIMEOUT)
            .await
    }
}

#[derive(Debug, Default, Deserialize)]
struct Context {
    #[serde(default)]
    start: Option<String>,
}

impl MatrixClient {
    /// `GET /rooms/{roomId}/context/{eventId}?limit=0`: the token to page back from
    /// `event_id` with `dir=b` (`None`: the homeserver has nothing before it).
    pub async fn context_start(
        &self,
        token: &str,
        room_id: &str,
        event_id: &str,
    ) -> Result<Option<String>, MatrixError> {
        let path = format!("rooms/{}/context/{}", encode(room_id), encode(event_id));
        let context: Context = self
            .get_with_query(token, &path, &[("limit", "0")], PAGE_TIMEOUT)
            .await?;
        Ok(context.start)
    }
}
