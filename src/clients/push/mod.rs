//! Apple Push Notification service client (token-based authentication).
//!
//! - Authentication: an ES256 JWT signed with the team's `.p8` key (PKCS#8 PEM, P-256),
//!   header `{"alg": "ES256", "kid": <key_id>}`, claims `{"iss": <team_id>, "iat": <now>}`.
//!   The token is cached and reused for at most 50 minutes (Apple refuses tokens older
//!   than an hour and throttles tokens renewed more often than every 20 minutes); a
//!   `403 ExpiredProviderToken` forces a renewal and one retry.
//! - Transport: `POST /3/device/{token}` over HTTP/2 to `https://api.push.apple.com`
//!   (devices registered as `production`) or `https://api.sandbox.push.apple.com`
//!   (`development`), with `authorization: bearer <jwt>`, `apns-topic: <bundle_id>`,
//!   `apns-push-type: alert` and `apns-priority: 10`.
//! - `[push] endpoint` replaces both hosts (a test stand-in or a relay). An `http://`
//!   endpoint is spoken to with HTTP/2 prior knowledge (h2c), as APNs only speaks HTTP/2.
//! - A 410, or a 400 with reason `BadDeviceToken` / `Unregistered`, means the device token
//!   is dead: [`PushError::device_is_gone`] tells callers to forget the device.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;
use serde_json::Value;

use crate::config::{PushConfig, PushEnvironment};

mod message;

pub use message::{Notification, PushError};

pub const PRODUCTION_URL: &str = "https://api.push.apple.com";
pub const SANDBOX_URL: &str = "https://api.sandbox.push.apple.com";

/// A provider token is reused for this long at most.
pub const JWT_MAX_AGE: Duration = Duration::from_secs(50 * 60);

/// Per-request timeout of a push.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: u64,
}

struct CachedJwt {
    token: String,
    issued: Instant,
}

pub struct PushClient {
    http: reqwest::Client,
    endpoint: Option<String>,
    key: EncodingKey,
    key_id: String,
    team_id: String,
    bundle_id: String,
    environment: PushEnvironment,
    jwt: Mutex<Option<CachedJwt>>,
}

impl std::fmt::Debug for PushClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushClient")
            .field("endpoint", &self.endpoint)
            .field("key_id", &self.key_id)
            .field("team_id", &self.team_id)
            .field("bundle_id", &self.bundle_id)
            .field("environment", &self.environment)
            .finish_non_exhaustive()
    }
}

impl PushClient {
    /// Reads the `.p8` key and builds the HTTP/2 client. Errors name the config key at fault.
    pub fn new(config: &PushConfig) -> Result<Self, String> {
        let key_file = config
            .key_file
            .as_ref()
            .ok_or("push.key_file is required for APNs")?;
        let pem = std::fs::read_to_string(key_file)
            .map_err(|e| format!("push.key_file {}: {e}", key_file.display()))?;
        let key = encoding_key_from_p8(&pem)
            .map_err(|e| format!("push.key_file {}: {e}", key_file.display()))?;
        Self::from_parts(
            key,
            config.key_id.as_deref().unwrap_or_default(),
            config.team_id.as_deref().unwrap_or_default(),
            config.bundle_id.as_deref().unwrap_or_default(),
            config.environment,
            config.endpoint.as_deref(),
        )
    }

