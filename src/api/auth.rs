//! `/api/auth/*`: passwordless sign-in, session refresh, logout and the user's profile.

use poem::web::Data;
use poem::Request;
use poem_openapi::param::Header;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::NativeAuth;
use super::views::{MessageResponse, UserProfile};
use super::web_session;
use super::ApiTags;
use crate::error::AppError;
use crate::services::auth::{self, CodePurpose, Session};
use crate::services::users::{self, ProfileChange};
use crate::state::AppState;

#[derive(Debug, Object)]
pub struct CodeRequest {
    /// Address the 6-digit code is sent to.
    pub email: String,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct VerifyRequest {
    pub email: String,
    /// The 6-digit code from the e-mail.
    pub code: String,
    /// Base64 X25519 public key; registered only when this sign-in creates the account.
    pub public_key: Option<String>,
}

/// Sign-in result.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SignInResult {
    /// JWT access token for `Authorization: Bearer`.
    pub access_token: String,
    /// Exchange at `/api/auth/refresh` for new access tokens. `""` for a web session
    /// (`X-Switchboard-Client: web`): the token is then only in the `sb_refresh` cookie.
    pub refresh_token: String,
    /// Access token of a Matrix device opened for this sign-in only (a new device of the
    /// user's Matrix account per sign-in, never Switchboard's own sync device). It is
    /// logged out on the homeserver when the session ends: logout, removal of the account
    /// from its group, key deletion (`DELETE /api/keys`), or expiry of the refresh token.
    /// Null when no homeserver is configured, and always null for a web session
    /// (`X-Switchboard-Client: web`), which opens no Matrix device.
    pub matrix_access_token: Option<String>,
    /// Lifetime of the access token in seconds.
    pub expires_in: u64,
    /// True when this sign-in created the account.
    pub is_new_user: bool,
    pub user: UserProfile,
}

