//! Client for the provisioning API of mautrix bridgev2 bridges
//! (`<provisioning_url>/v3/...`; the wire shapes are in `types.rs`).
//!
//! One [`ProvisioningClient`] per configured platform. Every call authenticates with the
//! platform's shared secret (`Authorization: Bearer <secret>`) and acts for one Matrix
//! user through `?user_id=`. Two reqwest clients per bridge: `api` (connect 3 s, request
//! 10 s) for ordinary calls, `poll` (connect 3 s, timeout per request) for the
//! `display_and_wait` long-poll and `create_group` (30 s).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::clients::segment;
use crate::config::{BridgeConfig, BridgesConfig};

pub mod error;
mod groups;
pub mod identity;
mod login;
mod snc;
pub mod types;

pub use error::{BridgeError, Failure};
pub use types::{LoginFlow, LoginStep, ResolvedIdentifier, Whoami, WhoamiLogin};

/// Connect timeout of every bridge request.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Request timeout of every bridge request except the `display_and_wait` long-poll and
/// a group creation.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Request timeout of `create_group`. The network creates the group, then the bridge its
/// portal room with every member: slower than other calls, and not safe to repeat (a group
/// made after Switchboard gave up would be made twice when the user tries again), so it is
/// given longer.
pub const CREATE_GROUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The chat platforms a bridge can connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    Whatsapp,
    Telegram,
    Discord,
}

impl Platform {
    pub const ALL: [Platform; 3] = [Platform::Whatsapp, Platform::Telegram, Platform::Discord];

    /// The path and JSON value: `whatsapp`, `telegram`, `discord`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Whatsapp => "whatsapp",
            Self::Telegram => "telegram",
            Self::Discord => "discord",
        }
    }

    /// Display name: `WhatsApp`, `Telegram`, `Discord`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Whatsapp => "WhatsApp",
            Self::Telegram => "Telegram",
            Self::Discord => "Discord",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.id() == value)
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The clients of the configured platforms.
#[derive(Clone, Default)]
pub struct BridgeClients {
    clients: BTreeMap<Platform, ProvisioningClient>,
}

impl BridgeClients {
    /// One client per platform section that has a `provisioning_url`.
    pub fn new(config: &BridgesConfig) -> Result<Self, String> {
        let mut clients = BTreeMap::new();
        for (name, section) in config.iter() {
            let Some(platform) = Platform::parse(name) else {
                continue;
            };
            if section.provisioning_url.is_some() {
                clients.insert(platform, ProvisioningClient::new(platform, section)?);
            }
        }
        Ok(Self { clients })
    }

    pub fn is_configured(&self, platform: Platform) -> bool {
        self.clients.contains_key(&platform)
    }

    /// The platform's client, or [`BridgeError::NotConfigured`].
    pub fn get(&self, platform: Platform) -> Result<&ProvisioningClient, BridgeError> {
        self.clients
            .get(&platform)
            .ok_or(BridgeError::NotConfigured { platform })
    }
}

#[derive(Clone)]
pub struct ProvisioningClient {
    platform: Platform,
    /// `provisioning_url` without a trailing slash, e.g. `http://127.0.0.1:29318/_matrix/provision`.
    base: String,
    secret: String,
    api: reqwest::Client,
    poll: reqwest::Client,
}

impl ProvisioningClient {
    pub fn new(platform: Platform, config: &BridgeConfig) -> Result<Self, String> {
        let base = config
            .provisioning_url
            .as_deref()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned();
        let build = |timeout: Option<Duration>| {
            let mut b = reqwest::Client::builder()
                .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(CONNECT_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none());
            if let Some(t) = timeout {
                b = b.timeout(t);
            }
            b.build()
                .map_err(|e| format!("HTTP client for the {} bridge: {e}", platform.name()))
        };
        Ok(Self {
            platform,
            base,
            secret: config
                .shared_secret
                .as_ref()
                .map(|s| s.expose().to_owned())
                .unwrap_or_default(),
            api: build(Some(REQUEST_TIMEOUT))?,
            poll: build(None)?,
        })
    }

    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// `GET /v3/whoami`: the bridge, its flows and the user's logins with their state.
    pub async fn whoami(&self, user_id: &str) -> Result<Whoami, BridgeError> {
        self.call(reqwest::Method::GET, "/v3/whoami", user_id, &[], None, None)
            .await
    }

    /// A `POST` with an empty JSON object whose answer does not matter.
    async fn post_empty(&self, user_id: &str, path: &str) -> Result<(), BridgeError> {
        let _: serde_json::Value = self
            .post(user_id, path, &serde_json::json!({}), None)
            .await?;
        Ok(())
    }

