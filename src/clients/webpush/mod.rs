//! Web Push delivery (RFC 8030) to the push services of browsers: one `POST` to the
//! subscription's endpoint with the payload encrypted for the browser ([`ece`], RFC 8291)
//! and a VAPID authorization ([`vapid`], RFC 8292).
//!
//! A push service is an untrusted party named by a browser, i.e. by a user: the endpoint
//! must be `https` and resolve to public addresses, unless `[push]
//! allow_private_endpoints` allows private ones (then plain `http` too, only to those);
//! the check runs at registration and again, through the client's own resolver, on every
//! connection (DNS rebinding). A push service that misbehaves cannot hold a sender: the
//! connection and the whole exchange have deadlines, redirects are not followed, and at
//! most [`MAX_RESPONSE_BYTES`] of an answer are read.

pub mod ece;
pub mod vapid;

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

use crate::clients::mail::dial::{self, PrivateHosts};
pub use ece::EceError;
pub use vapid::VapidKey;

/// The longest endpoint URL accepted.
pub const MAX_ENDPOINT_LEN: usize = 2048;
/// Bytes of a push service's answer read at most (for the log); the rest is dropped.
pub const MAX_RESPONSE_BYTES: usize = 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    Normal,
    High,
}

impl Urgency {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::High => "high",
        }
    }
}

/// Where a push goes: the subscription as the browser made it.
pub struct Target<'a> {
    pub endpoint: &'a str,
    /// The browser's P-256 public key (65 bytes).
    pub p256dh: &'a [u8],
    /// The browser's authentication secret (16 bytes).
    pub auth: &'a [u8],
}

/// The RFC 8030 headers of one push.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Seconds the push service keeps the message for an offline browser.
    pub ttl: u32,
    pub urgency: Urgency,
    /// Replaces an undelivered message with the same topic (≤ 32 base64url characters).
    pub topic: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WebPushError {
    /// 404 or 410: the subscription has expired or was removed; forget it.
    #[error("the push service says the subscription is gone (HTTP {0})")]
    Gone(u16),
    /// 429, 5xx, a timeout or a broken connection: worth trying again later.
    #[error("push service unavailable: {reason}")]
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Any other answer (4xx, a redirect): trying again would not help.
    #[error("the push service refused the message: HTTP {status} {detail}")]
    Rejected { status: u16, detail: String },
    /// The endpoint's host is not a place this server sends to.
    #[error("{0}")]
    NotAllowed(String),
    #[error("cannot encrypt the payload: {0}")]
    Payload(#[from] EceError),
    #[error("{0}")]
    Signing(String),
}

/// Resolves names for the push client with the SSRF rule of mail hosts: every address a
/// name has must be public or allowed by the policy.
struct PolicyResolver(PrivateHosts);

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = dial::resolve(name.as_str(), 0, &policy)
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

pub struct WebPushClient {
    http: reqwest::Client,
    policy: PrivateHosts,
    contact: Option<String>,
}

impl std::fmt::Debug for WebPushClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebPushClient")
            .field("policy", &self.policy)
            .field("contact", &self.contact)
            .finish_non_exhaustive()
    }
}

impl WebPushClient {
    /// `policy`: which non-public endpoint hosts are allowed; `contact`: the VAPID `sub`
    /// (a `mailto:` or `https:` URL); `timeout`: the deadline of one whole push.
    pub fn new(
        policy: PrivateHosts,
        contact: Option<String>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the endpoint's name itself, past the resolver's check.
            .no_proxy()
            .dns_resolver(PolicyResolver(policy.clone()))
            .build()
            .map_err(|e| format!("Web Push HTTP client: {e}"))?;
        Ok(Self {
            http,
            policy,
            contact,
        })
    }

    pub fn contact(&self) -> Option<&str> {
        self.contact.as_deref()
    }