impl From<Session> for SignInResult {
    fn from(s: Session) -> Self {
        Self {
            access_token: s.access_token,
            refresh_token: s.refresh_token,
            matrix_access_token: s.matrix_access_token,
            expires_in: s.expires_in,
            is_new_user: s.is_new_user,
            user: s.profile.into(),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RefreshRequest {
    /// The refresh token; required (400 `refreshToken: required` without it) unless the
    /// request carries `X-Switchboard-Client: web`, which reads the `sb_refresh` cookie
    /// instead (this field is then ignored; send `{}`).
    pub refresh_token: Option<String>,
}

/// The answer of a sign-in (or account switch): with `X-Switchboard-Client: web`, the
/// refresh token is set as a cookie.
#[derive(ApiResponse)]
pub enum SignInResponse {
    /// Signed in.
    #[oai(status = 200)]
    Ok(
        Json<SignInResult>,
        /// Web sessions only: `sb_refresh=<refresh token>; HttpOnly; SameSite=Strict;
        /// Path=/api/auth; Max-Age=<auth.refresh_token_ttl>; Secure` (always `Secure`:
        /// browsers accept it on `http://localhost` and `http://127.0.0.1`).
        #[oai(header = "Set-Cookie")]
        Option<String>,
    ),
}

/// The answer of a logout: the web session's cookie is removed.
#[derive(ApiResponse)]
pub enum LogoutResponse {
    /// Signed out.
    #[oai(status = 200)]
    Ok(
        Json<MessageResponse>,
        /// `sb_refresh=; HttpOnly; SameSite=Strict; Path=/api/auth; Max-Age=0`.
        #[oai(header = "Set-Cookie")]
        String,
    ),
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RefreshResult {
    pub access_token: String,
    /// Lifetime of the access token in seconds.
    pub expires_in: u64,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ProfileRequest {
    /// 1 to 255 characters.
    pub display_name: Option<String>,
    /// 3 to 50 characters: letters, digits, underscore; unique (409 when taken).
    pub username: Option<String>,
    /// A base64 image (`data:image/png;base64,…` or bare base64), `mxc://` or `https://` URL.
    pub avatar_url: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct OnboardingRequest {
    pub display_name: Option<String>,
}

#[derive(Debug, Object)]
pub struct UserResult {
    pub success: bool,
    pub user: UserProfile,
}

pub struct AuthApi;

#[OpenApi(prefix_path = "/api/auth", tag = "ApiTags::Auth")]
impl AuthApi {
    /// Send a sign-in code
    ///
    /// E-mails a 6-digit code (no authentication). At most 3 codes per 10 minutes per
    /// address (429 with Retry-After). A new code kills every older one, used or not. 503
    /// `busy` (with Retry-After) when too many codes are being hashed at once.
    #[oai(path = "/code", method = "post", operation_id = "auth_request_code")]
    async fn code(
        &self,
        state: Data<&AppState>,
        body: Json<CodeRequest>,
    ) -> Result<Json<MessageResponse>, AppError> {
        auth::request_code(&state, &body.email, CodePurpose::SignIn, None).await?;
        Ok(Json(MessageResponse::new(
            "a verification code has been sent",
        )))
    }

    /// Verify a sign-in code
    ///
    /// Exchanges e-mail and code for tokens (no authentication). Creates the account (and
    /// its Matrix account) for an unknown e-mail; `publicKey` is registered then. Codes are
    /// single use, expire after `auth.code_ttl` (10 min), only the newest code of an address
    /// counts, and five tries burn one: 400 `invalid_code`. An address accepts at most
    /// `auth.max_code_failures` (20) wrong codes per 24 h, then 429 `too_many_attempts`
    /// with Retry-After (a guesser's chance over a year stays below 1%). Each sign-in gets
    /// a Matrix device of its own (`matrixAccessToken`). 503 `homeserver_unavailable` when
    /// the Matrix account or device could not be created; the code stays valid for a retry.
    ///
    /// Web session: with `X-Switchboard-Client: web` the refresh token is set as the
    /// cookie `sb_refresh` (`HttpOnly; Secure; SameSite=Strict; Path=/api/auth`; always
    /// `Secure`, which browsers accept on `http://localhost` and `http://127.0.0.1`) and
    /// `refreshToken` is `""`, so page scripts never see it; refresh then with the same
    /// header and `{}`. A web session opens no Matrix device: `matrixAccessToken` is null
    /// (the web app never uses one, and page scripts should not hold a token to the
    /// user's Matrix account; `GET /api/accounts/active` answers null for it too). Such a request from another site (`Origin` not this
    /// server, `Sec-Fetch-Site` not `same-origin`) is 403 `cross_site_request`.
    #[oai(path = "/verify", method = "post", operation_id = "auth_verify_code")]
    async fn verify(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// `web` asks for the web session (refresh token in an HttpOnly cookie).
        #[oai(name = "X-Switchboard-Client")]
        client: Header<Option<String>>,
        body: Json<VerifyRequest>,
    ) -> Result<SignInResponse, AppError> {
        let web = web_session::requested(req, client.0.as_deref())?;
        let body = body.0;
        let session = auth::sign_in(&state, &body.email, &body.code, body.public_key, web).await?;
        let mut result = SignInResult::from(session);
        let cookie = web.then(|| {
            let token = std::mem::take(&mut result.refresh_token);
            web_session::set_cookie(&state, &token)
        });
        Ok(SignInResponse::Ok(Json(result), cookie))
    }

    /// Refresh the access token
    ///
    /// Exchanges a refresh token for a new access token (no authentication); 401 when the
    /// refresh token is unknown, expired or revoked. The refresh token stays valid, and so
    /// does the session's Matrix device (no new `matrixAccessToken`; `GET
    /// /api/accounts/active` returns the session's).
    ///
    /// Web session: with `X-Switchboard-Client: web` (and body `{}`) the refresh token is
    /// read from the `sb_refresh` cookie only; 401 `unauthorized` when the cookie is absent
    /// or its token invalid; 403 `cross_site_request` from another site. Without the
    /// header the cookie is never read.
    #[oai(path = "/refresh", method = "post", operation_id = "auth_refresh")]
    async fn refresh(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// `web`: read the refresh token from the `sb_refresh` cookie.
        #[oai(name = "X-Switchboard-Client")]
        client: Header<Option<String>>,
        body: Json<RefreshRequest>,
    ) -> Result<Json<RefreshResult>, AppError> {
        let token = if web_session::requested(req, client.0.as_deref())? {
            web_session::refresh_cookie(req)
                .ok_or_else(|| AppError::unauthorized("no sb_refresh cookie: sign in again"))?
        } else {
            body.0
                .refresh_token
                .ok_or_else(|| AppError::invalid("refreshToken", "required"))?
        };
        let (access_token, expires_in) = auth::refresh(&state, &token).await?;
        Ok(Json(RefreshResult {
            access_token,
            expires_in,
        }))
    }

    /// Sign out everywhere
    ///
    /// Revokes every refresh token of the user and logs the Matrix devices of those
    /// sessions (each sign-in's `matrixAccessToken`) out on the homeserver; Switchboard's
    /// own sync device stays, so messages keep arriving. When the homeserver is down the
    /// logout still succeeds and the devices are logged out as soon as it answers again
    /// (retried after 30 s, 2 min, 10 min, then hourly). Access tokens already issued stay
    /// valid until they expire (`auth.access_token_ttl`), but no longer get a Matrix token
    /// from `GET /api/accounts/active`. The answer removes the web session's `sb_refresh`
    /// cookie (`Set-Cookie` with `Max-Age=0`).
    #[oai(path = "/logout", method = "post", operation_id = "auth_logout")]
    async fn logout(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<LogoutResponse, AppError> {
        let n = auth::logout(&state, auth.user_id()).await?;
        Ok(LogoutResponse::Ok(
            Json(MessageResponse::new(format!(
                "signed out; {n} refresh token(s) revoked"
            ))),
            web_session::clear_cookie(),
        ))
    }

    /// The signed-in user's profile
    #[oai(path = "/me", method = "get", operation_id = "auth_me")]
    async fn me(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<UserProfile>, AppError> {
        Ok(Json(
            users::load_profile(&state, auth.user_id()).await?.into(),
        ))
    }

    /// Update the profile
    ///
    /// All fields optional. 400 on invalid values, 409 `username_taken`.
    #[oai(
        path = "/profile",
        method = "patch",
        operation_id = "auth_update_profile"
    )]
    async fn profile(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<ProfileRequest>,
    ) -> Result<Json<UserResult>, AppError> {
        let body = body.0;
        let change = ProfileChange {
            display_name: body.display_name,
            username: body.username,
            avatar_url: body.avatar_url,
        };
        let profile = users::update_profile(&state, auth.user_id(), change).await?;
        Ok(Json(UserResult {
            success: true,
            user: profile.into(),
        }))
    }

    /// Finish onboarding
    ///
    /// Marks onboarding complete; an optional `displayName` is saved with it.
    #[oai(
        path = "/complete-onboarding",
        method = "post",
        operation_id = "auth_complete_onboarding"
    )]
    async fn complete_onboarding(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<Option<OnboardingRequest>>,
    ) -> Result<Json<UserResult>, AppError> {
        let display_name = body.0.and_then(|b| b.display_name);
        let profile = users::complete_onboarding(&state, auth.user_id(), display_name).await?;
        Ok(Json(UserResult {
            success: true,
            user: profile.into(),
        }))
    }
}