    /// A `POST` of `body`; `own_timeout` as in [`Self::call`].
    async fn post<T: DeserializeOwned>(
        &self,
        user_id: &str,
        path: &str,
        body: &serde_json::Value,
        own_timeout: Option<Duration>,
    ) -> Result<T, BridgeError> {
        let method = reqwest::Method::POST;
        self.call(method, path, user_id, &[], Some(body), own_timeout)
            .await
    }

    /// One call, with [`REQUEST_TIMEOUT`] unless `own_timeout` gives another (the
    /// `display_and_wait` long-poll, a group creation).
    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        user_id: &str,
        extra_query: &[(&str, &str)],
        body: Option<&serde_json::Value>,
        own_timeout: Option<Duration>,
    ) -> Result<T, BridgeError> {
        self.call_with_status(method, path, user_id, extra_query, body, own_timeout)
            .await
            .map(|(_, value)| value)
    }

    /// [`Self::call`] with the success status (`create_dm` says 201 for a new chat).
    async fn call_with_status<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        user_id: &str,
        extra_query: &[(&str, &str)],
        body: Option<&serde_json::Value>,
        own_timeout: Option<Duration>,
    ) -> Result<(u16, T), BridgeError> {
        let platform = self.platform;
        let url = self.url_for(path, user_id, extra_query)?;
        let (client, timeout) = match own_timeout {
            Some(t) => (&self.poll, t),
            None => (&self.api, REQUEST_TIMEOUT),
        };
        let mut req = client.request(method, url).bearer_auth(&self.secret);
        if own_timeout.is_some() {
            req = req.timeout(timeout);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                BridgeError::Timeout {
                    platform,
                    secs: timeout.as_secs(),
                }
            } else {
                BridgeError::Unreachable {
                    platform,
                    detail: describe(&e),
                }
            }
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(transport)?;
        if !status.is_success() {
            let err: types::RespError = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(BridgeError::Http {
                platform,
                status: status.as_u16(),
                errcode: err.errcode,
                message: err.error,
            });
        }
        let value = serde_json::from_slice(&bytes).map_err(|e| BridgeError::Decode {
            platform,
            detail: e.to_string(),
        })?;
        Ok((status.as_u16(), value))
    }
}

impl ProvisioningClient {
    /// The URL of `path` acting as `user_id`. The backstop: no path with a dot segment
    /// leaves, however it was built.
    fn url_for(
        &self,
        path: &str,
        user_id: &str,
        extra_query: &[(&str, &str)],
    ) -> Result<reqwest::Url, BridgeError> {
        let platform = self.platform;
        segment::check_path(path)
            .map_err(|error| BridgeError::InvalidSegment { platform, error })?;
        let mut query = vec![("user_id", user_id)];
        query.extend_from_slice(extra_query);
        reqwest::Url::parse_with_params(&format!("{}{path}", self.base), &query).map_err(|e| {
            BridgeError::Unreachable {
                platform,
                detail: format!("invalid provisioning URL: {e}"),
            }
        })
    }

    /// `value` as one path segment (`clients::segment`), refused naming `field`.
    pub(super) fn segment(&self, field: &str, value: &str) -> Result<String, BridgeError> {
        segment::segment(field, value).map_err(|error| BridgeError::InvalidSegment {
            platform: self.platform,
            error,
        })
    }
}

/// The innermost cause of a transport error ("Connection refused", …), which is what an
/// operator needs; reqwest's own text only says "error sending request".
fn describe(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if e.is_connect() {
        format!("cannot connect ({source})")
    } else {
        source.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_parse_only_the_three_ids() {
        assert_eq!(Platform::parse("whatsapp"), Some(Platform::Whatsapp));
        assert_eq!(
            Platform::parse("discord").map(Platform::name),
            Some("Discord")
        );
        assert_eq!(Platform::parse("WhatsApp"), None);
        assert_eq!(Platform::parse("signal"), None);
    }

    #[test]
    fn only_sections_with_a_provisioning_url_are_configured() {
        let config = BridgesConfig {
            whatsapp: Some(BridgeConfig {
                provisioning_url: Some("http://127.0.0.1:1/_matrix/provision/".into()),
                ..BridgeConfig::default()
            }),
            telegram: Some(BridgeConfig::default()),
            discord: None,
        };
        let clients = BridgeClients::new(&config).unwrap();
        assert!(clients.is_configured(Platform::Whatsapp));
        assert!(!clients.is_configured(Platform::Telegram));
        assert!(matches!(
            clients.get(Platform::Discord),
            Err(BridgeError::NotConfigured { .. })
        ));
        assert_eq!(
            clients.get(Platform::Whatsapp).unwrap().base,
            "http://127.0.0.1:1/_matrix/provision"
        );
    }
}
