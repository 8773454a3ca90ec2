//! Upstream failures (homeserver, bridges, AI service, the users' mail servers) as the API
//! reports them, in one place: 503 when the upstream cannot be reached or is not
//! configured, 502 when it refuses or answers nonsense. Transport and decoding detail (which can name an
//! upstream's address) goes to the log, not to the client.

use crate::clients::ai::AiError;
use crate::clients::mail::imap::ImapError;
use crate::clients::mail::smtp::SmtpError;
use crate::clients::matrix::MatrixError;
use crate::clients::provisioning::{BridgeError, Failure};
use crate::error::{AppError, ErrorCode};

impl From<AiError> for AppError {
    fn from(e: AiError) -> Self {
        match e {
            // The transport detail is reqwest's text with the service's URL: log only.
            AiError::Unreachable(_) => {
                tracing::warn!(error = %e, "AI service unreachable");
                AppError::Unavailable {
                    retry_after_secs: None,
                    code: ErrorCode::AiUnavailable,
                    message: "the AI service is unreachable".to_owned(),
                }
            }
            AiError::Timeout(_) => AppError::Unavailable {
                retry_after_secs: None,
                code: ErrorCode::AiUnavailable,
                message: e.to_string(),
            },
            AiError::Http { .. } | AiError::Malformed(_) => AppError::BadGateway {
                code: ErrorCode::AiError,
                message: e.to_string(),
            },
        }
    }
}

impl From<BridgeError> for AppError {
    fn from(e: BridgeError) -> Self {
        bridge_error(e, ErrorCode::NotFound)
    }
}

/// A bridge failure as the API reports it; `not_found_code` names what was not found
/// (`login_not_found`, `login_process_not_found`). The bridge's own message is passed on
/// where it explains the refusal; otherwise the text says what happened in our words.
pub fn bridge_error(e: BridgeError, not_found_code: ErrorCode) -> AppError {
    if let BridgeError::InvalidSegment { error, .. } = &e {
        return AppError::invalid(&error.field, error.reason);
    }
    let said = match &e {
        BridgeError::Http { message, .. } if !message.trim().is_empty() => Some(message.clone()),
        _ => None,
    };
    let failure = e.failure();
    refused_request(&e, failure, said.clone(), not_found_code)
        .unwrap_or_else(|| bridge_trouble(&e, failure, said))
}

/// The failures of the request itself (what it names, the login's state): 4xx, the
/// bridge's words when it gave some. None for the bridge's own trouble.
fn refused_request(
    e: &BridgeError,
    failure: Failure,
    said: Option<String>,
    not_found_code: ErrorCode,
) -> Option<AppError> {
    let name = e.platform().name();
    let or = |fallback: String| said.clone().unwrap_or(fallback);
    Some(match failure {
        Failure::InvalidInput => AppError::invalid("path", "not a path segment"),
        Failure::NotFound => AppError::NotFound {
            code: not_found_code,
            message: or(format!("not found at the {name} bridge")),
        },
        Failure::Rejected => AppError::BadRequest {
            code: ErrorCode::BridgeRejected,
            message: or(format!("the {name} bridge rejected the request")),
        },
        Failure::Expired => AppError::BadRequest {
            code: ErrorCode::LoginExpired,
            message: or("the login process timed out; start a new login".into()),
        },
        Failure::Ended => AppError::BadRequest {
            code: ErrorCode::LoginEnded,
            message: or("the login process has ended; start a new login".into()),
        },
        Failure::TooManyLogins => AppError::Conflict {
            code: ErrorCode::TooManyLogins,
            message: or(format!(
                "the {name} bridge allows no more logins; pass loginId to re-authenticate"
            )),
        },
        Failure::NotLoggedIn => AppError::Conflict {
            code: ErrorCode::NotLoggedIn,
            message: format!(
                "no {name} account is logged in on the bridge; connect one first \
                 (POST /api/bridges/{}/login/start)",
                e.platform().id()
            ),
        },
        _ => return None,
    })
}

