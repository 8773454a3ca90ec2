//! `/api/developer/tokens`: personal API tokens for scripts, managed from native sessions.

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::routes::ALLOWLIST_VERSION;
use super::security::NativeAuth;
use super::views::{opt_time, time};
use super::ApiTags;
use crate::error::AppError;
use crate::services::tokens;
use crate::state::AppState;
use crate::store::api_tokens::ApiTokenRow;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct CreateTokenRequest {
    /// What the token is for (1 to 100 characters, trimmed), e.g. "inbox export script".
    pub name: String,
    /// Days until the token stops working (1 to 365). Omit for a token without expiry;
    /// 30 to 90 days is advised for one-off scripts.
    pub expires_in_days: Option<i64>,
}

/// A new token. `token` is the secret: it is shown in this response only.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct CreatedToken {
    /// Token id (UUID), used to revoke or opt in.
    pub id: String,
    /// The secret, `csk_` + 48 base62 characters (52 in total). Send it as
    /// `Authorization: Bearer <token>`. The server keeps only its SHA-256 hash, so it cannot
    /// be shown again: store it now.
    pub token: String,
    pub name: String,
    /// Last four characters of the secret, to tell tokens apart.
    pub last_four: String,
    pub created_at: DateTime<Utc>,
    /// When the token stops working; null when it does not expire.
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<tokens::CreatedToken> for CreatedToken {
    fn from(c: tokens::CreatedToken) -> Self {
        Self {
            id: c.row.id,
            token: c.token,
            name: c.row.name,
            last_four: c.row.last_four,
            created_at: time(c.row.created_at),
            expires_at: opt_time(c.row.expires_at),
        }
    }
}

/// A token as listed: never the secret.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Token id (UUID).
    pub id: String,
    pub name: String,
    /// Last four characters of the secret.
    pub last_four: String,
    pub created_at: DateTime<Utc>,
    /// Last request made with the token (recorded at most once a minute); null if unused.
    pub last_used_at: Option<DateTime<Utc>>,
    /// Null when the token does not expire.
    pub expires_at: Option<DateTime<Utc>>,
    /// Null while the token is not revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Allowlist version the token may use: routes added to the allowlist after this
    /// version need an opt-in (`PATCH /api/developer/tokens/{id}`).
    pub allowlist_version: u32,
    /// Allowlist version of the token's last explicit opt-in (`PATCH`), 0 if never. Routes
    /// that read across every room at once (`GET /api/search`) need an explicit opt-in of
    /// each token, also of tokens created after they were added.
    pub opted_in_version: u32,
    /// Whether the token may use the MCP tools that act (send, compose, create, change,
    /// delete); reading tools need no such opt-in. Off until set with `PATCH`
    /// `{"mcpActions": true}`.
    pub mcp_actions: bool,
}

