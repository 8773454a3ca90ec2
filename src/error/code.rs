//! The error codes sent in the `error` field of every error body: one variant per
//! documented code, so a code cannot be misspelt and the list is in one place.

/// A machine-readable error code; [`ErrorCode::as_str`] is the string clients see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 400: a field is missing or invalid; the message names it (`"<field>: <why>"`).
    InvalidRequest,
    /// 400: a request poem refused before it reached a handler, for a reason without its own code.
    BadRequest,
    /// 400: the sign-in code is wrong or expired.
    InvalidCode,
    /// 400: a sealed scheduled-message body that does not open.
    InvalidEncryption,
    /// 400: a bridge login flow the bridge does not offer.
    InvalidFlow,
    /// 400: an unknown bridge platform.
    InvalidPlatform,
    /// 400: a public key that is not a valid key.
    InvalidPublicKey,
    /// 400: a send time in the past or too far ahead.
    InvalidScheduleTime,
    /// 400: a login step that is not the current one.
    InvalidStep,
    /// 400: the bridge refused the submitted data.
    BridgeRejected,
    /// 400: the bridge login process timed out.
    LoginExpired,
    /// 400: the bridge login process already finished or was cancelled.
    LoginEnded,
    /// 400: a destructive request without its confirmation.
    ConfirmationRequired,
    /// 400: the primary account cannot be removed.
    CannotRemovePrimary,
    /// 400: a recipient that names no known room.
    RecipientUnresolved,
    /// 400: the user has the most e-mail signatures allowed.
    TooManySignatures,
    /// 400: the user has connected the most mailboxes allowed.
    TooManyMailAccounts,
    /// 400: the mailbox's server could not be reached while connecting it.
    MailServerUnreachable,
    /// 400: the mailbox's IMAP or SMTP server refused the login (its words in the message).
    MailLoginFailed,
    /// 400 when connecting, 502 later: the mail server's host resolves to a private,
    /// loopback or link-local address the operator has not allowed (`[email]
    /// allow_private_hosts`).
    MailHostNotAllowed,
    /// 400: a Web Push endpoint whose host resolves to a private, loopback or link-local
    /// address the operator has not allowed (`[push] allow_private_endpoints`).
    PushEndpointNotAllowed,
    /// 400: the user has the most Web Push subscriptions allowed.
    TooManyPushSubscriptions,
    /// 401: no, or no longer valid, credentials.
    Unauthorized,
    /// 401: a personal token that was revoked.
    TokenRevoked,
    /// 403: a request poem refused as forbidden.
    Forbidden,
    /// 403: the homeserver refused a change to a room (power levels, not a member); the
    /// message carries its reason.
    NotPermitted,
    /// 403: a route a personal API token may not use (default deny).
    ForbiddenForApiToken,
    /// 403: a personal token whose owner has no active subscription.
    SubscriptionExpired,
    /// 403: a route for administrators only.
    AdminRequired,
    /// 403: an edit or deletion for everyone of another user's message.
    NotOwnMessage,
    /// 403: a web-session request (`X-Switchboard-Client: web`) sent from another site
    /// (`Origin` or `Sec-Fetch-Site`).
    CrossSiteRequest,
    /// 404: no such resource (or route).
    NotFound,
    /// 404: the bridge does not know this login.
    LoginNotFound,
    /// 404: no such bridge login process.
    LoginProcessNotFound,
    /// 404: nobody on the platform has this phone number, username, … (`POST /api/chats`).
    IdentifierNotFound,
    /// 405: the route exists, the method does not.
    MethodNotAllowed,
    /// 409: the account is already linked to this user.
    AccountAlreadyAdded,
    /// 409: the account group changed during the request.
    AccountGroupChanged,
    /// 409: the account belongs to another group.
    AccountInOtherGroup,
    /// 409: keys are registered already.
    KeysAlreadyRegistered,
    /// 409: the user has no keys registered.
    KeysNotRegistered,
    /// 409: the keys were deleted; the user signs in again in the native app (spelled as the contract spells it).
    NoSigningKey,
    /// 409: the user has no Matrix session yet.
    MatrixAccountMissing,
    /// 409: the room is not an invitation.
    NotInvited,
    /// 409: the platform's bridge cannot do this (e.g. it creates no groups).
    NotSupported,
    /// 409: the user has not joined the room.
    NotJoined,
    /// 409: the scheduled message is no longer pending.
    NotPending,
    /// 409: a room is in another linked group already.
    RoomsAlreadyLinked,
    /// 409: the bridge allows no more logins.
    TooManyLogins,
    /// 409: the user has no login on that bridge.
    NotLoggedIn,
    /// 409: the transaction id was used for another message.
    TxnIdConflict,
    /// 409: the user name is taken.
    UsernameTaken,
    /// 409: a mailbox (label) with this name exists already.
    LabelExists,
    /// 409: a verification action that does not fit the verification's state.
    VerificationState,
    /// 413: the request body exceeds the limit.
    PayloadTooLarge,
    /// 415: a body that is not JSON.
    UnsupportedMediaType,
    /// 429: too many requests in the window (with `Retry-After`).
    RateLimited,
    /// 429: too many sign-in attempts (with `Retry-After`).
    TooManyAttempts,
    /// 429: the device limit is reached.
    TooManyDevices,
    /// 429: too many open event streams.
    TooManyStreams,
    /// 429: the personal-token limit is reached.
    TooManyTokens,
    /// 500: the detail is logged, never sent.
    InternalError,
    /// 501: not available in this build.
    NotImplemented,
    /// 502: the AI service failed or answered nonsense.
    AiError,
    /// 502: the bridge refused the shared secret or the login permission.
    BridgeAuthFailed,
    /// 502: the bridge failed.
    BridgeError,
    /// 502: the homeserver refused or answered nonsense.
    HomeserverError,
    /// 502: APNs refused the notification.
    PushRejected,
    /// 502: the mail was sent but could not be saved to the Sent mailbox.
    MailAppendFailed,
    /// 502: the SMTP server refused or could not be reached; nothing was sent.
    MailSendFailed,
    /// 409: an outgoing message held for undo is already on its way or sent.
    AlreadySent,
    /// 409: the message a forward carries the files of (or one of its files) is no longer
    /// on the mail server; nothing was sent.
    ForwardedMessageGone,
    /// 502: the IMAP server refused an action (its words in the message).
    MailActionFailed,
    /// 409: a stored device token sealed under a deleted key.
    DeviceTokenUnreadable,
    /// 409: the recovery key was handed out already (`POST /api/e2ee/recovery-key`; a new
    /// one only with `{"reset": true}`).
    RecoveryKeyShown,
    /// 403: a recovery key reset without proof of the person (the current recovery key or
    /// a fresh sign-in code), or with a wrong one.
    ReauthRequired,
    /// 502: an encrypted attachment's bytes do not match the SHA-256 its event names;
    /// nothing of it was sent.
    AttachmentCorrupt,
    /// 429: the user's concurrent media uploads are at their cap.
    TooManyUploads,
    /// 503: the media spool space (`[media] max_spool_mb`) is full (with `Retry-After`).
    SpoolFull,
    /// 408: the request body did not arrive within its deadline.
    RequestTimeout,
    /// 503: the server is saturated; retry (with `Retry-After`).
    Busy,
    /// 503: the AI service is unreachable.
    AiUnavailable,
    /// 503: the bridge is not configured on this server.
    BridgeNotConfigured,
    /// 503: the bridge is unreachable.
    BridgeUnavailable,
    /// 503: the homeserver is unreachable or not configured.
    HomeserverUnavailable,
    /// 503: end-to-end encryption of a send failed; nothing was sent.
    EncryptionUnavailable,
    /// 503 (worker only): the user's crypto store was destroyed under a running sync session.
    CryptoStoreReplaced,
    /// 503: the mail transport failed.
    MailUnavailable,
    /// 503: no `[push]` section.
    PushNotConfigured,
    /// 503: APNs is unreachable.
    PushUnavailable,
    /// 503: the route needs an AI service and `[ai]` is not configured.
    AiNotConfigured,
    /// 403: `/mcp` was called with a native session instead of a personal token.
    PersonalTokenRequired,
    /// 403: an MCP tool that acts (sends, creates, changes, deletes) called with a token
    /// that was not opted in to acting tools (`PATCH /api/developer/tokens/{id}`
    /// `{"mcpActions": true}`).
    McpActionsNotEnabled,
    /// 503: the mailbox's IMAP server cannot be reached; cached mail stays readable.
    MailUnreachable,
    /// 400: a link preview was asked for a URL whose scheme is not `http` or `https`.
    UnsupportedUrlScheme,
    /// 403: link previews are off in the user's settings (`PUT /api/settings/previews`).
    PreviewsDisabled,
    /// 404: the homeserver could not preview the URL (unreachable, refused or not a page).
    NoPreview,
}

