//! Outgoing mail: sign-in codes through SMTP (lettre) or, for local setups, the server log.
//!
//! The user's own mailboxes (issue #10) speak IMAP ([`imap`]) and SMTP ([`smtp`]).

pub mod dial;
pub mod imap;
pub mod smtp;
mod uids;

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::{Config, MailConfig, MailTransport, SmtpSecurity};

/// Says at start where sign-in codes go when they are only logged. With a non-loopback
/// listen address this is a WARN: whoever reads the log can sign in as anyone, which is
/// fine for a development machine and never for a server others reach. (Behind a reverse
/// proxy a loopback listen address is reachable too; `/health` reports `mail: log_only`
/// either way.)
pub fn announce_transport(config: &Config) {
    if config.mail.transport != MailTransport::Log {
        return;
    }
    let listen = config.server.listen;
    if listen.ip().is_loopback() {
        tracing::info!(
            %listen,
            "mail transport \"log\": sign-in codes are written to this log, not mailed \
             (development only; set [mail] transport = \"smtp\" for real use)"
        );
    } else {
        tracing::warn!(
            %listen,
            "INSECURE: mail transport \"log\" on a non-loopback address: sign-in codes are \
             written to this log instead of being mailed, so anyone who can read the log can \
             sign in as any user; set [mail] transport = \"smtp\" (this is for development only)"
        );
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("mail configuration: {0}")]
    Config(String),
    #[error("could not send mail: {0}")]
    Send(String),
}

#[derive(Clone)]
enum Transport {
    Log,
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

#[derive(Clone)]
pub struct Mailer {
    transport: Transport,
    from: Mailbox,
}

impl Mailer {
    pub fn new(config: &MailConfig) -> Result<Self, MailError> {
        let from: Mailbox = config
            .from
            .parse()
            .map_err(|e| MailError::Config(format!("mail.from: {e}")))?;
        let transport = match config.transport {
            MailTransport::Log => Transport::Log,
            MailTransport::Smtp => Transport::Smtp(smtp_transport(config)?),
        };
        Ok(Self { transport, from })
    }

    /// Sends a sign-in code. `purpose` words the message ("sign in", "add this account").
    pub async fn send_code(
        &self,
        to: &str,
        code: &str,
        purpose: &str,
        ttl: Duration,
    ) -> Result<(), MailError> {
        let minutes = ttl.as_secs().div_ceil(60);
        let subject = format!("Your Switchboard code: {code}");
        let body = format!(
            "Your code to {purpose} is:\n\n    {code}\n\nIt expires in {minutes} minutes and works once.\n\
             If you did not ask for it, ignore this message.\n"
        );
        match &self.transport {
            Transport::Log => {
                tracing::info!(to, code, purpose, "sign-in code (mail transport \"log\")");
                Ok(())
            }
            Transport::Smtp(smtp) => {
                let to: Mailbox = to
                    .parse()
                    .map_err(|e| MailError::Send(format!("recipient: {e}")))?;
                let message = Message::builder()
                    .from(self.from.clone())
                    .to(to)
                    .subject(subject)
                    .body(body)
                    .map_err(|e| MailError::Send(e.to_string()))?;
                smtp.send(message)
                    .await
                    .map_err(|e| MailError::Send(e.to_string()))?;
                Ok(())
            }
        }
    }
}

fn smtp_transport(config: &MailConfig) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
    let host = config
        .smtp_host
        .as_deref()
        .ok_or_else(|| MailError::Config("mail.smtp_host is required for smtp".into()))?;
    let tls_error =
        |e: lettre::transport::smtp::Error| MailError::Config(format!("smtp TLS setup: {e}"));
    let (builder, default_port) = match config.smtp_security {
        SmtpSecurity::None => (
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
            25,
        ),
        SmtpSecurity::Starttls => (
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host).map_err(tls_error)?,
            587,
        ),
        SmtpSecurity::Tls => (
            AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(tls_error)?,
            465,
        ),
    };
    let mut builder = builder
        .port(config.smtp_port.unwrap_or(default_port))
        .timeout(Some(Duration::from_secs(15)));
    if let Some(user) = &config.smtp_username {
        let password = config
            .smtp_password
            .as_ref()
            .map(|p| p.expose().to_owned())
            .unwrap_or_default();
        builder = builder.credentials(Credentials::new(user.clone(), password));
    }
    Ok(builder.build())
}
