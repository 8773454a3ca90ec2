//! Client for the Matrix homeserver's client-server API and Synapse's shared-secret
//! registration. One reqwest client per purpose: `api` for normal calls, `probe` with a
//! short timeout for health checks.

use std::time::Duration;

use hmac::{KeyInit, Mac};
use serde::Deserialize;
use serde_json::json;

use crate::config::MatrixConfig;

pub mod conversation;
mod devices;
pub mod directory;
pub mod e2ee;
mod groups;
pub mod history;
pub mod media;
pub mod preview;
mod rooms;
pub mod types;
pub use types::SyncResponse;

#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error("homeserver unreachable: {0}")]
    Unreachable(String),
    #[error("homeserver answered {status}: {errcode} {message}")]
    Http {
        status: u16,
        errcode: String,
        message: String,
    },
    #[error("unexpected homeserver response: {0}")]
    Decode(String),
    /// A value that cannot be a path segment (`.`, `..`, …); nothing was sent.
    #[error(transparent)]
    InvalidSegment(#[from] crate::clients::segment::InvalidSegment),
}

impl MatrixError {
    /// What clients may be told: names the homeserver, never its address. The transport
    /// detail (reqwest's text carries the request URL: internal host, port and path) and
    /// decoding detail belong in the log; the homeserver's own `errcode` and `error` are
    /// its answer to the user's request and stay.
    pub fn public_message(&self) -> String {
        match self {
            Self::Unreachable(_) => "the Matrix homeserver is unreachable".to_owned(),
            Self::Http {
                status,
                errcode,
                message,
            } => format!("the Matrix homeserver answered {status} {errcode}: {message}"),
            Self::Decode(_) => "unexpected answer from the Matrix homeserver".to_owned(),
            Self::InvalidSegment(e) => e.to_string(),
        }
    }

    pub fn errcode(&self) -> Option<&str> {
        match self {
            Self::Http { errcode, .. } => Some(errcode),
            _ => None,
        }
    }
}

/// A Matrix login: who, and the token to act as them.
#[derive(Debug, Clone, Deserialize)]
pub struct MatrixSession {
    pub user_id: String,
    pub access_token: String,
    #[serde(default)]
    pub device_id: Option<String>,
}

#[derive(Clone)]
pub struct MatrixClient {
    base: String,
    server_name: String,
    shared_secret: String,
    api: reqwest::Client,
    probe: reqwest::Client,
    /// Media up- and downloads: no overall timeout (a large file takes what it takes), a
    /// bound on each read instead.
    media: reqwest::Client,
}

impl MatrixClient {
    pub fn new(config: &MatrixConfig) -> Result<Self, MatrixError> {
        let build = |timeout: Duration| {
            reqwest::Client::builder()
                .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(Duration::from_secs(3))
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| MatrixError::Unreachable(e.to_string()))
        };
        Ok(Self {
            base: config.homeserver_url.trim_end_matches('/').to_owned(),
            server_name: config.server_name.clone(),
            shared_secret: config.registration_shared_secret.expose().to_owned(),
            api: build(Duration::from_secs(30))?,
            probe: build(Duration::from_secs(3))?,
            media: reqwest::Client::builder()
                .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(Duration::from_secs(3))
                .read_timeout(media::READ_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| MatrixError::Unreachable(e.to_string()))?,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// `GET /_matrix/client/versions` with the short probe timeout (health checks).
    pub async fn versions(&self) -> Result<Vec<String>, MatrixError> {
        #[derive(Deserialize)]
        struct Versions {
            versions: Vec<String>,
        }
        let url = format!("{}/_matrix/client/versions", self.base);
        let resp = self.probe.get(url).send().await.map_err(unreachable)?;
        let v: Versions = decode(resp).await?;
        Ok(v.versions)
    }

    /// Registers `localpart` through Synapse's shared-secret admin API
    /// (`/_synapse/admin/v1/register`, HMAC-SHA1 over nonce, user, password, admin flag).
    pub async fn register(
        &self,
        localpart: &str,
        password: &str,
    ) -> Result<MatrixSession, MatrixError> {
        #[derive(Deserialize)]
        struct Nonce {
            nonce: String,
        }
        let url = format!("{}/_synapse/admin/v1/register", self.base);
        let resp = self.api.get(&url).send().await.map_err(unreachable)?;
        let Nonce { nonce } = decode(resp).await?;
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(self.shared_secret.as_bytes())
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        for (i, part) in [nonce.as_str(), localpart, password, "notadmin"]
            .iter()
            .enumerate()
        {
            if i > 0 {
                mac.update(b"\0");
            }
            mac.update(part.as_bytes());
        }
        let body = json!({
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": false,
            "mac": hex::encode(mac.finalize().into_bytes()),
        });
        let resp = self
            .api
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }

    /// Password login (`m.login.password`), used when the account already exists.
    pub async fn login(
        &self,
        localpart: &str,
        password: &str,
    ) -> Result<MatrixSession, MatrixError> {
        self.login_device(localpart, password, "Switchboard").await
    }

    /// Password login as `user` (localpart or Matrix ID): a new device named `device_name`.
    pub async fn login_device(
        &self,
        user: &str,
        password: &str,
        device_name: &str,
    ) -> Result<MatrixSession, MatrixError> {
        let url = format!("{}/_matrix/client/v3/login", self.base);
        let body = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user},
            "password": password,
            "initial_device_display_name": device_name,
        });
        let resp = self
            .api
            .post(url)
            .json(&body)
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }

    /// Registers the account, or logs into it if it already exists.
    pub async fn register_or_login(
        &self,
        localpart: &str,
        password: &str,
    ) -> Result<MatrixSession, MatrixError> {
        match self.register(localpart, password).await {
            Err(e) if e.errcode() == Some("M_USER_IN_USE") => self.login(localpart, password).await,
            other => other,
        }
    }

    /// `GET /_matrix/client/v3/account/whoami` as the holder of `token`.
    pub async fn whoami(&self, token: &str) -> Result<String, MatrixError> {
        #[derive(Deserialize)]
        struct WhoAmI {
            user_id: String,
        }
        let resp = self
            .client_api(reqwest::Method::GET, token, "account/whoami")?
            .send()
            .await
            .map_err(unreachable)?;
        let w: WhoAmI = decode(resp).await?;
        Ok(w.user_id)
    }
}

