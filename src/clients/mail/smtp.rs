//! SMTP client for the user's own mailboxes (lettre): the connection check done when an
//! account is connected, and sending. Protocol only.

use std::time::Duration;

use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use tokio::net::TcpStream;

use super::dial::{self, DialError};
use super::imap::stream::{tls_stream, Capped};
use super::imap::{Endpoint, MailStream, Security};
use crate::config::EmailConfig;

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

/// What an SMTP server may send over one connection (its answers are a few lines).
const MAX_SMTP_READ: usize = 1024 * 1024;

/// Runs one SMTP step under `deadline`.
async fn step<T>(
    what: &str,
    deadline: Duration,
    f: impl std::future::Future<Output = Result<T, lettre::transport::smtp::Error>>,
) -> Result<T, SmtpError> {
    match tokio::time::timeout(deadline, f).await {
        Ok(r) => r.map_err(classify),
        Err(_) => Err(SmtpError::Unreachable(format!(
            "{what}: no answer within {} s",
            deadline.as_secs_f32()
        ))),
    }
}

/// Connects to the checked address, greets (EHLO), STARTTLS when asked, AUTH when
/// credentials are set: each step under `[email] network_timeout`; TLS verifies the
/// certificate for the host name.
async fn open(ep: &Endpoint, cfg: &EmailConfig) -> Result<AsyncSmtpConnection, SmtpError> {
    let deadline = cfg.timeout();
    let addrs = dial::resolve(&ep.host, ep.port, &cfg.allow_private_hosts).await?;
    let at = format!("{}:{}", ep.host, ep.port);
    let tcp = match tokio::time::timeout(deadline, TcpStream::connect(&addrs[..])).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(SmtpError::Unreachable(format!("{at}: {e}"))),
        Err(_) => return Err(SmtpError::Unreachable(format!("{at}: connect timed out"))),
    };
    let stream = match ep.security {
        Security::Tls => match tokio::time::timeout(deadline, tls_stream(&ep.host, tcp)).await {
            Ok(s) => s.map_err(SmtpError::Unreachable)?,
            Err(_) => return Err(SmtpError::Unreachable("TLS handshake timed out".into())),
        },
        _ => MailStream::Plain(tcp),
    };
    let hello = ClientId::default();
    let capped = Box::new(Capped::new(stream, MAX_SMTP_READ));
    let mut conn = step(
        "greeting",
        deadline,
        AsyncSmtpConnection::connect_with_transport(capped, &hello),
    )
    .await?;
    if ep.security == Security::Starttls {
        let params =
            TlsParameters::new(ep.host.clone()).map_err(|e| SmtpError::Config(e.to_string()))?;
        step("STARTTLS", deadline, conn.starttls(params, &hello)).await?;
    }
    if !ep.username.is_empty() {
        let creds = Credentials::new(ep.username.clone(), ep.password.clone());
        let mechanisms = [Mechanism::Plain, Mechanism::Login];
        step("AUTH", deadline, conn.auth(&mechanisms, &creds)).await?;
    }
    Ok(conn)
}

/// EHLO (and AUTH when credentials are set), then QUIT.
pub async fn check(ep: &Endpoint, cfg: &EmailConfig) -> Result<(), SmtpError> {
    let mut conn = open(ep, cfg).await?;
    let _ = tokio::time::timeout(cfg.timeout(), conn.quit()).await;
    Ok(())
}

/// Sends `raw` as built, to the envelope recipients `to` (To, Cc and Bcc). The message
/// step's deadline grows with the message (one more second per 64 KiB).
pub async fn send(
    ep: &Endpoint,
    cfg: &EmailConfig,
    envelope: lettre::address::Envelope,
    raw: &[u8],
) -> Result<(), SmtpError> {
    let mut conn = open(ep, cfg).await?;
    let deadline = cfg.timeout() + Duration::from_secs(raw.len() as u64 / 65536);
    step("message", deadline, conn.send(&envelope, raw)).await?;
    let _ = tokio::time::timeout(cfg.timeout(), conn.quit()).await;
    Ok(())
}
