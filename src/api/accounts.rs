//! `/api/accounts/*`: several e-mail identities (accounts) under one sign-in, and
//! switching between them. Native sessions only (personal API tokens get 403).

use poem::web::Data;
use poem::Request;
use poem_openapi::param::{Header, Path};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::NativeAuth;
use super::views::MessageResponse;
use super::web_session;
use super::ApiTags;
use crate::error::AppError;
use crate::services::accounts::{self, Account, AccountChange};
use crate::state::AppState;

/// One account of the caller's account group.
#[derive(Debug, Clone, Object)]
#[oai(rename = "Account", rename_all = "camelCase")]
pub struct AccountView {
    /// The account's user id (UUID).
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    /// True for the group's primary account (the one the others were added to).
    pub is_primary: bool,
    /// True for the account of the calling access token.
    pub is_active: bool,
}

impl From<Account> for AccountView {
    fn from(a: Account) -> Self {
        Self {
            id: a.id,
            email: a.email,
            display_name: a.display_name,
            avatar_url: a.avatar_url,
            is_primary: a.is_primary,
            is_active: a.is_active,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct AccountList {
    /// Every account of the group, the primary first, then added accounts by age.
    pub accounts: Vec<AccountView>,
    /// The account of the calling token (always set for a native session).
    pub active_account: Option<AccountView>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ActiveAccount {
    pub account: AccountView,
    /// Access token of the account's Matrix user; null when no homeserver is configured,
    /// and always null for a web session (`X-Switchboard-Client: web`), which has none.
    pub matrix_access_token: Option<String>,
}

#[derive(Debug, Object)]
pub struct AddCodeRequest {
    /// Address to add; the code is mailed there.
    pub email: String,
}

#[derive(Debug, Object)]
pub struct AddVerifyRequest {
    pub email: String,
    /// The 6-digit code from the e-mail.
    pub code: String,
}

#[derive(Debug, Object)]
pub struct AccountResult {
    pub account: AccountView,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SwitchResult {
    /// JWT access token of the account switched to.
    pub access_token: String,
    /// Refresh token of the account switched to; `""` for a web session
    /// (`X-Switchboard-Client: web`), which gets it as the `sb_refresh` cookie instead.
    pub refresh_token: String,
    /// Access token of a new Matrix device of that account's Matrix user, for this session
    /// only (logged out again when the session ends); null when no homeserver is
    /// configured, and for a web session (`X-Switchboard-Client: web`), which gets none.
    pub matrix_access_token: Option<String>,
    /// Lifetime of the access token in seconds.
    pub expires_in: u64,
    /// The account switched to (`isActive` true: it is the account of the new tokens).
    pub account: AccountView,
}

/// The answer of a switch: with `X-Switchboard-Client: web`, the new refresh token is set
/// as a cookie.
#[derive(ApiResponse)]
pub enum SwitchResponse {
    /// Switched.
    #[oai(status = 200)]
    Ok(
        Json<SwitchResult>,
        /// Web sessions only: `sb_refresh=<refresh token>; HttpOnly; SameSite=Strict;
        /// Path=/api/auth; Max-Age=<auth.refresh_token_ttl>` (always `Secure`).
        #[oai(header = "Set-Cookie")]
        Option<String>,
    ),
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct AccountUpdateRequest {
    /// 1 to 255 characters.
    pub display_name: Option<String>,
    /// A base64 image (`data:image/png;base64,…` or bare base64), `mxc://` or `https://` URL.
    pub avatar_url: Option<String>,
}

pub struct AccountsApi;

#[OpenApi(prefix_path = "/api/accounts", tag = "ApiTags::Accounts")]
impl AccountsApi {
    /// List the accounts of the group
    ///
    /// Every account of the caller's account group (the primary and the accounts added to
    /// it), primary first; `activeAccount` is the account of the calling token.
    #[oai(path = "/", method = "get", operation_id = "accounts_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<AccountList>, AppError> {
        let list = accounts::list(&state, auth.user_id()).await?;
        Ok(Json(AccountList {
            accounts: list.accounts.into_iter().map(Into::into).collect(),
            active_account: Some(list.active.into()),
        }))
    }

    /// The active account
    ///
    /// The account of the calling token and the Matrix access token of the calling
    /// token's session: the token of the Matrix device opened for that sign-in or switch
    /// (its Matrix account is created first if missing; 503 `homeserver_unavailable` when
    /// that fails). After `DELETE /api/keys` logged that device out, the session gets a
    /// new device here. `matrixAccessToken` is null once the session has ended (logout,
    /// account removal), for access tokens issued before sessions had their own devices,
    /// and without a homeserver.
    #[oai(path = "/active", method = "get", operation_id = "accounts_active")]
    async fn active(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<ActiveAccount>, AppError> {
        let (account, matrix_access_token) =
            accounts::active(&state, auth.user_id(), auth.0.session_id()).await?;
        Ok(Json(ActiveAccount {
            account: account.into(),
            matrix_access_token,
        }))
    }

    /// Send a code to add an account
    ///
    /// Mails a 6-digit code to `email`, to be confirmed at `/api/accounts/add/verify`. The
    /// address may be unknown (a new account is created) or belong to a stand-alone user,
    /// who then joins this group. 400 `invalid_request` for a malformed address,
    /// 400 `account_already_added` when it is already an account of this group,
    /// 400 `account_in_other_group` when it is an added account of another group or the
    /// primary of a group with added accounts. At most 3 codes per 10 minutes per address,
    /// shared with sign-in codes (429 with Retry-After). 503 `mail_unavailable` when the mail
    /// could not be sent.
    #[oai(
        path = "/add/code",
        method = "post",
        operation_id = "accounts_add_code"
    )]
    async fn add_code(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<AddCodeRequest>,
    ) -> Result<Json<MessageResponse>, AppError> {
        accounts::request_add_code(&state, auth.user_id(), &body.email).await?;
        Ok(Json(MessageResponse::new(
            "a verification code has been sent",
        )))
    }

    /// Add an account with its code
    ///
    /// Checks the code mailed by `/api/accounts/add/code` (requested from this group; codes
    /// are single use, expire after 10 minutes, five tries burn them: 400 `invalid_code`;
    /// 20 wrong codes per address per 24 h, then 429 `too_many_attempts`) and adds the address to the group, creating the user and its Matrix
    /// account when the address is unknown. 400 `account_already_added` /
    /// `account_in_other_group` as for the code. 503 `homeserver_unavailable` when the
    /// Matrix account could not be created; nothing is added and the code stays valid for a
    /// retry.
    #[oai(
        path = "/add/verify",
        method = "post",
        operation_id = "accounts_add_verify"
    )]
    async fn add_verify(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<AddVerifyRequest>,
    ) -> Result<Json<AccountResult>, AppError> {
        let account = accounts::verify_add(&state, auth.user_id(), &body.email, &body.code).await?;
        Ok(Json(AccountResult {
            account: account.into(),
        }))
    }

    /// Switch to an account
    ///
    /// Opens a session for an account of the caller's group: new access and refresh tokens
    /// and the Matrix access token of a new Matrix device of that account, for this
    /// session (logged out on the homeserver when the session ends: logout, removal of the
    /// account, key deletion). 400 `invalid_request` when `id` is not a UUID; 404 when it
    /// is not an account of the caller's group; 503 `homeserver_unavailable` when the
    /// homeserver cannot open the device. Switching to the account already in use answers
    /// the same way (the contract requires a refresh token, and the server keeps only
    /// hashes, so it cannot hand back an existing one). Each account keeps at most its 100
    /// newest live refresh tokens: a sign-in or switch beyond that ends the oldest
    /// session's refresh token (its access token runs out as usual).
    ///
    /// Web session: with `X-Switchboard-Client: web` the new refresh token replaces the
    /// `sb_refresh` cookie and `refreshToken` is `""` (see `POST /api/auth/verify`); 403
    /// `cross_site_request` from another site.
    #[oai(
        path = "/:id/switch",
        method = "post",
        operation_id = "accounts_switch"
    )]
    async fn switch(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: NativeAuth,
        /// `web` asks for the web session (refresh token in an HttpOnly cookie).
        #[oai(name = "X-Switchboard-Client")]
        client: Header<Option<String>>,
        /// Account id (UUID).
        id: Path<String>,
    ) -> Result<SwitchResponse, AppError> {
        let web = web_session::requested(req, client.0.as_deref())?;
        let switched = accounts::switch(&state, auth.user_id(), &id, web).await?;
        let s = switched.session;
        let cookie = web.then(|| web_session::set_cookie(&state, &s.refresh_token));
        Ok(SwitchResponse::Ok(
            Json(SwitchResult {
                access_token: s.access_token,
                refresh_token: if web { String::new() } else { s.refresh_token },
                matrix_access_token: s.matrix_access_token,
                expires_in: s.expires_in,
                account: switched.account.into(),
            }),
            cookie,
        ))
    }

