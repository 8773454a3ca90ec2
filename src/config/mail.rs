//! `[mail]`: how sign-in codes leave the server (the log, or an SMTP relay).

use serde::{Deserialize, Serialize};

use super::Secret;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    /// Writes sign-in codes to the server log: the embedded default, for local use.
    Log,
    Smtp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    None,
    Starttls,
    Tls,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MailConfig {
    pub transport: MailTransport,
    pub from: String,
    pub smtp_host: Option<String>,
    pub smtp_port: Option<u16>,
    pub smtp_security: SmtpSecurity,
    pub smtp_username: Option<String>,
    pub smtp_password: Option<Secret>,
}

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            transport: MailTransport::Log,
            from: "Switchboard <switchboard@localhost>".to_owned(),
            smtp_host: None,
            smtp_port: None,
            smtp_security: SmtpSecurity::Starttls,
            smtp_username: None,
            smtp_password: None,
        }
    }
}
