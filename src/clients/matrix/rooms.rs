//! Room operations as the user: `/sync`, sending and redacting events, read markers,
//! members, joining and leaving, and the `m.direct` account data.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{decode, encode, unreachable, MatrixClient, MatrixError, SyncResponse};

impl MatrixClient {
    /// `GET /_matrix/client/v3/sync`: long-polls up to `timeout_ms` for changes after
    /// `since` (a full initial sync without it). The request timeout is the poll plus 30 s.
    pub async fn sync(
        &self,
        token: &str,
        since: Option<&str>,
        timeout_ms: u64,
        filter: Option<&str>,
    ) -> Result<SyncResponse, MatrixError> {
        let timeout = timeout_ms.to_string();
        let mut query = vec![("timeout", timeout.as_str())];
        if let Some(since) = since {
            query.push(("since", since));
        }
        if let Some(filter) = filter {
            query.push(("filter", filter));
        }
        let wait = Duration::from_millis(timeout_ms) + Duration::from_secs(30);
        self.get_with_query(token, "sync", &query, wait).await
    }

    /// `GET /_matrix/client/v3/{path}?{query}` as the holder of `token`, waited for at most
    /// `timeout`: its decoded JSON answer. `path` is already percent-encoded.
    pub(crate) async fn get_with_query<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        path: &str,
        query: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<T, MatrixError> {
        let url = format!("{}/_matrix/client/v3/{path}", self.base);
        let url = reqwest::Url::parse_with_params(&url, query)
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let resp = self
            .api
            .get(url)
            .bearer_auth(token)
            .timeout(timeout)
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }

    /// `PUT /rooms/{roomId}/send/{type}/{txnId}`: idempotent per access token and txn id.
    /// Returns the event id.
    pub async fn send_event(
        &self,
        token: &str,
        room_id: &str,
        event_type: &str,
        txn_id: &str,
        content: &serde_json::Value,
    ) -> Result<String, MatrixError> {
        let path = format!(
            "rooms/{}/send/{}/{}",
            encode(room_id),
            encode(event_type),
            encode(txn_id)
        );
        self.put_for_event_id(token, &path, content).await
    }

    /// `PUT /rooms/{roomId}/redact/{eventId}/{txnId}`: redacts `event_id` (idempotent per
    /// access token and txn id). Returns the redaction's event id.
    pub async fn redact(
        &self,
        token: &str,
        room_id: &str,
        event_id: &str,
        txn_id: &str,
    ) -> Result<String, MatrixError> {
        let path = format!(
            "rooms/{}/redact/{}/{}",
            encode(room_id),
            encode(event_id),
            encode(txn_id)
        );
        self.put_for_event_id(token, &path, &json!({})).await
    }

    /// `POST /rooms/{roomId}/read_markers`: moves the fully-read marker and sends a public
    /// read receipt for `event_id`.
    pub async fn mark_read(
        &self,
        token: &str,
        room_id: &str,
        event_id: &str,
    ) -> Result<(), MatrixError> {
        let path = format!("rooms/{}/read_markers", encode(room_id));
        let body = json!({"m.fully_read": event_id, "m.read": event_id});
        let resp = self
            .client_api(reqwest::Method::POST, token, &path)?
            .json(&body)
            .send()
            .await
            .map_err(unreachable)?;
        let _: serde_json::Value = decode(resp).await?;
        Ok(())
    }

    /// `GET /rooms/{roomId}/joined_members`: Matrix IDs of the joined members.
    pub async fn joined_members(
        &self,
        token: &str,
        room_id: &str,
    ) -> Result<Vec<String>, MatrixError> {
        #[derive(Deserialize)]
        struct Joined {
            joined: std::collections::HashMap<String, serde_json::Value>,
        }
        let path = format!("rooms/{}/joined_members", encode(room_id));
        let resp = self
            .client_api(reqwest::Method::GET, token, &path)?
            .send()
            .await
            .map_err(unreachable)?;
        let joined: Joined = decode(resp).await?;
        let mut members: Vec<String> = joined.joined.into_keys().collect();
        members.sort();
        Ok(members)
    }

    /// `POST /join/{roomIdOrAlias}`: accepts an invite.
    pub async fn join(&self, token: &str, room_id: &str) -> Result<(), MatrixError> {
        self.post_empty(token, &format!("join/{}", encode(room_id)))
            .await
    }

    /// `POST /rooms/{roomId}/leave`: declines an invite (or leaves a joined room).
    pub async fn leave(&self, token: &str, room_id: &str) -> Result<(), MatrixError> {
        self.post_empty(token, &format!("rooms/{}/leave", encode(room_id)))
            .await
    }

    /// A client-API `POST` with an empty JSON body whose answer only has to be a success.
    pub(crate) async fn post_empty(&self, token: &str, path: &str) -> Result<(), MatrixError> {
        let resp = self
            .client_api(reqwest::Method::POST, token, path)?
            .json(&json!({}))
            .send()
            .await
            .map_err(unreachable)?;
        let _: serde_json::Value = decode(resp).await?;
        Ok(())
    }

    /// `GET /user/{userId}/account_data/m.direct`: direct-chat map (partner → room ids).
    pub async fn direct_rooms(
        &self,
        token: &str,
        user_id: &str,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, MatrixError> {
        let path = format!("user/{}/account_data/m.direct", encode(user_id));
        Ok(self.read_json(token, &path).await?.unwrap_or_default())
    }
}
