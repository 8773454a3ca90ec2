//! Wire types of the mautrix bridgev2 provisioning API (`/_matrix/provision/v3/...`),
//! as the bridges send them (snake_case). Only what switchboard reads is typed; the
//! per-step parameter objects are kept as JSON and handed to clients unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `GET /v3/login/flows` item (also `login_flows` in whoami).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct LoginFlow {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LoginFlows {
    #[serde(default)]
    pub flows: Vec<LoginFlow>,
}

/// A login step (`RespSubmitLogin`): the answer of `login/start` and `login/step`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct LoginStep {
    /// The login *process* id (not a user login id).
    #[serde(default)]
    pub login_id: String,
    /// `display_and_wait`, `user_input`, `cookies`, `client_http`, `webauthn` or `complete`.
    #[serde(rename = "type")]
    pub step_type: String,
    #[serde(default)]
    pub step_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_id: Option<String>,
    #[serde(default)]
    pub instructions: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_and_wait: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookies: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<LoginComplete>,
}

impl LoginStep {
    pub const DISPLAY_AND_WAIT: &'static str = "display_and_wait";
    pub const USER_INPUT: &'static str = "user_input";
    pub const COOKIES: &'static str = "cookies";
    pub const COMPLETE: &'static str = "complete";

    /// The new login's id when this step completes the login.
    pub fn completed_login_id(&self) -> Option<&str> {
        if self.step_type != Self::COMPLETE {
            return None;
        }
        Some(
            self.complete
                .as_ref()
                .map(|c| c.user_login_id.as_str())
                .unwrap_or_default(),
        )
    }

    /// `display_and_wait.type` (`qr`, `emoji`, `code`, `nothing`) and `.data`.
    pub fn display(&self) -> Option<(&str, Option<&str>)> {
        let d = self.display_and_wait.as_ref()?;
        Some((d["type"].as_str().unwrap_or_default(), d["data"].as_str()))
    }
}

/// `complete` of a completion step. (`user_login` is not serialized by mautrix-go.)
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct LoginComplete {
    #[serde(default)]
    pub user_login_id: String,
}

/// `GET /v3/whoami`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Whoami {
    #[serde(default)]
    pub login_flows: Vec<LoginFlow>,
    #[serde(default)]
    pub bridge_bot: Option<String>,
    #[serde(default)]
    pub logins: Vec<WhoamiLogin>,
}

/// One login of the user in whoami.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WhoamiLogin {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub profile: Option<Value>,
    #[serde(default)]
    pub state: Option<BridgeState>,
    /// Deprecated mirror of `state.state_event` (older bridges send only this).
    #[serde(default)]
    pub state_event: Option<String>,
}

impl WhoamiLogin {
    /// The login's state event (`""` when none was reported yet).
    pub fn state_event(&self) -> &str {
        match &self.state {
            Some(s) if !s.state_event.is_empty() => &s.state_event,
            _ => self.state_event.as_deref().unwrap_or_default(),
        }
    }
}

/// `status.BridgeState` of a login.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BridgeState {
    #[serde(default)]
    pub state_event: String,
    /// Unix seconds (the yaml says milliseconds; mautrix-go sends seconds).
    #[serde(default)]
    pub timestamp: Option<f64>,
    /// Network-defined error code, e.g. `wa-logged-out`.
    #[serde(default)]
    pub error: Option<String>,
    /// Human-readable message for the error.
    #[serde(default)]
    pub message: Option<String>,
}

/// Matrix-style error body of the bridge: `{"errcode", "error"}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RespError {
    #[serde(default)]
    pub errcode: String,
    #[serde(default)]
    pub error: String,
}

/// `RespResolveIdentifier`: a remote user as `contacts`, `search_users`,
/// `resolve_identifier` and `create_dm` describe them (every field but `id` may be absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ResolvedIdentifier {
    /// The network's id of the user.
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// `mxc://` avatar.
    #[serde(default)]
    pub avatar_url: Option<String>,
    /// URIs such as `tel:+123456789`, `mailto:…`, `signal:username`.
    #[serde(default)]
    pub identifiers: Option<Vec<String>>,
    /// The ghost's Matrix ID.
    #[serde(default)]
    pub mxid: Option<String>,
    /// The direct chat's portal room, when there is one.
    #[serde(default)]
    pub dm_room_mxid: Option<String>,
}

/// `GET /v3/contacts`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ContactList {
    #[serde(default)]
    pub contacts: Option<Vec<ResolvedIdentifier>>,
}

/// `POST /v3/search_users`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SearchResults {
    #[serde(default)]
    pub results: Option<Vec<ResolvedIdentifier>>,
}

/// `GET /v3/capabilities` (`bridgev2.ProvisioningCapabilities`): what the network lets the
/// provisioning API do. Only the group creation part is read here.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Capabilities {
    /// Group types the network can create, by type id (`group`, `channel`, …); absent or
    /// empty when it creates none.
    #[serde(default)]
    pub group_creation: Option<std::collections::BTreeMap<String, GroupTypeCapabilities>>,
}

/// One group type (`bridgev2.GroupTypeCapabilities`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GroupTypeCapabilities {
    #[serde(default)]
    pub type_description: String,
    #[serde(default)]
    pub name: GroupFieldCapability,
    #[serde(default)]
    pub participants: GroupFieldCapability,
}

/// `bridgev2.GroupFieldCapability`: whether a field may or must be set, and its length
/// bounds (for participants: how many besides the creator). 0 means no bound.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GroupFieldCapability {
    #[serde(default)]
    pub allowed: bool,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub min_length: usize,
    #[serde(default)]
    pub max_length: usize,
}

/// `provisionutil.RespCreateGroup`: the network's id of the new group and its portal room.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CreatedGroup {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub mxid: Option<String>,
    /// Participants the network could not add, by network user id (the bridge's detail is
    /// kept as it came).
    #[serde(default)]
    pub failed_participants: Option<std::collections::BTreeMap<String, Value>>,
}