    /// Update an account
    ///
    /// Changes the display name and/or avatar of an account of the caller's group; absent
    /// fields stay as they are. 400 `invalid_request` on invalid values or a non-UUID `id`;
    /// 404 when it is not an account of the caller's group.
    #[oai(path = "/:id", method = "patch", operation_id = "accounts_update")]
    async fn update(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Account id (UUID).
        id: Path<String>,
        body: Json<AccountUpdateRequest>,
    ) -> Result<Json<AccountResult>, AppError> {
        let body = body.0;
        let change = AccountChange {
            display_name: body.display_name,
            avatar_url: body.avatar_url,
        };
        let account = accounts::update(&state, auth.user_id(), &id, change).await?;
        Ok(Json(AccountResult {
            account: account.into(),
        }))
    }

    /// Remove an account from the group
    ///
    /// Detaches an added account: it becomes a stand-alone user again. Nothing is deleted:
    /// its data, Matrix account and personal tokens stay and signing in with its e-mail
    /// still works; its refresh tokens are revoked (sessions opened by switching end when
    /// their access token expires) and the Matrix devices of those sessions are logged out
    /// on the homeserver (retried later when it is down). An account can remove itself. 400
    /// `cannot_remove_primary` for the group's primary account; 400 `invalid_request` for a
    /// non-UUID `id`; 404 when it is not an account of the caller's group.
    #[oai(path = "/:id", method = "delete", operation_id = "accounts_remove")]
    async fn remove(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Account id (UUID).
        id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let email = accounts::remove(&state, auth.user_id(), &id).await?;
        Ok(Json(MessageResponse::new(format!(
            "{email} was removed from the account group and is a stand-alone account again"
        ))))
    }
}