/// The bridge's own trouble (not configured, unreachable, refusing us, failing): 503 or
/// 502, never blamed on the caller's input.
fn bridge_trouble(e: &BridgeError, failure: Failure, said: Option<String>) -> AppError {
    let name = e.platform().name();
    let or = |fallback: &str| said.clone().unwrap_or_else(|| fallback.to_owned());
    match failure {
        Failure::NotConfigured => AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::BridgeNotConfigured,
            message: format!(
                "the {name} bridge is not configured on this server \
                 ([bridges.{}] provisioning_url)",
                e.platform().id()
            ),
        },
        Failure::Unavailable => AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::BridgeUnavailable,
            message: e.public_message(),
        },
        Failure::Auth => AppError::BadGateway {
            code: ErrorCode::BridgeAuthFailed,
            message: format!(
                "the {name} bridge refused the request ({}); check the shared secret \
                 and the bridge's login permissions",
                or("unauthorized")
            ),
        },
        Failure::Unsupported => AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: format!(
                "the {name} bridge does not support this: {}",
                or("unrecognized request")
            ),
        },
        _ => AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: match e {
                BridgeError::Http { .. } => {
                    format!("the {name} bridge failed: {}", or("no details"))
                }
                other => other.public_message(),
            },
        },
    }
}

/// A homeserver failure as the API reports it: 503 when unreachable, 502 otherwise. The
/// transport and decoding detail go to the log only (they carry the homeserver's address).
pub fn homeserver_error(e: MatrixError) -> AppError {
    if !matches!(e, MatrixError::Http { .. }) {
        tracing::warn!(error = %e, "homeserver request failed");
    }
    let public = e.public_message();
    homeserver_failure(e, "the message", |_| public)
}

/// A homeserver failure while joining or leaving a room (`action`).
pub fn homeserver_room_error(action: &str, e: MatrixError) -> AppError {
    homeserver_failure(e, &format!("to {action} the room"), |e| match e {
        MatrixError::Unreachable(detail) => {
            format!("the Matrix homeserver is unreachable: {detail}")
        }
        MatrixError::Decode(detail) => {
            format!("unexpected answer from the Matrix homeserver: {detail}")
        }
        MatrixError::Http { .. } | MatrixError::InvalidSegment(_) => e.public_message(),
    })
}

/// 503 when unreachable, 502 otherwise; a refusal names what was `refused`, transport and
/// decoding failures read as `other` renders them.
fn homeserver_failure(
    e: MatrixError,
    refused: &str,
    other: impl FnOnce(&MatrixError) -> String,
) -> AppError {
    match e {
        MatrixError::Http {
            status,
            errcode,
            message,
        } => AppError::BadGateway {
            code: ErrorCode::HomeserverError,
            message: format!(
                "the Matrix homeserver refused {refused} ({status} {errcode}): {message}"
            ),
        },
        MatrixError::Unreachable(_) => AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::HomeserverUnavailable,
            message: other(&e),
        },
        MatrixError::Decode(_) => AppError::BadGateway {
            code: ErrorCode::HomeserverError,
            message: other(&e),
        },
        MatrixError::InvalidSegment(s) => AppError::invalid(&s.field, s.reason),
    }
}

/// An IMAP failure during an action: the server refused (502 `mail_action_failed` with its
/// words) or could not be reached (503 `mail_unreachable`); a host that now resolves to an
/// address this server does not connect to is 502 `mail_host_not_allowed`.
pub fn imap_error(e: ImapError) -> AppError {
    match e {
        ImapError::Refused(m) | ImapError::Protocol(m) | ImapError::Login(m) => {
            AppError::BadGateway {
                code: ErrorCode::MailActionFailed,
                message: format!("the mail server refused: {m}"),
            }
        }
        ImapError::Unreachable(m) => AppError::Unavailable {
            code: ErrorCode::MailUnreachable,
            message: format!("the mail server cannot be reached: {m}"),
            retry_after_secs: None,
        },
        ImapError::NotAllowed(m) => AppError::BadGateway {
            code: ErrorCode::MailHostNotAllowed,
            message: format!("imap.host: {m}"),
        },
        // Our spool failed, not the server: the detail goes to the log.
        ImapError::Source(m) => {
            tracing::error!(error = %m, "a spooled file could not be read while appending");
            AppError::internal(
                "a file of the message could not be read while it was being stored; \
                 the mail server stored nothing",
            )
        }
    }
}

