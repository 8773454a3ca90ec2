//! Typed provisioning errors and what each means for the caller ([`Failure`]); the
//! mapping onto the API error is in `services::upstream`.
//!
//! Bridges before mautrix-go v0.30 send many bridge-level errors as HTTP 500, and
//! `M_BAD_STATE` always as 500, so errors are classified by `errcode` first and by the
//! HTTP status only when the code says nothing.

use super::Platform;
use crate::clients::segment::InvalidSegment;

#[derive(Debug, Clone, thiserror::Error)]
pub enum BridgeError {
    /// The platform has no `provisioning_url` in `[bridges.<platform>]`.
    #[error("the {} bridge is not configured on this server", .platform.name())]
    NotConfigured { platform: Platform },
    /// Connection refused, DNS failure, TLS failure, connection reset.
    #[error("the {} bridge is unreachable: {detail}", .platform.name())]
    Unreachable { platform: Platform, detail: String },
    /// No answer within the request timeout.
    #[error("the {} bridge did not answer within {secs} s", .platform.name())]
    Timeout { platform: Platform, secs: u64 },
    /// The bridge answered with an error status.
    #[error("the {} bridge answered {status} {errcode}: {message}", .platform.name())]
    Http {
        platform: Platform,
        status: u16,
        errcode: String,
        message: String,
    },
    /// A success status with a body that is not the documented JSON.
    #[error("unexpected answer from the {} bridge: {detail}", .platform.name())]
    Decode { platform: Platform, detail: String },
    /// A value that cannot be a path segment (`.`, `..`, …); nothing was sent.
    #[error("{error}")]
    InvalidSegment {
        platform: Platform,
        error: InvalidSegment,
    },
}

/// What an error means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The caller's value cannot be sent (a dot path segment); nothing was sent.
    InvalidInput,
    NotConfigured,
    /// Unreachable or timed out: worth retrying later.
    Unavailable,
    /// The bridge refused switchboard's shared secret or the user's login permission.
    Auth,
    /// Unknown login or login process.
    NotFound,
    /// The bridge refused the submitted data (bad step data, wrong step, bad flow).
    Rejected,
    /// The login process timed out at the bridge.
    Expired,
    /// The login process was already finished or cancelled.
    Ended,
    /// The bridge's `max_logins` is reached.
    TooManyLogins,
    /// The user has no login on the bridge (`FI.MAU.NOT_LOGGED_IN`).
    NotLoggedIn,
    /// The bridge lacks the capability or endpoint (`M_UNRECOGNIZED`, e.g. a network
    /// that cannot list contacts).
    Unsupported,
    /// The bridge failed (5xx) or answered something unexpected.
    Upstream,
}

impl BridgeError {
    /// What clients may be told: names the bridge, never its address. Transport and
    /// decoding detail (which can name the provisioning host) is logged here instead; the
    /// bridge's own `errcode` and `error` stay.
    pub fn public_message(&self) -> String {
        let name = self.platform().name();
        match self {
            Self::Unreachable { .. } => {
                tracing::warn!(error = %self, "bridge unreachable");
                format!("the {name} bridge is unreachable")
            }
            Self::Decode { .. } => {
                tracing::warn!(error = %self, "unexpected answer from a bridge");
                format!("unexpected answer from the {name} bridge")
            }
            other => other.to_string(),
        }
    }

    pub fn platform(&self) -> Platform {
        match self {
            Self::NotConfigured { platform }
            | Self::Unreachable { platform, .. }
            | Self::Timeout { platform, .. }
            | Self::Http { platform, .. }
            | Self::Decode { platform, .. }
            | Self::InvalidSegment { platform, .. } => *platform,
        }
    }

    pub fn failure(&self) -> Failure {
        match self {
            Self::NotConfigured { .. } => Failure::NotConfigured,
            Self::Unreachable { .. } | Self::Timeout { .. } => Failure::Unavailable,
            Self::Decode { .. } => Failure::Upstream,
            Self::InvalidSegment { .. } => Failure::InvalidInput,
            Self::Http {
                status, errcode, ..
            } => classify(*status, errcode),
        }
    }
}

fn classify(status: u16, errcode: &str) -> Failure {
    match errcode {
        "M_NOT_FOUND" => return Failure::NotFound,
        "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN" | "M_FORBIDDEN" => return Failure::Auth,
        "M_BAD_STATE" | "M_NOT_JSON" | "M_BAD_JSON" | "M_INVALID_PARAM" | "M_MISSING_PARAM" => {
            return Failure::Rejected
        }
        "FI.MAU.BRIDGE.LOGIN_ALREADY_FINISHED" | "FI.MAU.BRIDGE.LOGIN_CANCELLED" => {
            return Failure::Ended
        }
        "FI.MAU.BRIDGE.TOO_MANY_LOGINS" => return Failure::TooManyLogins,
        "M_UNRECOGNIZED" => return Failure::Unsupported,
        "FI.MAU.NOT_LOGGED_IN" => return Failure::NotLoggedIn,
        code if code.ends_with("LOGIN_TIMED_OUT") || code.ends_with("LOGIN_TIMEOUT") => {
            return Failure::Expired
        }
        _ => {}
    }
    match status {
        401 | 403 => Failure::Auth,
        404 => Failure::NotFound,
        410 => Failure::Ended,
        400..=499 => Failure::Rejected,
        _ => Failure::Upstream,
    }
}

/// A WhatsApp bridge error answer with the message `msg`, for tests here and in services.
#[cfg(test)]
pub fn http(status: u16, errcode: &str) -> BridgeError {
    BridgeError::Http {
        platform: Platform::Whatsapp,
        status,
        errcode: errcode.into(),
        message: "msg".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_errcode_before_status() {
        assert_eq!(http(500, "M_BAD_STATE").failure(), Failure::Rejected);
        assert_eq!(
            http(500, "FI.MAU.BRIDGE.LOGIN_TIMED_OUT").failure(),
            Failure::Expired
        );
        assert_eq!(
            http(400, "FI.MAU.WHATSAPP.LOGIN_TIMEOUT").failure(),
            Failure::Expired
        );
        assert_eq!(
            http(500, "FI.MAU.BRIDGE.TOO_MANY_LOGINS").failure(),
            Failure::TooManyLogins
        );
        assert_eq!(
            http(400, "FI.MAU.TELEGRAM.PHONE_CODE_INVALID").failure(),
            Failure::Rejected
        );
        assert_eq!(http(404, "M_NOT_FOUND").failure(), Failure::NotFound);
        assert_eq!(http(401, "M_UNKNOWN_TOKEN").failure(), Failure::Auth);
        assert_eq!(http(500, "M_UNKNOWN").failure(), Failure::Upstream);
        assert_eq!(http(502, "").failure(), Failure::Upstream);
        assert_eq!(http(501, "M_UNRECOGNIZED").failure(), Failure::Unsupported);
        assert_eq!(
            http(400, "FI.MAU.NOT_LOGGED_IN").failure(),
            Failure::NotLoggedIn
        );
    }
}
