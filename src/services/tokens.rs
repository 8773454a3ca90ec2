//! Personal API tokens: creation (the secret is returned once and stored as its SHA-256
//! only), listing, revocation and allowlist opt-in. Managing tokens is for native sessions
//! only; the gate authenticates tokens themselves (`services::session`).

use crate::clock::unix_now;
use crate::crypto;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::session::Principal;
use crate::services::Context;
use crate::store::api_tokens::{self, ApiTokenRow};

pub use super::allowlist::ALLOWLIST_VERSION;

/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Most live (not revoked, not expired) tokens a user can have; creating one more is 409
/// `too_many_tokens`.
pub const MAX_LIVE_TOKENS: i64 = 50;
/// Revoked and expired tokens stay listed this long, then the scheduler forgets them.
pub const ENDED_RETENTION_SECS: i64 = 30 * DAY_SECS;
/// Longest expiry a token can be created with, in days.
pub const MAX_EXPIRY_DAYS: i64 = 365;
const DAY_SECS: i64 = 86_400;

/// A freshly created token with its secret: the only moment the secret exists server-side.
#[derive(Debug, Clone)]
pub struct CreatedToken {
    pub row: ApiTokenRow,
    pub token: String,
}

/// Token management is native-only. The gate already refuses personal tokens on these
/// routes (they are not on the allowlist); this keeps the rule true if that ever changes.
pub fn require_native(principal: &Principal) -> AppResult<&str> {
    match principal {
        Principal::User { user_id, .. } => Ok(user_id),
        Principal::ApiToken { .. } => Err(AppError::forbidden(
            ErrorCode::ForbiddenForApiToken,
            "personal API tokens cannot create, list or revoke tokens",
        )),
    }
}