/// An SMTP failure while sending: 502 `mail_send_failed` (or `mail_host_not_allowed`).
pub fn smtp_error(e: SmtpError) -> AppError {
    match e {
        SmtpError::Refused(m) | SmtpError::Config(m) => AppError::BadGateway {
            code: ErrorCode::MailSendFailed,
            message: format!("the SMTP server refused the message: {m}"),
        },
        SmtpError::Unreachable(m) => AppError::BadGateway {
            code: ErrorCode::MailSendFailed,
            message: format!("the SMTP server cannot be reached: {m}"),
        },
        SmtpError::NotAllowed(m) => AppError::BadGateway {
            code: ErrorCode::MailHostNotAllowed,
            message: format!("smtp.host: {m}"),
        },
        SmtpError::Source(m) => {
            tracing::error!(error = %m, "a spooled file could not be read while sending");
            AppError::BadGateway {
                code: ErrorCode::MailSendFailed,
                message: "a file of the message could not be read while it was being sent; \
                          the transfer was broken off before its end, so nothing was sent"
                    .into(),
            }
        }
    }
}

/// An IMAP failure while connecting a mailbox (`POST /api/email/accounts`): everything is
/// the user's input, so 400 — `mail_login_failed` with the server's words,
/// `mail_server_unreachable`, or `mail_host_not_allowed` naming `imap.host`.
pub fn imap_connect_error(e: ImapError) -> AppError {
    match e {
        ImapError::Login(m) | ImapError::Refused(m) | ImapError::Protocol(m) => {
            AppError::bad_request(ErrorCode::MailLoginFailed, format!("IMAP: {m}"))
        }
        ImapError::Unreachable(m) => {
            AppError::bad_request(ErrorCode::MailServerUnreachable, format!("IMAP: {m}"))
        }
        ImapError::NotAllowed(m) => {
            AppError::bad_request(ErrorCode::MailHostNotAllowed, format!("imap.host: {m}"))
        }
        // Connecting appends nothing.
        ImapError::Source(m) => AppError::internal(m),
    }
}

/// An SMTP failure while connecting a mailbox, as [`imap_connect_error`] (`smtp.host`).
pub fn smtp_connect_error(e: SmtpError) -> AppError {
    match e {
        // The check sends no message, so it has no source to fail.
        SmtpError::Refused(m) | SmtpError::Source(m) => {
            AppError::bad_request(ErrorCode::MailLoginFailed, format!("SMTP: {m}"))
        }
        SmtpError::Config(m) => AppError::invalid("smtp.host", m),
        SmtpError::Unreachable(m) => {
            AppError::bad_request(ErrorCode::MailServerUnreachable, format!("SMTP: {m}"))
        }
        SmtpError::NotAllowed(m) => {
            AppError::bad_request(ErrorCode::MailHostNotAllowed, format!("smtp.host: {m}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::provisioning::error::http;
    use crate::clients::provisioning::Platform;

    #[test]
    fn api_errors_carry_the_bridges_message_and_clear_codes() {
        let e = bridge_error(
            http(400, "FI.MAU.TELEGRAM.PHONE_CODE_INVALID"),
            ErrorCode::LoginNotFound,
        );
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            ("bridge_rejected", "msg")
        );
        assert_eq!(
            bridge_error(http(500, "M_UNKNOWN"), ErrorCode::LoginNotFound).code(),
            "bridge_error"
        );
        assert_eq!(
            bridge_error(http(404, "M_NOT_FOUND"), ErrorCode::LoginNotFound).code(),
            "login_not_found"
        );
        let down = BridgeError::Unreachable {
            platform: Platform::Telegram,
            detail: "connection refused".into(),
        };
        assert_eq!(AppError::from(down).code(), "bridge_unavailable");
        let e = bridge_error(
            http(400, "FI.MAU.NOT_LOGGED_IN"),
            ErrorCode::IdentifierNotFound,
        );
        assert_eq!(e.code(), "not_logged_in");
        assert!(matches!(e, AppError::Conflict { .. }), "{e:?}");
        let e = bridge_error(http(404, "M_NOT_FOUND"), ErrorCode::IdentifierNotFound);
        assert_eq!(e.code(), "identifier_not_found");
        let e = bridge_error(http(501, "M_UNRECOGNIZED"), ErrorCode::IdentifierNotFound);
        assert_eq!(e.code(), "bridge_error");
        assert!(e.to_string().contains("WhatsApp"), "{e}");
    }

    #[test]
    fn failures_map_to_upstream_errors() {
        assert_eq!(
            AppError::from(AiError::Timeout(10)).code(),
            "ai_unavailable"
        );
        let http = AiError::Http {
            status: 500,
            detail: "boom".into(),
        };
        assert_eq!(AppError::from(http).code(), "ai_error");
    }
}
