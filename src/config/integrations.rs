//! The services Switchboard talks to beside the homeserver: `[bridges.*]` (mautrix
//! provisioning), `[ai]` (an OpenAI-compatible API) and `[push]` (APNs).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{HumanDuration, Secret};

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BridgesConfig {
    pub whatsapp: Option<BridgeConfig>,
    pub telegram: Option<BridgeConfig>,
    pub discord: Option<BridgeConfig>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BridgeConfig {
    pub provisioning_url: Option<String>,
    pub shared_secret: Option<Secret>,
    /// The bridge bot's Matrix ID: its invites are joined automatically and only its
    /// `m.bridge` state is believed.
    pub bot_user_id: Option<String>,
    /// Localpart prefix of the bridge's ghost users on the bot's server (default
    /// `<platform>_`, mautrix's default username template); their invites are joined
    /// automatically too.
    pub ghost_prefix: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConfig {
    /// Base URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1`.
    pub url: String,
    pub model: String,
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// Model of the `/embeddings` endpoint used by `POST /api/ai/search`; default `model`.
    #[serde(default)]
    pub embedding_model: Option<String>,
    /// How long one AI route (summary, translation, AI search) may wait for the service
    /// in all, connection included: then 502 `ai_unavailable`. 1 s to 10 min.
    #[serde(default = "AiConfig::default_timeout")]
    pub timeout: HumanDuration,
}

impl AiConfig {
    fn default_timeout() -> HumanDuration {
        HumanDuration::from_secs(30)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PushEnvironment {
    Production,
    Development,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    pub key_file: PathBuf,
    pub key_id: String,
    pub team_id: String,
    pub bundle_id: String,
    pub environment: PushEnvironment,
    /// Replaces the APNs hosts (api.push.apple.com / api.sandbox.push.apple.com), e.g. a
    /// local stand-in in tests or a relay; `http://` URLs are spoken to as HTTP/2 cleartext.
    #[serde(default)]
    pub endpoint: Option<String>,
}
