//! Managing a room as the user: its state (name, topic, avatar), inviting and removing
//! members, and reading who is in it with their power levels.

use serde::Deserialize;
use serde_json::{json, Value};

use super::types::Event;
use super::{decode, encode, unreachable, MatrixClient, MatrixError};

impl MatrixClient {
    /// `PUT /rooms/{roomId}/state/{eventType}/{stateKey}`; returns the event id.
    pub async fn set_state(
        &self,
        token: &str,
        room_id: &str,
        event_type: &str,
        state_key: &str,
        content: &Value,
    ) -> Result<String, MatrixError> {
        // An empty state key is an empty last segment (`…/m.room.name/`), which the
        // segment encoder would refuse as a segment of its own.
        let path = format!(
            "rooms/{}/state/{}/{}",
            encode(room_id),
            encode(event_type),
            if state_key.is_empty() {
                String::new()
            } else {
                encode(state_key)
            }
        );
        self.put_for_event_id(token, &path, content).await
    }

    /// `POST /rooms/{roomId}/invite {user_id}`.
    pub async fn invite(
        &self,
        token: &str,
        room_id: &str,
        user_id: &str,
    ) -> Result<(), MatrixError> {
        let path = format!("rooms/{}/invite", encode(room_id));
        self.post_json(token, &path, &json!({ "user_id": user_id }))
            .await
    }

    /// `POST /rooms/{roomId}/kick {user_id, reason?}`: removes a member (or withdraws an
    /// invitation).
    pub async fn kick(
        &self,
        token: &str,
        room_id: &str,
        user_id: &str,
        reason: Option<&str>,
    ) -> Result<(), MatrixError> {
        let path = format!("rooms/{}/kick", encode(room_id));
        let mut body = json!({ "user_id": user_id });
        if let Some(r) = reason {
            body["reason"] = json!(r);
        }
        self.post_json(token, &path, &body).await
    }

    /// `GET /rooms/{roomId}/members?not_membership=leave`: the member events of the
    /// joined and invited (and banned) members.
    pub async fn member_events(
        &self,
        token: &str,
        room_id: &str,
    ) -> Result<Vec<Event>, MatrixError> {
        #[derive(Deserialize)]
        struct Members {
            #[serde(default)]
            chunk: Vec<Event>,
        }
        let path = format!("rooms/{}/members", encode(room_id));
        crate::clients::segment::check_path(&path)?;
        let members: Members = self
            .get_with_query(
                token,
                &path,
                &[("not_membership", "leave")],
                std::time::Duration::from_secs(30),
            )
            .await?;
        Ok(members.chunk)
    }

    /// A client-API `POST` of `body` whose answer only has to be a success.
    async fn post_json(&self, token: &str, path: &str, body: &Value) -> Result<(), MatrixError> {
        let resp = self
            .client_api(reqwest::Method::POST, token, path)?
            .json(body)
            .send()
            .await
            .map_err(unreachable)?;
        let _: Value = decode(resp).await?;
        Ok(())
    }
}