/// Trims the name; 1 to 100 characters, no control characters.
pub fn validate_name(name: &str) -> AppResult<String> {
    let trimmed = name.trim();
    let n = trimmed.chars().count();
    if !(1..=MAX_NAME_CHARS).contains(&n) {
        return Err(AppError::invalid(
            "name",
            format!("must be 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(trimmed.to_owned())
}

/// `expiresInDays` (1 to 365) into an absolute expiry; `None` never expires.
pub fn expiry_from_days(days: Option<i64>, now: i64) -> AppResult<Option<i64>> {
    match days {
        None => Ok(None),
        Some(d) if (1..=MAX_EXPIRY_DAYS).contains(&d) => Ok(Some(now + d * DAY_SECS)),
        Some(_) => Err(AppError::invalid(
            "expiresInDays",
            format!("must be an integer from 1 to {MAX_EXPIRY_DAYS}"),
        )),
    }
}

/// The last four characters of a secret, shown in lists so users can tell tokens apart.
pub fn last_four(token: &str) -> String {
    let chars: Vec<char> = token.chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
}

/// Creates a token for `user_id` under the current allowlist version.
pub async fn create(
    state: &Context,
    user_id: &str,
    name: &str,
    expires_in_days: Option<i64>,
) -> AppResult<CreatedToken> {
    let name = validate_name(name)?;
    let now = unix_now() as i64;
    let expires_at = expiry_from_days(expires_in_days, now)?;
    let token = crypto::generate_personal_token();
    let row = ApiTokenRow {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: user_id.to_owned(),
        name,
        token_hash: crypto::sha256_hex(&token),
        last_four: last_four(&token),
        allowlist_version: ALLOWLIST_VERSION,
        opted_in_version: 0,
        created_at: now,
        last_used_at: None,
        expires_at,
        revoked_at: None,
        mcp_actions: false,
    };
    let stored = row.clone();
    state
        .store
        .run(move |c| {
            // Count and insert in one (IMMEDIATE) transaction, so parallel requests cannot
            // both pass the count.
            let tx = c.transaction()?;
            if api_tokens::count_live(&tx, &stored.user_id, now)? >= MAX_LIVE_TOKENS {
                return Err(AppError::conflict(
                    ErrorCode::TooManyTokens,
                    format!(
                        "at most {MAX_LIVE_TOKENS} personal API tokens can be active at once; \
                         revoke one you no longer use (DELETE /api/developer/tokens/{{id}})"
                    ),
                ));
            }
            api_tokens::insert(&tx, &stored)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    Ok(CreatedToken { row, token })
}

/// Every token of the user, newest first, revoked and expired ones included.
pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<ApiTokenRow>> {
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| api_tokens::list_for_user(c, &uid).map_err(AppError::from))
        .await
}

/// Revokes a token of the user; effective for the very next request. Revoking an already
/// revoked token keeps its original `revokedAt`. 404 for unknown ids and other users' tokens.
pub async fn revoke(state: &Context, user_id: &str, token_id: &str) -> AppResult<ApiTokenRow> {
    let uid = user_id.to_owned();
    let id = token_id.to_owned();
    let now = unix_now() as i64;
    state
        .store
        .run(move |c| {
            if api_tokens::revoke(c, &uid, &id, now)? == 0 {
                return Err(AppError::not_found("token"));
            }
            api_tokens::find_for_user(c, &uid, &id)?.ok_or_else(|| AppError::not_found("token"))
        })
        .await
}

/// What `PATCH /api/developer/tokens/{id}` changes.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenChange {
    /// Move the token to the current allowlist version.
    pub opt_in: bool,
    /// Switch MCP tools that act on or off.
    pub mcp_actions: Option<bool>,
}

/// Applies `change` to a token: `opt_in` moves it to the current allowlist version, so
/// routes listed after it was created become available to it; `mcp_actions` switches the
/// MCP tools that act. 404 for unknown ids and other users' tokens; 400 `token_revoked`
/// for a revoked token (it can never be used again).
pub async fn update(
    state: &Context,
    user_id: &str,
    token_id: &str,
    change: TokenChange,
) -> AppResult<ApiTokenRow> {
    let uid = user_id.to_owned();
    let id = token_id.to_owned();
    state
        .store
        .run(move |c| {
            let row = api_tokens::find_for_user(c, &uid, &id)?
                .ok_or_else(|| AppError::not_found("token"))?;
            if row.revoked_at.is_some() {
                return Err(AppError::bad_request(
                    ErrorCode::TokenRevoked,
                    "this token is revoked; create a new one instead",
                ));
            }
            if change.opt_in {
                api_tokens::set_allowlist_version(c, &uid, &id, ALLOWLIST_VERSION)?;
            }
            if let Some(on) = change.mcp_actions {
                api_tokens::set_mcp_actions(c, &uid, &id, on)?;
            }
            api_tokens::find_for_user(c, &uid, &id)?.ok_or_else(|| AppError::not_found("token"))
        })
        .await
}

/// Whether the personal token `token_id` may use MCP tools that act (checked on every
/// such call, so switching it off takes effect at once).
pub async fn mcp_actions_enabled(state: &Context, token_id: &str) -> AppResult<bool> {
    let id = token_id.to_owned();
    Ok(state
        .store
        .query(move |c| api_tokens::mcp_actions_enabled(c, &id))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(validate_name("  ci script ").unwrap(), "ci script");
        assert_eq!(
            validate_name(&"é".repeat(100)).unwrap().chars().count(),
            100
        );
        for bad in ["", "   ", "a\nb"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        assert!(validate_name(&"x".repeat(101)).is_err());
    }

    #[test]
    fn expiry_is_1_to_365_days() {
        assert_eq!(expiry_from_days(None, 1000).unwrap(), None);
        assert_eq!(
            expiry_from_days(Some(1), 1000).unwrap(),
            Some(1000 + 86_400)
        );
        assert_eq!(expiry_from_days(Some(365), 0).unwrap(), Some(365 * 86_400));
        for bad in [0, -1, 366, i64::MAX] {
            let err = expiry_from_days(Some(bad), 0).unwrap_err();
            assert_eq!(err.code(), "invalid_request", "{bad}");
        }
    }

    #[test]
    fn last_four_is_the_tail_of_the_secret() {
        assert_eq!(last_four("csk_abcdWXYZ"), "WXYZ");
        assert_eq!(last_four("ab"), "ab");
    }

    #[test]
    fn personal_tokens_cannot_manage_tokens() {
        let token = Principal::ApiToken {
            user_id: "u".into(),
            token_id: "t".into(),
            allowlist_version: 1,
            opted_in_version: 0,
        };
        assert_eq!(
            require_native(&token).unwrap_err().code(),
            "forbidden_for_api_token"
        );
        let user = Principal::User {
            user_id: "u".into(),
            session_id: None,
        };
        assert_eq!(require_native(&user).unwrap(), "u");
    }
}