impl From<ApiTokenRow> for TokenInfo {
    fn from(r: ApiTokenRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            last_four: r.last_four,
            created_at: time(r.created_at),
            last_used_at: opt_time(r.last_used_at),
            expires_at: opt_time(r.expires_at),
            revoked_at: opt_time(r.revoked_at),
            allowlist_version: r.allowlist_version,
            opted_in_version: r.opted_in_version,
            mcp_actions: r.mcp_actions,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct TokenList {
    /// Every token of the user, newest first, revoked and expired ones included.
    pub tokens: Vec<TokenInfo>,
    /// The server's current allowlist version; tokens with a lower `allowlistVersion` can
    /// opt in to the routes added since.
    pub current_allowlist_version: u32,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RevokeResult {
    pub message: String,
    /// Id of the revoked token.
    pub revoked_id: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct OptInRequest {
    /// `true` moves the token to the current allowlist version (`false` is refused).
    pub opt_in: Option<bool>,
    /// `true` lets the token use the MCP tools that act (send a message, compose an
    /// e-mail, create or change reminders, and every such tool added later); `false`
    /// takes that back. Reading tools need no opt-in.
    pub mcp_actions: Option<bool>,
}

#[derive(ApiResponse)]
pub enum CreateTokenResponse {
    /// The token was created; the secret is in `token` and is not shown again.
    #[oai(status = 201)]
    Created(Json<CreatedToken>),
}

pub struct TokensApi;

#[OpenApi(prefix_path = "/api/developer/tokens", tag = "ApiTags::Tokens")]
impl TokensApi {
    /// Create a personal API token
    ///
    /// Native sessions only: personal tokens get 403 `forbidden_for_api_token` on every
    /// `/api/developer/tokens` route (tokens cannot create or revoke tokens). Answers 201
    /// with the secret in `token` (`csk_` + 48 base62 characters, 52 in total). The server
    /// stores only a SHA-256 hash of it, so the secret is shown once, in this response, and
    /// can never be shown again on this or another device. `expiresInDays` (1 to 365,
    /// optional) sets an expiry; 30 to 90 days is advised for one-off scripts. An expired
    /// token answers 401.
    ///
    /// A token works only on the personal-token allowlist (rooms, readable messages and
    /// approved sending, sync, e-mail, reminders, read-only bridges) as it stands at
    /// creation; everything else is denied by default with 403 `forbidden_for_api_token`.
    /// Routes added to the allowlist later need an opt-in (`PATCH`). Every request with a
    /// token also needs an active paid subscription of its owner: otherwise 403
    /// `subscription_expired`. 400 `invalid_request` for a missing or bad `name` or an
    /// `expiresInDays` outside 1 to 365. A user can hold at most 50 live tokens (not
    /// revoked, not expired): creating another is 409 `too_many_tokens` until one is
    /// revoked or expires. Revoked and expired tokens stay in the list for 30 days, then
    /// they are forgotten.
    #[oai(path = "/", method = "post", operation_id = "tokens_create")]
    async fn create(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<CreateTokenRequest>,
    ) -> Result<CreateTokenResponse, AppError> {
        let user_id = tokens::require_native(&auth.0)?;
        let created = tokens::create(&state, user_id, &body.name, body.expires_in_days).await?;
        Ok(CreateTokenResponse::Created(Json(created.into())))
    }

    /// List personal API tokens
    ///
    /// Every token of the signed-in user, newest first, including revoked and expired ones
    /// (for 30 days after they were revoked or expired).
    /// Never returns the secret (the server does not have it): `lastFour` tells tokens
    /// apart. Native sessions only (403 `forbidden_for_api_token` for personal tokens).
    #[oai(path = "/", method = "get", operation_id = "tokens_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<TokenList>, AppError> {
        let user_id = tokens::require_native(&auth.0)?;
        let rows = tokens::list(&state, user_id).await?;
        Ok(Json(TokenList {
            tokens: rows.into_iter().map(TokenInfo::from).collect(),
            current_allowlist_version: ALLOWLIST_VERSION,
        }))
    }

    /// Revoke a personal API token
    ///
    /// Revocation is immediate: the very next request with the token answers 401. Revoking
    /// an already revoked token succeeds again and keeps the first `revokedAt`. 404 for an
    /// unknown id or a token of another user. Native sessions only.
    #[oai(path = "/:id", method = "delete", operation_id = "tokens_revoke")]
    async fn revoke(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Token id (UUID).
        id: Path<String>,
    ) -> Result<Json<RevokeResult>, AppError> {
        let user_id = tokens::require_native(&auth.0)?;
        let row = tokens::revoke(&state, user_id, &id.0).await?;
        Ok(Json(RevokeResult {
            message: format!("token \"{}\" revoked", row.name),
            revoked_id: row.id,
        }))
    }

    /// Opt a token in to the current allowlist
    ///
    /// Body `{"optIn": true}` and/or `{"mcpActions": true | false}` (at least one).
    /// `mcpActions` switches the MCP tools that act (every tool but the reading ones: send
    /// text, compose e-mail, reminders, and tools added later); until it is `true` they
    /// answer the MCP error `mcp_actions_not_enabled`, while reading tools work. New routes are unavailable to existing tokens until opted
    /// in: this sets the token's `allowlistVersion` (and `optedInVersion`) to the server's
    /// current version, so every route on today's allowlist becomes available to it.
    /// Search (`GET /api/search`, also the MCP `search` tool) reads across every room at
    /// once and needs this explicit opt-in from every token, new ones included. Returns the token (without
    /// the secret). 400 `invalid_request` when `optIn` is not `true`; 400 `token_revoked`
    /// for a revoked token; 404 for an unknown id or a token of another user. Native
    /// sessions only.
    #[oai(path = "/:id", method = "patch", operation_id = "tokens_opt_in")]
    async fn opt_in(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Token id (UUID).
        id: Path<String>,
        body: Json<OptInRequest>,
    ) -> Result<Json<TokenInfo>, AppError> {
        let user_id = tokens::require_native(&auth.0)?;
        if body.opt_in == Some(false) {
            return Err(AppError::invalid("optIn", "must be true"));
        }
        if body.opt_in.is_none() && body.mcp_actions.is_none() {
            return Err(AppError::invalid(
                "optIn",
                "send optIn: true and/or mcpActions: true|false",
            ));
        }
        let change = tokens::TokenChange {
            opt_in: body.opt_in == Some(true),
            mcp_actions: body.mcp_actions,
        };
        Ok(Json(
            tokens::update(&state, user_id, &id.0, change).await?.into(),
        ))
    }
}