    /// Checks an endpoint's form: an absolute `https` URL (or `http` when private hosts are
    /// allowed at all), with a host, no credentials, at most [`MAX_ENDPOINT_LEN`].
    pub fn parse_endpoint(&self, endpoint: &str) -> Result<Url, String> {
        if endpoint.len() > MAX_ENDPOINT_LEN {
            return Err(format!("must be at most {MAX_ENDPOINT_LEN} characters"));
        }
        let url = Url::parse(endpoint).map_err(|_| "must be an absolute URL".to_owned())?;
        match url.scheme() {
            "https" => {}
            "http" if self.policy != PrivateHosts::None => {}
            _ => return Err("must be an https:// URL".into()),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("must name a host".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not contain credentials".into());
        }
        Ok(url)
    }

    /// Resolves the endpoint's host and applies the SSRF rule: every address public or
    /// allowed by `[push] allow_private_endpoints`; plain `http` only to allowed non-public
    /// addresses (a push over the internet must be encrypted in transit too).
    pub async fn check_host(&self, url: &Url) -> Result<(), WebPushError> {
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = url.port_or_known_default().unwrap_or(443);
        let cleartext = url.scheme() == "http";
        dial::resolve_for(host, port, &self.policy, cleartext)
            .await
            .map(drop)
            .map_err(|e| match e {
                dial::DialError::Unresolvable(m) => WebPushError::Retry {
                    reason: m,
                    retry_after: None,
                },
                _ => WebPushError::NotAllowed(format!(
                    "{host} is not allowed as a push service on this server"
                )),
            })
    }

    /// Encrypts `payload` for `target` and posts it. `Ok` when the push service accepted
    /// it (201, or any 2xx).
    pub async fn send(
        &self,
        key: &VapidKey,
        target: &Target<'_>,
        payload: &[u8],
        delivery: &Delivery,
    ) -> Result<(), WebPushError> {
        let url = self
            .parse_endpoint(target.endpoint)
            .map_err(WebPushError::NotAllowed)?;
        self.check_host(&url).await?;
        let body = ece::encrypt(payload, target.p256dh, target.auth)?;
        let audience = url.origin().ascii_serialization();
        let authorization = key
            .authorization(&audience, self.contact(), crate::clock::unix_now())
            .map_err(WebPushError::Signing)?;
        let mut request = self
            .http
            .post(url)
            .header("authorization", authorization)
            .header("content-encoding", "aes128gcm")
            .header("content-type", "application/octet-stream")
            .header("ttl", delivery.ttl.to_string())
            .header("urgency", delivery.urgency.as_str());
        if let Some(topic) = &delivery.topic {
            request = request.header("topic", topic);
        }
        let resp = request.body(body).send().await.map_err(|e| {
            WebPushError::Retry {
                // Without the URL: it is the subscription's secret capability.
                reason: describe(&e),
                retry_after: None,
            }
        })?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        if resp.status().is_success() {
            return Ok(());
        }
        let detail = read_capped(resp).await;
        Err(match status {
            404 | 410 => WebPushError::Gone(status),
            429 | 500..=599 => WebPushError::Retry {
                reason: format!("HTTP {status} {detail}"),
                retry_after,
            },
            _ => WebPushError::Rejected { status, detail },
        })
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else {
        "the connection failed".into()
    }
}

/// At most [`MAX_RESPONSE_BYTES`] of the answer, as text for the log.
async fn read_capped(mut resp: reqwest::Response) -> String {
    let mut buf = Vec::new();
    while buf.len() < MAX_RESPONSE_BYTES {
        match resp.chunk().await {
            Ok(Some(chunk)) => buf.extend_from_slice(&chunk),
            _ => break,
        }
    }
    buf.truncate(MAX_RESPONSE_BYTES);
    String::from_utf8_lossy(&buf)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(policy: PrivateHosts) -> WebPushClient {
        WebPushClient::new(policy, None, Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn endpoint_forms() {
        let strict = client(PrivateHosts::None);
        assert!(strict
            .parse_endpoint("https://fcm.googleapis.com/fcm/send/abc")
            .is_ok());
        assert!(strict.parse_endpoint("http://127.0.0.1:9/x").is_err());
        assert!(strict.parse_endpoint("ftp://example.org/x").is_err());
        assert!(strict.parse_endpoint("/relative").is_err());
        assert!(strict
            .parse_endpoint("https://user:pw@example.org/")
            .is_err());
        let long = format!("https://example.org/{}", "a".repeat(MAX_ENDPOINT_LEN));
        assert!(strict.parse_endpoint(&long).is_err());
        let lax = client(PrivateHosts::All);
        assert!(lax.parse_endpoint("http://127.0.0.1:9/x").is_ok());
    }

    #[tokio::test]
    async fn private_hosts_are_refused_unless_allowed() {
        let strict = client(PrivateHosts::None);
        for url in [
            "https://127.0.0.1/x",
            "https://[::1]/x",
            "https://169.254.169.254/latest",
            "https://localhost:8443/x",
        ] {
            let u = Url::parse(url).unwrap();
            assert!(
                matches!(
                    strict.check_host(&u).await,
                    Err(WebPushError::NotAllowed(_))
                ),
                "{url}"
            );
        }
        let lax = client(PrivateHosts::All);
        let u = Url::parse("http://127.0.0.1:9/x").unwrap();
        assert!(lax.check_host(&u).await.is_ok());
        // Cleartext to a public address stays refused even when private hosts are allowed.
        let u = Url::parse("http://1.1.1.1/x").unwrap();
        assert!(matches!(
            lax.check_host(&u).await,
            Err(WebPushError::NotAllowed(_))
        ));
    }
}
