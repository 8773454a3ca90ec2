//! SMTP client for the user's own mailboxes (lettre): the connection check done when an
//! account is connected, and sending. Protocol only.

use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

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
}

fn classify(e: lettre::transport::smtp::Error) -> SmtpError {
    if e.is_permanent() || e.is_transient() {
        SmtpError::Refused(e.to_string())
    } else {
        SmtpError::Unreachable(e.to_string())
    }
}

/// A transport for one account; an empty username means no AUTH.
pub fn transport(ep: &Endpoint) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpError> {
    let tls_error = |e: lettre::transport::smtp::Error| SmtpError::Config(e.to_string());
    let builder = match ep.security {
        Security::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&ep.host),
        Security::Starttls => {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&ep.host).map_err(tls_error)?
        }
        Security::Tls => {
            AsyncSmtpTransport::<Tokio1Executor>::relay(&ep.host).map_err(tls_error)?
        }
    };
    let mut builder = builder.port(ep.port).timeout(Some(Duration::from_secs(15)));
    if !ep.username.is_empty() {
        builder = builder.credentials(Credentials::new(ep.username.clone(), ep.password.clone()));
    }
    Ok(builder.build())
}

/// EHLO (and AUTH when credentials are set), then QUIT.
pub async fn check(ep: &Endpoint) -> Result<(), SmtpError> {
    match transport(ep)?.test_connection().await {
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
    envelope: lettre::address::Envelope,
    raw: &[u8],
) -> Result<(), SmtpError> {
    transport(ep)?
        .send_raw(&envelope, raw)
        .await
        .map(|_| ())
        .map_err(classify)
}
