//! Client-server calls only the sync worker needs, next to `MatrixClient`: looking up
//! whether a room has a name (plus its members' display names) when its membership
//! changed.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::room::RoomHint;
use crate::clients::matrix::types::SyncResponse;
use crate::clients::matrix::{decode, encode, unreachable, MatrixError};

/// At most this many rooms are looked up per sync response.
const MAX_HINTS: usize = 20;

pub struct Homeserver<'a> {
    pub http: &'a reqwest::Client,
    pub base: &'a str,
    pub token: &'a str,
}

impl Homeserver<'_> {
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T, MatrixError> {
        let url = format!("{}/_matrix/client/v3/{path}", self.base);
        let url = reqwest::Url::parse_with_params(&url, query)
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let resp = self
            .http
            .get(url)
            .bearer_auth(self.token)
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }

    /// Looks up rooms whose membership changed without an `m.room.name` in the response:
    /// whether they have a name, and if not, their members' display names.
    pub async fn room_hints(&self, resp: &SyncResponse) -> HashMap<String, RoomHint> {
        let mut hints = HashMap::new();
        let candidates = resp.rooms.join.iter().filter(|(_, room)| {
            let events = || room.state.events.iter().chain(&room.timeline.events);
            events().any(|e| e.kind == "m.room.member")
                && !events().any(|e| e.kind == "m.room.name")
        });
        for (room_id, _) in candidates.take(MAX_HINTS) {
            match self.hint(room_id).await {
                Ok(hint) => {
                    hints.insert(room_id.clone(), hint);
                }
                Err(e) => tracing::debug!(%room_id, error = %e, "room name lookup failed"),
            }
        }
        hints
    }

    async fn hint(&self, room_id: &str) -> Result<RoomHint, MatrixError> {
        let room = encode(room_id);
        let name: Result<Value, _> = self
            .get(&format!("rooms/{room}/state/m.room.name"), &[])
            .await;
        let unnamed = match name {
            Ok(content) => content["name"].as_str().is_none_or(|n| n.trim().is_empty()),
            Err(MatrixError::Http { status: 404, .. }) => true,
            Err(e) => return Err(e),
        };
        if !unnamed {
            return Ok(RoomHint::default());
        }
        // The joined and the invited members with their names: a room whose only other
        // person is invited is named after them. One request (leave and ban left out).
        #[derive(Deserialize)]
        struct Members {
            #[serde(default)]
            chunk: Vec<crate::clients::matrix::types::Event>,
        }
        let members: Members = self
            .get(
                &format!("rooms/{room}/members"),
                &[("not_membership", "leave")],
            )
            .await?;
        let mut hint = RoomHint {
            unnamed,
            ..RoomHint::default()
        };
        for ev in members.chunk {
            let Some(id) = ev.state_key else { continue };
            match ev.content["membership"].as_str() {
                Some("join") => {}
                Some("invite") => hint.invited.push(id.clone()),
                _ => continue,
            }
            if let Some(name) = ev.content["displayname"].as_str().map(str::trim) {
                if !name.is_empty() {
                    hint.display_names.insert(id, name.to_owned());
                }
            }
        }
        Ok(hint)
    }
}
