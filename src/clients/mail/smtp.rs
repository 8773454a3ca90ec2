//! SMTP client for the user's own mailboxes (lettre): the connection check done when an
//! account is connected, and sending. Protocol only.
//!
//! A message is sent in pieces (lettre's `message_iter`), so a large one is never held
//! whole: MAIL, RCPT and DATA go as lettre's own `send` issues them, then the pieces pass
//! lettre's DATA encoder (dot-stuffing) one at a time.

use std::io;
use std::time::Duration;

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use tokio::net::TcpStream;

use super::dial;
use super::imap::stream::{tls_stream, Capped, Halt};
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
    /// The message could not be read while it was being sent; the transaction was broken
    /// off before its end, so the server delivers nothing.
    #[error("{0}")]
    Source(String),
}

dial::from_dial_error!(SmtpError);

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
async fn open(ep: &Endpoint, cfg: &EmailConfig) -> Result<(AsyncSmtpConnection, Halt), SmtpError> {
    let deadline = cfg.timeout();
    let addrs = dial::resolve_for(
        &ep.host,
        ep.port,
        &cfg.allow_private_hosts,
        ep.security == Security::None,
    )
    .await?;
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
    let halt = capped.halt();
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
    Ok((conn, halt))
}

/// EHLO (and AUTH when credentials are set), then QUIT.
pub async fn check(ep: &Endpoint, cfg: &EmailConfig) -> Result<(), SmtpError> {
    let (mut conn, _) = open(ep, cfg).await?;
    let _ = tokio::time::timeout(cfg.timeout(), conn.quit()).await;
    Ok(())
}

/// Sends a message of `len` bytes, given in `pieces`, to the envelope's recipients (To, Cc
/// and Bcc); `ascii` says whether it needs no 8BITMIME. The message step's deadline grows
/// with the message (one more second per 64 KiB). A piece that fails (its source could not
/// be read) breaks the transaction off before the `.` that would end it: the server
/// delivers nothing, and the error is [`SmtpError::Source`].
pub async fn send(
    ep: &Endpoint,
    cfg: &EmailConfig,
    envelope: &Envelope,
    len: u64,
    ascii: bool,
    pieces: impl Iterator<Item = io::Result<Vec<u8>>> + Send,
) -> Result<(), SmtpError> {
    let (mut conn, halt) = open(ep, cfg).await?;
    let deadline = cfg.timeout() + Duration::from_secs(len / 65536);
    let mut failed = None;
    let pieces = Halting {
        pieces,
        failed: &mut failed,
        halt,
    };
    let sent = match tokio::time::timeout(deadline, transaction(&mut conn, envelope, ascii, pieces))
        .await
    {
        Ok(r) => r,
        Err(_) => Err(SmtpError::Unreachable(format!(
            "message: no answer within {} s",
            deadline.as_secs_f32()
        ))),
    };
    if let Some(e) = failed {
        let _ = tokio::time::timeout(cfg.timeout(), conn.abort()).await;
        return Err(SmtpError::Source(e.to_string()));
    }
    sent?;
    let _ = tokio::time::timeout(cfg.timeout(), conn.quit()).await;
    Ok(())
}

/// MAIL (with SMTPUTF8 / 8BITMIME when the message needs them, refused when the server
/// lacks them: lettre's checks), RCPT for each recipient, DATA, the pieces. A refusal
/// aborts the connection, as lettre's `send` does.
async fn transaction(
    conn: &mut AsyncSmtpConnection,
    envelope: &Envelope,
    ascii: bool,
    pieces: impl Iterator<Item = Vec<u8>>,
) -> Result<(), SmtpError> {
    let info = conn.server_info();
    let mut options = Vec::new();
    let addresses = envelope.from().into_iter().chain(envelope.to());
    if addresses.map(AsRef::<str>::as_ref).any(|a| !a.is_ascii()) {
        if !info.supports_feature(Extension::SmtpUtfEight) {
            return Err(SmtpError::Refused(
                "an address is not ASCII and the server does not offer SMTPUTF8".into(),
            ));
        }
        options.push(MailParameter::SmtpUtfEight);
    }
    if !ascii {
        if !info.supports_feature(Extension::EightBitMime) {
            return Err(SmtpError::Refused(
                "the message is not ASCII and the server does not offer 8BITMIME".into(),
            ));
        }
        options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    let result = async {
        conn.command(Mail::new(envelope.from().cloned(), options))
            .await?;
        for to in envelope.to() {
            conn.command(Rcpt::new(to.clone(), vec![])).await?;
        }
        conn.command(Data).await?;
        conn.message_iter(pieces).await
    }
    .await;
    if let Err(e) = result {
        conn.abort().await;
        return Err(classify(e));
    }
    Ok(())
}

/// The pieces as lettre takes them (plain bytes): the first failure is kept in `failed`,
/// the stream's writes are halted and the pieces end, so lettre's next write (at the
/// latest the `.` ending DATA) fails instead of completing a cut-off message.
struct Halting<'a, I> {
    pieces: I,
    failed: &'a mut Option<io::Error>,
    halt: Halt,
}

impl<I: Iterator<Item = io::Result<Vec<u8>>>> Iterator for Halting<'_, I> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.failed.is_some() {
            return None;
        }
        match self.pieces.next()? {
            Ok(piece) => Some(piece),
            Err(e) => {
                self.halt.pull();
                *self.failed = Some(e);
                None
            }
        }
    }
}
