//! The services Switchboard talks to beside the homeserver: `[bridges.*]` (mautrix
//! provisioning), `[ai]` (an OpenAI-compatible API) and `[push]` (APNs and Web Push).

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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PushEnvironment {
    #[default]
    Production,
    Development,
}

/// `[push]`: Apple's push service for native apps (the `key_*`, `team_id`, `bundle_id`
/// keys, all or none) and Web Push for browsers (always on; these keys only tune it).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushConfig {
    /// APNs `.p8` key (PKCS#8 PEM); APNs is off without it.
    pub key_file: Option<PathBuf>,
    pub key_id: Option<String>,
    pub team_id: Option<String>,
    pub bundle_id: Option<String>,
    pub environment: PushEnvironment,
    /// Replaces the APNs hosts (api.push.apple.com / api.sandbox.push.apple.com), e.g. a
    /// local stand-in in tests or a relay; `http://` URLs are spoken to as HTTP/2 cleartext.
    pub endpoint: Option<String>,
    /// Web Push: the VAPID `sub` claim push services may use to reach the operator, a
    /// `mailto:` or `https:` URL; default `[server] base_url`, else the first admin e-mail.
    pub contact: Option<String>,
    /// Web Push endpoints whose host resolves to a private, loopback or link-local address
    /// are refused (like mail hosts); `true` allows them all, a list of CIDRs some. Allowed
    /// private endpoints may be plain `http`.
    pub allow_private_endpoints: super::PrivateHosts,
    /// Deadline of one Web Push request (connection, TLS, request and answer).
    pub timeout: HumanDuration,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            key_file: None,
            key_id: None,
            team_id: None,
            bundle_id: None,
            environment: PushEnvironment::default(),
            endpoint: None,
            contact: None,
            allow_private_endpoints: super::PrivateHosts::None,
            timeout: HumanDuration::from_secs(10),
        }
    }
}

impl PushConfig {
    /// Whether APNs is configured (`key_file` set).
    pub fn apns(&self) -> bool {
        self.key_file.is_some()
    }
}