impl ErrorCode {
    /// Every code, for tests and documentation.
    pub const ALL: &'static [ErrorCode] = &[
        Self::InvalidRequest,
        Self::BadRequest,
        Self::InvalidCode,
        Self::InvalidEncryption,
        Self::InvalidFlow,
        Self::InvalidPlatform,
        Self::InvalidPublicKey,
        Self::InvalidScheduleTime,
        Self::InvalidStep,
        Self::BridgeRejected,
        Self::LoginExpired,
        Self::LoginEnded,
        Self::ConfirmationRequired,
        Self::CannotRemovePrimary,
        Self::RecipientUnresolved,
        Self::TooManySignatures,
        Self::TooManyMailAccounts,
        Self::MailServerUnreachable,
        Self::MailLoginFailed,
        Self::MailHostNotAllowed,
        Self::PushEndpointNotAllowed,
        Self::TooManyPushSubscriptions,
        Self::Unauthorized,
        Self::TokenRevoked,
        Self::Forbidden,
        Self::ForbiddenForApiToken,
        Self::NotPermitted,
        Self::SubscriptionExpired,
        Self::AdminRequired,
        Self::NotOwnMessage,
        Self::CrossSiteRequest,
        Self::NotFound,
        Self::LoginNotFound,
        Self::LoginProcessNotFound,
        Self::IdentifierNotFound,
        Self::MethodNotAllowed,
        Self::AccountAlreadyAdded,
        Self::AccountGroupChanged,
        Self::AccountInOtherGroup,
        Self::KeysAlreadyRegistered,
        Self::KeysNotRegistered,
        Self::NoSigningKey,
        Self::MatrixAccountMissing,
        Self::NotInvited,
        Self::NotSupported,
        Self::NotJoined,
        Self::NotPending,
        Self::RoomsAlreadyLinked,
        Self::TooManyLogins,
        Self::NotLoggedIn,
        Self::TxnIdConflict,
        Self::UsernameTaken,
        Self::LabelExists,
        Self::VerificationState,
        Self::PayloadTooLarge,
        Self::UnsupportedMediaType,
        Self::RateLimited,
        Self::TooManyAttempts,
        Self::TooManyDevices,
        Self::TooManyStreams,
        Self::TooManyTokens,
        Self::InternalError,
        Self::NotImplemented,
        Self::AiError,
        Self::BridgeAuthFailed,
        Self::BridgeError,
        Self::HomeserverError,
        Self::PushRejected,
        Self::MailAppendFailed,
        Self::MailSendFailed,
        Self::AlreadySent,
        Self::ForwardedMessageGone,
        Self::MailActionFailed,
        Self::DeviceTokenUnreadable,
        Self::RecoveryKeyShown,
        Self::ReauthRequired,
        Self::AttachmentCorrupt,
        Self::TooManyUploads,
        Self::SpoolFull,
        Self::RequestTimeout,
        Self::Busy,
        Self::AiUnavailable,
        Self::BridgeNotConfigured,
        Self::BridgeUnavailable,
        Self::HomeserverUnavailable,
        Self::EncryptionUnavailable,
        Self::CryptoStoreReplaced,
        Self::MailUnavailable,
        Self::PushNotConfigured,
        Self::PushUnavailable,
        Self::MailUnreachable,
        Self::AiNotConfigured,
        Self::PersonalTokenRequired,
        Self::McpActionsNotEnabled,
        Self::UnsupportedUrlScheme,
        Self::PreviewsDisabled,
        Self::NoPreview,
    ];

    /// The snake_case string of the contract (`NO_SIGNING_KEY` as the contract spells it).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::BadRequest => "bad_request",
            Self::InvalidCode => "invalid_code",
            Self::InvalidEncryption => "invalid_encryption",
            Self::InvalidFlow => "invalid_flow",
            Self::InvalidPlatform => "invalid_platform",
            Self::InvalidPublicKey => "invalid_public_key",
            Self::InvalidScheduleTime => "invalid_schedule_time",
            Self::InvalidStep => "invalid_step",
            Self::BridgeRejected => "bridge_rejected",
            Self::LoginExpired => "login_expired",
            Self::LoginEnded => "login_ended",
            Self::ConfirmationRequired => "confirmation_required",
            Self::CannotRemovePrimary => "cannot_remove_primary",
            Self::RecipientUnresolved => "recipient_unresolved",
            Self::TooManySignatures => "too_many_signatures",
            Self::TooManyMailAccounts => "too_many_mail_accounts",
            Self::MailServerUnreachable => "mail_server_unreachable",
            Self::MailLoginFailed => "mail_login_failed",
            Self::MailHostNotAllowed => "mail_host_not_allowed",
            Self::PushEndpointNotAllowed => "push_endpoint_not_allowed",
            Self::TooManyPushSubscriptions => "too_many_push_subscriptions",
            Self::Unauthorized => "unauthorized",
            Self::TokenRevoked => "token_revoked",
            Self::Forbidden => "forbidden",
            Self::ForbiddenForApiToken => "forbidden_for_api_token",
            Self::SubscriptionExpired => "subscription_expired",
            Self::AdminRequired => "admin_required",
            Self::NotOwnMessage => "not_own_message",
            Self::CrossSiteRequest => "cross_site_request",
            Self::NotFound => "not_found",
            Self::LoginNotFound => "login_not_found",
            Self::LoginProcessNotFound => "login_process_not_found",
            Self::IdentifierNotFound => "identifier_not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::AccountAlreadyAdded => "account_already_added",
            Self::AccountGroupChanged => "account_group_changed",
            Self::AccountInOtherGroup => "account_in_other_group",
            Self::KeysAlreadyRegistered => "keys_already_registered",
            Self::KeysNotRegistered => "keys_not_registered",
            Self::NoSigningKey => "NO_SIGNING_KEY",
            Self::MatrixAccountMissing => "matrix_account_missing",
            Self::NotInvited => "not_invited",
            Self::NotSupported => "not_supported",
            Self::NotPermitted => "not_permitted",
            Self::NotJoined => "not_joined",
            Self::NotPending => "not_pending",
            Self::RoomsAlreadyLinked => "rooms_already_linked",
            Self::TooManyLogins => "too_many_logins",
            Self::NotLoggedIn => "not_logged_in",
            Self::TxnIdConflict => "txn_id_conflict",
            Self::UsernameTaken => "username_taken",
            Self::LabelExists => "label_exists",
            Self::VerificationState => "verification_state",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::RateLimited => "rate_limited",
            Self::TooManyAttempts => "too_many_attempts",
            Self::TooManyDevices => "too_many_devices",
            Self::TooManyStreams => "too_many_streams",
            Self::TooManyTokens => "too_many_tokens",
            Self::InternalError => "internal_error",
            Self::NotImplemented => "not_implemented",
            Self::AiError => "ai_error",
            Self::BridgeAuthFailed => "bridge_auth_failed",
            Self::BridgeError => "bridge_error",
            Self::HomeserverError => "homeserver_error",
            Self::PushRejected => "push_rejected",
            Self::MailAppendFailed => "mail_append_failed",
            Self::MailSendFailed => "mail_send_failed",
            Self::AlreadySent => "already_sent",
            Self::ForwardedMessageGone => "forwarded_message_gone",
            Self::MailActionFailed => "mail_action_failed",
            Self::DeviceTokenUnreadable => "device_token_unreadable",
            Self::RecoveryKeyShown => "recovery_key_shown",
            Self::ReauthRequired => "reauth_required",
            Self::AttachmentCorrupt => "attachment_corrupt",
            Self::TooManyUploads => "too_many_uploads",
            Self::SpoolFull => "spool_full",
            Self::RequestTimeout => "request_timeout",
            Self::Busy => "busy",
            Self::AiUnavailable => "ai_unavailable",
            Self::BridgeNotConfigured => "bridge_not_configured",
            Self::BridgeUnavailable => "bridge_unavailable",
            Self::HomeserverUnavailable => "homeserver_unavailable",
            Self::EncryptionUnavailable => "encryption_unavailable",
            Self::CryptoStoreReplaced => "crypto_store_replaced",
            Self::MailUnavailable => "mail_unavailable",
            Self::PushNotConfigured => "push_not_configured",
            Self::PushUnavailable => "push_unavailable",
            Self::MailUnreachable => "mail_unreachable",
            Self::AiNotConfigured => "ai_not_configured",
            Self::PersonalTokenRequired => "personal_token_required",
            Self::McpActionsNotEnabled => "mcp_actions_not_enabled",
            Self::UnsupportedUrlScheme => "unsupported_url_scheme",
            Self::PreviewsDisabled => "previews_disabled",
            Self::NoPreview => "no_preview",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_except_the_contracts_no_signing_key() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} twice");
            let snake = s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
            assert!(snake || s == "NO_SIGNING_KEY", "{s}");
        }
        assert_eq!(
            serde_json::to_string(&ErrorCode::NoSigningKey).unwrap(),
            "\"NO_SIGNING_KEY\""
        );
    }
}
