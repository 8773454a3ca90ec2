//! The error codes sent in the `error` field of every error body: one variant per
//! documented code, so a code cannot be misspelt and the list is in one place.

/// Declares [`ErrorCode`] from one list of `Variant => "code"` (with its documentation),
/// so the enum, [`ErrorCode::ALL`] and [`ErrorCode::as_str`] cannot disagree.
macro_rules! error_codes {
    ($($(#[$attr:meta])* $variant:ident => $code:literal,)*) => {
        /// A machine-readable error code; [`ErrorCode::as_str`] is the string clients see.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$attr])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, for tests and documentation.
            pub const ALL: &'static [ErrorCode] = &[$(Self::$variant,)*];

            /// The snake_case string of the contract (`NO_SIGNING_KEY` as the contract
            /// spells it).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $code,)*
                }
            }
        }
    };
}

error_codes! {
    /// 400: a field is missing or invalid; the message names it (`"<field>: <why>"`).
    InvalidRequest => "invalid_request",
    /// 400: a request poem refused before it reached a handler, for a reason without its own code.
    BadRequest => "bad_request",
    /// 400: the sign-in code is wrong or expired.
    InvalidCode => "invalid_code",
    /// 400: a sealed scheduled-message body that does not open.
    InvalidEncryption => "invalid_encryption",
    /// 400: a bridge login flow the bridge does not offer.
    InvalidFlow => "invalid_flow",
    /// 400: an unknown bridge platform.
    InvalidPlatform => "invalid_platform",
    /// 400: a public key that is not a valid key.
    InvalidPublicKey => "invalid_public_key",
    /// 400: a send time in the past or too far ahead.
    InvalidScheduleTime => "invalid_schedule_time",
    /// 400: a login step that is not the current one.
    InvalidStep => "invalid_step",
    /// 400: the bridge refused the submitted data.
    BridgeRejected => "bridge_rejected",
    /// 400: the bridge login process timed out.
    LoginExpired => "login_expired",
    /// 400: the bridge login process already finished or was cancelled.
    LoginEnded => "login_ended",
    /// 400: a destructive request without its confirmation.
    ConfirmationRequired => "confirmation_required",
    /// 400: the primary account cannot be removed.
    CannotRemovePrimary => "cannot_remove_primary",
    /// 400: a recipient that names no known room.
    RecipientUnresolved => "recipient_unresolved",
    /// 400: the user has the most e-mail signatures allowed.
    TooManySignatures => "too_many_signatures",
    /// 400: the user has connected the most mailboxes allowed.
    TooManyMailAccounts => "too_many_mail_accounts",
    /// 400: the mailbox's server could not be reached while connecting it.
    MailServerUnreachable => "mail_server_unreachable",
    /// 400: the mailbox's IMAP or SMTP server refused the login (its words in the message).
    MailLoginFailed => "mail_login_failed",
    /// 400 when connecting, 502 later: the mail server's host resolves to a private,
    /// loopback or link-local address the operator has not allowed (`[email]
    /// allow_private_hosts`).
    MailHostNotAllowed => "mail_host_not_allowed",
    /// 400: a Web Push endpoint whose host resolves to a private, loopback or link-local
    /// address the operator has not allowed (`[push] allow_private_endpoints`).
    PushEndpointNotAllowed => "push_endpoint_not_allowed",
    /// 400: the user has the most Web Push subscriptions allowed.
    TooManyPushSubscriptions => "too_many_push_subscriptions",
    /// 401: no, or no longer valid, credentials.
    Unauthorized => "unauthorized",
    /// 401: a personal token that was revoked.
    TokenRevoked => "token_revoked",
    /// 403: a request poem refused as forbidden.
    Forbidden => "forbidden",
    /// 403: the homeserver refused a change to a room (power levels, not a member); the
    /// message carries its reason.
    NotPermitted => "not_permitted",
    /// 403: a route a personal API token may not use (default deny).
    ForbiddenForApiToken => "forbidden_for_api_token",
    /// 403: a personal token whose owner has no active subscription.
    SubscriptionExpired => "subscription_expired",
    /// 403: a route for administrators only.
    AdminRequired => "admin_required",
    /// 403: an edit or deletion for everyone of another user's message.
    NotOwnMessage => "not_own_message",
    /// 403: a web-session request (`X-Switchboard-Client: web`) sent from another site
    /// (`Origin` or `Sec-Fetch-Site`).
    CrossSiteRequest => "cross_site_request",
    /// 404: no such resource (or route).
    NotFound => "not_found",
    /// 404: the bridge does not know this login.
    LoginNotFound => "login_not_found",
    /// 404: no such bridge login process.
    LoginProcessNotFound => "login_process_not_found",
    /// 404: nobody on the platform has this phone number, username, … (`POST /api/chats`).
    IdentifierNotFound => "identifier_not_found",
    /// 405: the route exists, the method does not.
    MethodNotAllowed => "method_not_allowed",
    /// 409: the account is already linked to this user.
    AccountAlreadyAdded => "account_already_added",
    /// 409: the account group changed during the request.
    AccountGroupChanged => "account_group_changed",
    /// 409: the account belongs to another group.
    AccountInOtherGroup => "account_in_other_group",
    /// 409: keys are registered already.
    KeysAlreadyRegistered => "keys_already_registered",
    /// 409: the user has no keys registered.
    KeysNotRegistered => "keys_not_registered",
    /// 409: the keys were deleted; the user signs in again in the native app (spelled as the contract spells it).
    NoSigningKey => "NO_SIGNING_KEY",
    /// 409: the user has no Matrix session yet.
    MatrixAccountMissing => "matrix_account_missing",
    /// 409: the room is not an invitation.
    NotInvited => "not_invited",
    /// 409: the platform's bridge cannot do this (e.g. it creates no groups).
    NotSupported => "not_supported",
    /// 409: the user has not joined the room.
    NotJoined => "not_joined",
    /// 409: the scheduled message is no longer pending.
    NotPending => "not_pending",
    /// 409: a room is in another linked group already.
    RoomsAlreadyLinked => "rooms_already_linked",
    /// 409: the bridge allows no more logins.
    TooManyLogins => "too_many_logins",
    /// 409: the user has no login on that bridge.
    NotLoggedIn => "not_logged_in",
    /// 409: the transaction id was used for another message.
    TxnIdConflict => "txn_id_conflict",
    /// 409: the user name is taken.
    UsernameTaken => "username_taken",
    /// 409: a mailbox (label) with this name exists already.
    LabelExists => "label_exists",
    /// 409: a verification action that does not fit the verification's state.
    VerificationState => "verification_state",
    /// 413: the request body exceeds the limit.
    PayloadTooLarge => "payload_too_large",
    /// 415: a body that is not JSON.
    UnsupportedMediaType => "unsupported_media_type",
    /// 429: too many requests in the window (with `Retry-After`).
    RateLimited => "rate_limited",
    /// 429: too many sign-in attempts (with `Retry-After`).
    TooManyAttempts => "too_many_attempts",
    /// 429: the device limit is reached.
    TooManyDevices => "too_many_devices",
    /// 429: too many open event streams.
    TooManyStreams => "too_many_streams",
    /// 429: the personal-token limit is reached.
    TooManyTokens => "too_many_tokens",
    /// 500: the detail is logged, never sent.
    InternalError => "internal_error",
    /// 501: not available in this build.
    NotImplemented => "not_implemented",
    /// 502: the AI service failed or answered nonsense.
    AiError => "ai_error",
    /// 502: the bridge refused the shared secret or the login permission.
    BridgeAuthFailed => "bridge_auth_failed",
    /// 502: the bridge failed.
    BridgeError => "bridge_error",
    /// 502: the homeserver refused or answered nonsense.
    HomeserverError => "homeserver_error",
    /// 502: APNs refused the notification.
    PushRejected => "push_rejected",
    /// 502: the mail was sent but could not be saved to the Sent mailbox.
    MailAppendFailed => "mail_append_failed",
    /// 502: the SMTP server refused or could not be reached; nothing was sent.
    MailSendFailed => "mail_send_failed",
    /// 409: an outgoing message held for undo is already on its way or sent.
    AlreadySent => "already_sent",
    /// 409: the message a forward carries the files of (or one of its files) is no longer
    /// on the mail server; nothing was sent.
    ForwardedMessageGone => "forwarded_message_gone",
    /// 502: the IMAP server refused an action (its words in the message).
    MailActionFailed => "mail_action_failed",
    /// 409: a stored device token sealed under a deleted key.
    DeviceTokenUnreadable => "device_token_unreadable",
    /// 409: the recovery key was handed out already (`POST /api/e2ee/recovery-key`; a new
    /// one only with `{"reset": true}`).
    RecoveryKeyShown => "recovery_key_shown",
    /// 403: a recovery key reset without proof of the person (the current recovery key or
    /// a fresh sign-in code), or with a wrong one.
    ReauthRequired => "reauth_required",
    /// 502: an encrypted attachment's bytes do not match the SHA-256 its event names;
    /// nothing of it was sent.
    AttachmentCorrupt => "attachment_corrupt",
    /// 429: the user's concurrent media uploads are at their cap.
    TooManyUploads => "too_many_uploads",
    /// 503: the media spool space (`[media] max_spool_mb`) is full (with `Retry-After`).
    SpoolFull => "spool_full",
    /// 408: the request body did not arrive within its deadline.
    RequestTimeout => "request_timeout",
    /// 503: the server is saturated; retry (with `Retry-After`).
    Busy => "busy",
    /// 503: the AI service is unreachable.
    AiUnavailable => "ai_unavailable",
    /// 503: the bridge is not configured on this server.
    BridgeNotConfigured => "bridge_not_configured",
    /// 503: the bridge is unreachable.
    BridgeUnavailable => "bridge_unavailable",
    /// 503: the homeserver is unreachable or not configured.
    HomeserverUnavailable => "homeserver_unavailable",
    /// 503: end-to-end encryption of a send failed; nothing was sent.
    EncryptionUnavailable => "encryption_unavailable",
    /// 503 (worker only): the user's crypto store was destroyed under a running sync session.
    CryptoStoreReplaced => "crypto_store_replaced",
    /// 503: the mail transport failed.
    MailUnavailable => "mail_unavailable",
    /// 503: no `[push]` section.
    PushNotConfigured => "push_not_configured",
    /// 503: APNs is unreachable.
    PushUnavailable => "push_unavailable",
    /// 503: the route needs an AI service and `[ai]` is not configured.
    AiNotConfigured => "ai_not_configured",
    /// 403: `/mcp` was called with a native session instead of a personal token.
    PersonalTokenRequired => "personal_token_required",
    /// 403: an MCP tool that acts (sends, creates, changes, deletes) called with a token
    /// that was not opted in to acting tools (`PATCH /api/developer/tokens/{id}`
    /// `{"mcpActions": true}`).
    McpActionsNotEnabled => "mcp_actions_not_enabled",
    /// 503: the mailbox's IMAP server cannot be reached; cached mail stays readable.
    MailUnreachable => "mail_unreachable",
    /// 400: a link preview was asked for a URL whose scheme is not `http` or `https`.
    UnsupportedUrlScheme => "unsupported_url_scheme",
    /// 403: link previews are off in the user's settings (`PUT /api/settings/previews`).
    PreviewsDisabled => "previews_disabled",
    /// 404: the homeserver could not preview the URL (unreachable, refused or not a page).
    NoPreview => "no_preview",
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
