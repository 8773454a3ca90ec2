//! Group creation through the provisioning API: `GET /v3/capabilities` (which group types
//! the network can create, `provisioning.group_creation`) and `POST /v3/create_group/{type}`
//! with mautrix-go's `GroupCreateParams` (`participants` as network user ids, `name` as
//! `m.room.name` content).

use reqwest::Method;

use super::types::{Capabilities, CreatedGroup};
use super::{BridgeError, ProvisioningClient, CREATE_GROUP_TIMEOUT};

impl ProvisioningClient {
    /// `GET /v3/capabilities`.
    pub async fn capabilities(&self, user_id: &str) -> Result<Capabilities, BridgeError> {
        self.call(Method::GET, "/v3/capabilities", user_id, &[], None, None)
            .await
    }

    /// `POST /v3/create_group/{type}`: the network creates the group and the bridge its
    /// portal room (the bridge answers 200 with `{id, mxid}`); waits up to
    /// [`CREATE_GROUP_TIMEOUT`].
    pub async fn create_group(
        &self,
        user_id: &str,
        group_type: &str,
        participants: &[String],
        name: Option<&str>,
    ) -> Result<CreatedGroup, BridgeError> {
        let path = format!("/v3/create_group/{}", self.segment("type", group_type)?);
        let mut body = serde_json::json!({ "participants": participants });
        if let Some(name) = name {
            body["name"] = serde_json::json!({ "name": name });
        }
        self.post(user_id, &path, &body, Some(CREATE_GROUP_TIMEOUT))
            .await
    }
}
