//! Finding people and starting direct chats on the homeserver: the user directory
//! (`/user_directory/search`), room creation, the full state of a room just created or
//! joined, and the `m.direct` account data.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::types::Event;
use super::{decode, encode, unreachable, MatrixClient, MatrixError};

/// One user of `POST /user_directory/search`.
#[derive(Debug, Clone, Deserialize)]
pub struct DirectoryUser {
    pub user_id: String,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub avatar_url: Option<String>,
}

impl MatrixClient {
    /// `POST /user_directory/search`: users whose ID or display name match `term`, as the
    /// homeserver's directory shows them to the holder of `token` (on Synapse by default:
    /// users sharing a room with them or in a public room).
    pub async fn search_user_directory(
        &self,
        token: &str,
        term: &str,
        limit: u32,
    ) -> Result<Vec<DirectoryUser>, MatrixError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(default)]
            results: Vec<DirectoryUser>,
        }
        let body = json!({ "search_term": term, "limit": limit });
        let resp = self
            .client_api(reqwest::Method::POST, token, "user_directory/search")?
            .json(&body)
            .send()
            .await
            .map_err(unreachable)?;
        let found: Found = decode(resp).await?;
        Ok(found.results)
    }

    /// `GET /profile/{userId}`: succeeds when the homeserver knows the user (404
    /// `M_NOT_FOUND` when it does not).
    pub async fn profile(&self, token: &str, user_id: &str) -> Result<(), MatrixError> {
        let path = format!("profile/{}", encode(user_id));
        let resp = self
            .client_api(reqwest::Method::GET, token, &path)?
            .send()
            .await
            .map_err(unreachable)?;
        let _: Value = decode(resp).await?;
        Ok(())
    }

    /// `POST /createRoom` with `body`; returns the new room's id.
    pub async fn create_room(&self, token: &str, body: &Value) -> Result<String, MatrixError> {
        #[derive(Deserialize)]
        struct Created {
            room_id: String,
        }
        let resp = self
            .client_api(reqwest::Method::POST, token, "createRoom")?
            .json(body)
            .send()
            .await
            .map_err(unreachable)?;
        let created: Created = decode(resp).await?;
        Ok(created.room_id)
    }

    /// `GET /rooms/{roomId}/state`: every current state event of a room the holder of
    /// `token` has joined.
    pub async fn room_state(&self, token: &str, room_id: &str) -> Result<Vec<Event>, MatrixError> {
        let path = format!("rooms/{}/state", encode(room_id));
        let resp = self
            .client_api(reqwest::Method::GET, token, &path)?
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }

    /// `PUT /user/{userId}/account_data/m.direct`: replaces the direct-chat map.
    pub async fn set_direct_rooms(
        &self,
        token: &str,
        user_id: &str,
        direct: &HashMap<String, Vec<String>>,
    ) -> Result<(), MatrixError> {
        let path = format!("user/{}/account_data/m.direct", encode(user_id));
        let resp = self
            .client_api(reqwest::Method::PUT, token, &path)?
            .json(direct)
            .send()
            .await
            .map_err(unreachable)?;
        let _: Value = decode(resp).await?;
        Ok(())
    }
}
