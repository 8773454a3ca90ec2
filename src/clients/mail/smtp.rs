//! SMTP client for the user's own mailboxes (lettre): the connection check done when an
//! account is connected, and sending. Protocol only.

use std::net::SocketAddr;
use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::dial::{self, DialError, PrivateHosts};
use super::imap::{Endpoint, Security};

#[derive(Debug, thiserror::Error)]
pub enum SmtpError {
    /// Bad settings (e.g. a host name TLS cannot use).
    #[error("{0}")]
    Config(String),
    /// The server refused (authentication, a recipient, the message): its own words.
    #[error("{0}")]
    Refused(String),
    /// No connection.
    #[error("{0}")]
    Unreachable(String),
    /// The host resolves to an address this server does not connect to ([`dial`]).
    #[error("{0}")]
    NotAllowed(String),
}

impl From<DialError> for SmtpError {
    fn from(e: DialError) -> Self {
        match e {
            DialError::NotAllowed { .. } => Self::NotAllowed(e.to_string()),
            DialError::Unresolvable(m) => Self::Unreachable(m),
        }
    }
}

fn classify(e: lettre::transport::smtp::Error) -> SmtpError {
    if e.is_permanent() || e.is_transient() {
        SmtpError::Refused(e.to_string())
    } else {
        SmtpError::Unreachable(e.to_string())
    }
}

/// A transport for one account that connects to `addr` (already resolved and checked)
/// while TLS still verifies the certificate for the host name; an empty username means
/// no AUTH.
fn transport(
    ep: &Endpoint,
    addr: SocketAddr,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpError> {
    let tls = |host: &str| {
        TlsParameters::new(host.to_owned()).map_err(|e| SmtpError::Config(e.to_string()))
    };
    let tls = match ep.security {
        Security::None => Tls::None,
        Security::Starttls => Tls::Required(tls(&ep.host)?),
        Security::Tls => Tls::Wrapper(tls(&ep.host)?),
    };
    let mut builder =
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(addr.ip().to_string())
            .port(addr.port())
            .tls(tls)
            .timeout(Some(Duration::from_secs(15)));
    if !ep.username.is_empty() {
        builder = builder.credentials(Credentials::new(ep.username.clone(), ep.password.clone()));
    }
    Ok(builder.build())
}

async fn checked(
    ep: &Endpoint,
    hosts: &PrivateHosts,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpError> {
    let addrs = dial::resolve(&ep.host, ep.port, hosts).await?;
    transport(ep, addrs[0])
}

/// EHLO (and AUTH when credentials are set), then QUIT.
pub async fn check(ep: &Endpoint, hosts: &PrivateHosts) -> Result<(), SmtpError> {
    match checked(ep, hosts).await?.test_connection().await {
        Ok(true) => Ok(()),
        Ok(false) => Err(SmtpError::Unreachable(format!(
            "{}:{} did not accept the connection",
            ep.host, ep.port
        ))),
        Err(e) => Err(classify(e)),
    }
}

/// Sends `message` as built, to the envelope recipients `to` (To, Cc and Bcc).
pub async fn send(
    ep: &Endpoint,
    hosts: &PrivateHosts,
    envelope: lettre::address::Envelope,
    raw: &[u8],
) -> Result<(), SmtpError> {
    checked(ep, hosts)
        .await?
        .send_raw(&envelope, raw)
        .await
        .map(|_| ())
        .map_err(classify)
}
