//! Typed configuration: built-in defaults → TOML file → `SWITCHBOARD__SECTION__KEY`
//! environment → CLI flags, validated once at startup.
//!
//! Every key is documented in `config.example.toml`; a test parses that file so the two
//! cannot drift apart. Unknown keys and bad values are startup errors that name the key.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod email;
mod integrations;
mod mail;
pub mod matrix_ids;
mod media;
mod server;
pub use email::{EmailConfig, PrivateHosts};
pub use integrations::{AiConfig, BridgeConfig, BridgesConfig, PushConfig, PushEnvironment};
pub use mail::{MailConfig, MailTransport, SmtpSecurity};
pub use media::MediaConfig;
pub use server::{ServerConfig, TrustedProxies};

/// Environment prefix; `__` separates nesting levels (`SWITCHBOARD__RATE_LIMIT__REQUESTS=100`).
pub const ENV_PREFIX: &str = "SWITCHBOARD__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("config key `{key}`: {message}")]
    Key { key: String, message: String },
}

impl ConfigError {
    fn key(key: &str, message: impl Into<String>) -> Self {
        Self::Key {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub auth: AuthConfig,
    pub mail: MailConfig,
    pub matrix: Option<MatrixConfig>,
    pub bridges: BridgesConfig,
    pub ai: Option<AiConfig>,
    pub push: Option<PushConfig>,
    pub rate_limit: RateLimitConfig,
    pub email: EmailConfig,
    pub subscriptions: SubscriptionsConfig,
    pub log: LogConfig,
    pub media: MediaConfig,
    pub metrics: MetricsConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Off,
    Normal,
    Full,
    Extra,
}

impl Synchronous {
    pub fn pragma(self) -> &'static str {
        match self {
            Self::Off => "OFF",
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
            Self::Extra => "EXTRA",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    /// Defaults to `<data_dir>/master.key`.
    pub master_key_file: Option<PathBuf>,
    /// `full` by default so that an acknowledged write survives power loss, not only `kill -9`.
    pub synchronous: Synchronous,
    /// Memory (MiB) for rendered read pages (history, room lists, single rooms, statistics),
    /// served again until the next write to the database; 0 turns the cache off.
    pub history_cache_mb: u32,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./data"),
            master_key_file: None,
            synchronous: Synchronous::Full,
            history_cache_mb: 16,
        }
    }
}

impl StorageConfig {
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("switchboard.db")
    }

    pub fn master_key_path(&self) -> PathBuf {
        self.master_key_file
            .clone()
            .unwrap_or_else(|| self.data_dir.join("master.key"))
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub access_token_ttl: HumanDuration,
    pub refresh_token_ttl: HumanDuration,
    pub code_ttl: HumanDuration,
    /// E-mail addresses that become administrators when they sign in.
    pub admin_emails: Vec<String>,
    /// Wrong sign-in codes one address accepts per 24 h before 429 `too_many_attempts`.
    pub max_code_failures: u32,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            access_token_ttl: HumanDuration::from_secs(15 * 60),
            refresh_token_ttl: HumanDuration::from_secs(30 * 86_400),
            code_ttl: HumanDuration::from_secs(10 * 60),
            admin_emails: Vec::new(),
            max_code_failures: 20,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    pub homeserver_url: String,
    pub server_name: String,
    pub registration_shared_secret: Secret,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitConfig {
    pub requests: u32,
    pub window: HumanDuration,
    /// Budget per client address for the web app's static files, per `window`; counted
    /// apart from `requests`, so loading the app never spends the API's budget.
    pub static_requests: u32,
    /// `POST /api/chats` calls per user per hour (all tokens and sessions together).
    pub new_chats_per_hour: u32,
    /// `GET /api/preview` calls per user per minute (all tokens and sessions together):
    /// each may make the homeserver fetch a web page.
    pub previews_per_minute: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            requests: 300,
            window: HumanDuration::from_secs(60),
            static_requests: 2000,
            new_chats_per_hour: 20,
            previews_per_minute: 30,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultSubscription {
    Active,
    None,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubscriptionsConfig {
    /// Personal-token tier given to new users.
    pub default: DefaultSubscription,
}

impl Default for SubscriptionsConfig {
    fn default() -> Self {
        Self {
            default: DefaultSubscription::Active,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter such as `info` or `switchboard=debug,info`; `RUST_LOG` wins when set.
    pub level: String,
    /// One line per request (method, route template, status, duration; never the URI or
    /// its query), target `switchboard::access`.
    pub access: bool,
}

/// `[metrics]`: `GET /metrics` is always on the main listener for administrators; `listen`
/// also serves it without authentication on a separate (typically loopback) address.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    pub listen: Option<std::net::SocketAddr>,
    /// Allows `listen` on an address that is neither loopback nor private (see
    /// [`MetricsConfig::listen_is_internal`]); refused at start otherwise.
    pub allow_public: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".to_owned(),
            access: true,
        }
    }
}

/// A duration written as "15m", "30d", "60s" (humantime syntax).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub const fn from_secs(secs: u64) -> Self {
        Self(Duration::from_secs(secs))
    }
}

impl fmt::Debug for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(text.trim())
            .map(HumanDuration)
            .map_err(|e| {
                serde::de::Error::custom(format!(
                    "invalid duration {text:?} ({e}); write e.g. \"60s\", \"15m\", \"30d\""
                ))
            })
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

/// A secret value: never printed by `Debug` or serialized back out.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

/// Values given on the command line; they win over the file and the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_path: Option<PathBuf>,
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub log_format: Option<LogFormat>,
}

impl Config {
    /// Loads the layered configuration. `env` is the process environment (a parameter so
    /// tests can pass their own).
    pub fn load(
        overrides: &Overrides,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut tree = match config_file(overrides)? {
            Some(path) => read_toml(&path)?,
            None => toml::Table::new(),
        };
        for (name, value) in env {
            if let Some(rest) = name.strip_prefix(ENV_PREFIX) {
                let path: Vec<String> = rest.split("__").map(str::to_lowercase).collect();
                set_path(&mut tree, &path, env_value(&value), &name)?;
            }
        }
        if let Some(listen) = &overrides.listen {
            set_cli(&mut tree, "server", "listen", listen.clone())?;
        }
        if let Some(dir) = &overrides.data_dir {
            set_cli(&mut tree, "storage", "data_dir", dir.display().to_string())?;
        }
        if let Some(format) = overrides.log_format {
            let text = if format == LogFormat::Json {
                "json"
            } else {
                "text"
            };
            set_cli(&mut tree, "log", "format", text.to_owned())?;
        }
        let config: Config = serde_path_to_error::deserialize(toml::Value::Table(tree))
            .map_err(|e| ConfigError::key(&e.path().to_string(), e.inner().to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Base URL users are told to point clients at.
    pub fn public_base_url(&self) -> String {
        self.server
            .base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.server.listen))
    }
}

impl BridgesConfig {
    /// The three platform sections by name, present or not.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &BridgeConfig)> {
        [
            ("whatsapp", &self.whatsapp),
            ("telegram", &self.telegram),
            ("discord", &self.discord),
        ]
        .into_iter()
        .filter_map(|(name, c)| c.as_ref().map(|c| (name, c)))
    }
}

mod sources;
mod validate;
use sources::*;

#[cfg(test)]
mod tests;