impl MatrixClient {
    /// A client-server API request (`/_matrix/client/v3/{path}`) as the holder of `token`.
    /// A path with a dot or empty segment is refused before anything is sent
    /// (`clients::segment`).
    fn client_api(
        &self,
        method: reqwest::Method,
        token: &str,
        path: &str,
    ) -> Result<reqwest::RequestBuilder, MatrixError> {
        crate::clients::segment::check_path(path)?;
        Ok(self
            .api
            .request(method, format!("{}/_matrix/client/v3/{path}", self.base))
            .bearer_auth(token))
    }

    /// `PUT /_matrix/client/v3/{path}` with `content` as the holder of `token`, for the calls
    /// that answer `{event_id}` (a state event, a message, a redaction): that event id.
    async fn put_for_event_id(
        &self,
        token: &str,
        path: &str,
        content: &serde_json::Value,
    ) -> Result<String, MatrixError> {
        #[derive(serde::Deserialize)]
        struct Sent {
            event_id: String,
        }
        let resp = self
            .client_api(reqwest::Method::PUT, token, path)?
            .json(content)
            .send()
            .await
            .map_err(unreachable)?;
        let sent: Sent = decode(resp).await?;
        Ok(sent.event_id)
    }
}

pub use crate::clients::segment::encode;

/// The transport failure with its innermost cause (reqwest's own text stops at "error
/// sending request for url (…)"). For the log only: it contains the URL.
pub(crate) fn unreachable(e: reqwest::Error) -> MatrixError {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut innermost = None;
    let mut next = e.source();
    while let Some(cause) = next {
        innermost = Some(cause);
        next = cause.source();
    }
    if let Some(cause) = innermost {
        text.push_str(&format!(": {cause}"));
    }
    MatrixError::Unreachable(text)
}

/// The JSON answer of a homeserver call, or its Matrix error (`errcode`, `error`).
pub(crate) async fn decode<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
) -> Result<T, MatrixError> {
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(unreachable)?;
    if !status.is_success() {
        return Err(http_error(status.as_u16(), &bytes));
    }
    serde_json::from_slice(&bytes).map_err(|e| MatrixError::Decode(e.to_string()))
}

/// A non-success answer as its Matrix error (`errcode`, `error`).
pub(crate) fn http_error(status: u16, bytes: &[u8]) -> MatrixError {
    let parsed: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    MatrixError::Http {
        status,
        errcode: parsed["errcode"].as_str().unwrap_or("M_UNKNOWN").to_owned(),
        message: parsed["error"].as_str().unwrap_or_default().to_owned(),
    }
}