    pub fn from_parts(
        key: EncodingKey,
        key_id: &str,
        team_id: &str,
        bundle_id: &str,
        environment: PushEnvironment,
        endpoint: Option<&str>,
    ) -> Result<Self, String> {
        for (name, value) in [
            ("push.key_id", key_id),
            ("push.team_id", team_id),
            ("push.bundle_id", bundle_id),
        ] {
            if value.trim().is_empty() {
                return Err(format!("{name} must not be empty"));
            }
        }
        let endpoint = match endpoint {
            None => None,
            Some(url) => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| format!("push.endpoint {url:?} is not a URL: {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err("push.endpoint must be an http:// or https:// URL".into());
                }
                Some(url.trim_end_matches('/').to_owned())
            }
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .http2_prior_knowledge()
            .connect_timeout(Duration::from_secs(5))
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("push HTTP client: {e}"))?;
        let client = Self {
            http,
            endpoint,
            key,
            key_id: key_id.trim().to_owned(),
            team_id: team_id.trim().to_owned(),
            bundle_id: bundle_id.trim().to_owned(),
            environment,
            jwt: Mutex::new(None),
        };
        // Sign once now so a wrong key is a startup error, not a failure at the first push.
        client
            .provider_token(true)
            .map_err(|e| format!("push.key_file: {e}"))?;
        Ok(client)
    }

    /// The configured environment (reported by `GET /api/devices/status`; the default of
    /// devices registered without one).
    pub fn environment(&self) -> PushEnvironment {
        self.environment
    }

    pub fn bundle_id(&self) -> &str {
        &self.bundle_id
    }

    fn base_url(&self, environment: PushEnvironment) -> &str {
        match (&self.endpoint, environment) {
            (Some(url), _) => url,
            (None, PushEnvironment::Production) => PRODUCTION_URL,
            (None, PushEnvironment::Development) => SANDBOX_URL,
        }
    }

    /// The cached provider token, renewed when older than [`JWT_MAX_AGE`] or when `renew`.
    fn provider_token(&self, renew: bool) -> Result<String, PushError> {
        let mut cached = self.jwt.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cached.as_ref() {
            if !renew && c.issued.elapsed() < JWT_MAX_AGE {
                return Ok(c.token.clone());
            }
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = None;
        header.kid = Some(self.key_id.clone());
        let claims = Claims {
            iss: &self.team_id,
            iat: crate::clock::unix_now(),
        };
        let token = jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| PushError::Signing(e.to_string()))?;
        *cached = Some(CachedJwt {
            token: token.clone(),
            issued: Instant::now(),
        });
        Ok(token)
    }

    /// Sends `notification` to one device token (lowercase hex) of `environment`.
    pub async fn send(
        &self,
        device_token: &str,
        environment: PushEnvironment,
        notification: &Notification,
    ) -> Result<(), PushError> {
        let payload = notification.payload();
        match self
            .send_once(device_token, environment, &payload, false)
            .await
        {
            Err(PushError::Rejected {
                status: 403,
                reason,
            }) if reason == "ExpiredProviderToken" || reason == "InvalidProviderToken" => {
                tracing::info!(%reason, "APNs refused the provider token; renewing it");
                self.send_once(device_token, environment, &payload, true)
                    .await
            }
            other => other,
        }
    }

    async fn send_once(
        &self,
        device_token: &str,
        environment: PushEnvironment,
        payload: &Value,
        renew: bool,
    ) -> Result<(), PushError> {
        let jwt = self.provider_token(renew)?;
        let url = format!(
            "{}/3/device/{}",
            self.base_url(environment),
            crate::clients::matrix::encode(device_token)
        );
        let resp = self
            .http
            .post(url)
            .header("authorization", format!("bearer {jwt}"))
            .header("apns-topic", &self.bundle_id)
            .header("apns-push-type", "alert")
            .header("apns-priority", "10")
            .json(payload)
            .send()
            .await
            .map_err(|e| PushError::Unreachable(e.to_string()))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let bytes = resp.bytes().await.unwrap_or_default();
        let reason = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["reason"].as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                status
                    .canonical_reason()
                    .unwrap_or("unknown error")
                    .to_owned()
            });
        Err(PushError::Rejected {
            status: status.as_u16(),
            reason,
        })
    }
}

/// An [`EncodingKey`] from the PKCS#8 PEM of a `.p8` file (`-----BEGIN PRIVATE KEY-----`).
pub fn encoding_key_from_p8(pem: &str) -> Result<EncodingKey, String> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let start = pem
        .find(BEGIN)
        .ok_or("no \"-----BEGIN PRIVATE KEY-----\" block (expected an APNs .p8 key)")?;
    let rest = &pem[start + BEGIN.len()..];
    let end = rest.find(END).ok_or("unterminated PEM block")?;
    let b64: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|e| format!("invalid base64 in the PEM block: {e}"))?;
    Ok(EncodingKey::from_ec_der(&der))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_KEY: &str = include_str!("../../../tests/support/apns_standin_key.p8");

    fn client(endpoint: Option<&str>) -> PushClient {
        PushClient::from_parts(
            encoding_key_from_p8(TEST_KEY).unwrap(),
            "KEY123",
            "TEAM123",
            "org.example.app",
            PushEnvironment::Production,
            endpoint,
        )
        .unwrap()
    }

    #[test]
    fn provider_tokens_are_es256_with_kid_and_iss_and_are_reused() {
        let c = client(None);
        let a = c.provider_token(false).unwrap();
        let b = c.provider_token(false).unwrap();
        assert_eq!(a, b, "reused within 50 minutes");
        let header = jsonwebtoken::decode_header(&a).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some("KEY123"));
        let claims: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(a.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["iss"], "TEAM123");
        assert!(claims["iat"].as_u64().unwrap() > 1_600_000_000);
        let renewed = c.provider_token(true).unwrap();
        assert_ne!(renewed, a, "ECDSA signatures are randomized");
    }

    #[test]
    fn hosts_follow_the_device_environment_unless_overridden() {
        let c = client(None);
        assert_eq!(c.base_url(PushEnvironment::Production), PRODUCTION_URL);
        assert_eq!(c.base_url(PushEnvironment::Development), SANDBOX_URL);
        let c = client(Some("http://127.0.0.1:9/"));
        assert_eq!(
            c.base_url(PushEnvironment::Development),
            "http://127.0.0.1:9"
        );
    }

    #[test]
    fn bad_keys_and_settings_are_startup_errors() {
        assert!(encoding_key_from_p8("nope").is_err());
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let key = encoding_key_from_p8(garbage).unwrap();
        assert!(
            PushClient::from_parts(key, "K", "T", "b", PushEnvironment::Production, None).is_err()
        );
        let key = encoding_key_from_p8(TEST_KEY).unwrap();
        assert!(PushClient::from_parts(
            key,
            "K",
            "T",
            "b",
            PushEnvironment::Production,
            Some("ftp://x")
        )
        .is_err());
    }
}
