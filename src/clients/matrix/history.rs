//! Paging back through a room's timeline (`GET /rooms/{roomId}/messages?dir=b`).

use std::time::Duration;

use serde::Deserialize;

use super::types::Event;
use super::{decode, encode, unreachable, MatrixClient, MatrixError};

/// One page of `/messages`, newest first.
#[derive(Debug, Default, Deserialize)]
pub struct MessagesPage {
    #[serde(default)]
    pub chunk: Vec<Event>,
    /// Where the next (older) page starts; absent when there is nothing older to see.
    #[serde(default)]
    pub end: Option<String>,
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
        let url = format!(
            "{}/_matrix/client/v3/rooms/{}/messages",
            self.base,
            encode(room_id)
        );
        let url = reqwest::Url::parse_with_params(&url, &query)
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let resp = self
            .api
            .get(url)
            .bearer_auth(token)
            .timeout(PAGE_TIMEOUT)
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }
}
