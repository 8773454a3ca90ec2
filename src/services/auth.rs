//! Passwordless sign-in: e-mailed codes, sessions (access + refresh tokens) and the
//! user's Matrix account.
//!
//! Codes: 6 digits, argon2-hashed, single use, expiring after `auth.code_ttl`; five wrong
//! tries burn a code; requesting a new code supersedes older ones; at most three codes per
//! ten minutes per address.

use std::time::Duration;

use super::matrix_sessions;
use super::users::{self, Profile};
use crate::crypto;
use crate::error::{AppError, AppResult};
use crate::ratelimit::unix_now;
use crate::state::AppState;
use crate::store::users::UserRow;
use crate::store::{self, login_codes, matrix_logouts, refresh_tokens, user_keys};

pub const MAX_CODE_ATTEMPTS: i64 = 5;
pub const CODES_PER_WINDOW: usize = 3;
pub const CODE_WINDOW_SECS: i64 = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePurpose {
    SignIn,
    AddAccount,
}

impl CodePurpose {
    fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::AddAccount => "add_account",
        }
    }

    fn wording(self) -> &'static str {
        match self {
            Self::SignIn => "sign in to Switchboard",
            Self::AddAccount => "add this address as an account in Switchboard",
        }
    }
}

/// Everything a successful sign-in (or account switch) hands to the client.
pub struct Session {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
    pub matrix_access_token: Option<String>,
    pub is_new_user: bool,
    pub profile: Profile,
}

/// Checks the syntax of an e-mail address and returns it normalized.
pub fn validate_email(email: &str) -> AppResult<String> {
    let normalized = crypto::normalize_email(email);
    if normalized.len() > 254 || normalized.parse::<lettre::Address>().is_err() {
        return Err(AppError::invalid("email", "not a valid e-mail address"));
    }
    Ok(normalized)
}

/// Checks that a code is exactly six digits.
pub fn validate_code(code: &str) -> AppResult<()> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AppError::invalid("code", "must be exactly 6 digits"));
    }
    Ok(())
}

/// Creates a code for `email`, stores its hash and mails it.
pub async fn request_code(
    state: &AppState,
    email: &str,
    purpose: CodePurpose,
    requested_by: Option<String>,
) -> AppResult<()> {
    let email = validate_email(email)?;
    let index = users::email_index(&state.master, &email);
    let code = crypto::generate_code();
    let code_for_hash = code.clone();
    let ttl = state.config.auth.code_ttl.0;
    let now = unix_now() as i64;
    let id = state
        .store
        .run(move |c| {
            let recent = login_codes::sent_since(c, &index, now - CODE_WINDOW_SECS)?;
            if recent.len() >= CODES_PER_WINDOW {
                let retry = (recent[0] + CODE_WINDOW_SECS - now).max(1) as u64;
                return Err(AppError::RateLimited {
                    message: format!(
                        "at most {CODES_PER_WINDOW} codes per 10 minutes for one address; retry in {retry} s"
                    ),
                    retry_after_secs: retry,
                });
            }
            let hash = crypto::hash_code(&code_for_hash);
            let expires = now + ttl.as_secs() as i64;
            Ok(login_codes::insert(c, &index, purpose.as_str(), requested_by.as_deref(), &hash, expires, now)?)
        })
        .await?;
    if let Err(e) = state
        .mailer
        .send_code(&email, &code, purpose.wording(), ttl)
        .await
    {
        // Not sent, so it must not count against the address or be usable.
        let _ = state
            .store
            .run(move |c| Ok::<_, AppError>(login_codes::delete(c, id)?))
            .await;
        return Err(AppError::internal(e));
    }
    Ok(())
}

/// Checks `code` against the newest usable code of `email`; consumes it on success.
/// Returns the code's row id and who requested it.
pub async fn check_code(
    state: &AppState,
    email: &str,
    code: &str,
    purpose: CodePurpose,
) -> AppResult<(i64, Option<String>)> {
    let email = validate_email(email)?;
    validate_code(code)?;
    let index = users::email_index(&state.master, &email);
    let code = code.to_owned();
    let now = unix_now() as i64;
    state
        .store
        .run(move |c| {
            let invalid =
                || AppError::bad_request("invalid_code", "invalid or expired verification code");
            let row =
                login_codes::latest_usable(c, &index, purpose.as_str(), now, MAX_CODE_ATTEMPTS)?
                    .ok_or_else(invalid)?;
            if !crypto::verify_code(&code, &row.code_hash) {
                login_codes::record_failure(c, row.id)?;
                return Err(invalid());
            }
            if !login_codes::consume(c, row.id, now)? {
                return Err(invalid());
            }
            Ok((row.id, row.requested_by))
        })
        .await
}

/// `POST /api/auth/verify`: checks the code, creates the user on first sign-in (with its
/// optional X25519 key), makes sure the Matrix account exists, and opens a session.
pub async fn sign_in(
    state: &AppState,
    email: &str,
    code: &str,
    public_key: Option<String>,
) -> AppResult<Session> {
    let email = validate_email(email)?;
    if let Some(key) = &public_key {
        super::keys::validate_public_key(key)?;
    }
    let (code_id, _) = check_code(state, &email, code, CodePurpose::SignIn).await?;
    let result = async {
        let (user, is_new) = find_or_create(state, &email, None, public_key).await?;
        let user = ensure_matrix_account(state, user).await?;
        open_session(state, user, is_new).await
    }
    .await;
    if result.is_err() {
        // The user did nothing wrong: let the same code work for a retry.
        let _ = state
            .store
            .run(move |c| Ok::<_, AppError>(login_codes::release(c, code_id)?))
            .await;
    }
    result
}

/// The user with this e-mail, created (as a member of `primary` when given) if unknown.
pub async fn find_or_create(
    state: &AppState,
    email: &str,
    primary: Option<String>,
    public_key: Option<String>,
) -> AppResult<(UserRow, bool)> {
    let fresh = users::new_user(state, email, primary);
    let admin_listed = fresh.is_admin;
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            if let Some(mut existing) = store::users::find_by_email_index(&tx, &fresh.email_index)?
            {
                if admin_listed && !existing.is_admin {
                    existing.is_admin = true;
                    existing.updated_at = fresh.updated_at;
                    store::users::update(&tx, &existing)?;
                }
                tx.commit()?;
                return Ok((existing, false));
            }
            store::users::insert(&tx, &fresh)?;
            if let Some(key) = public_key {
                user_keys::upsert(
                    &tx,
                    &super::keys::new_key_row(&fresh.id, key, None, 1, fresh.created_at),
                )?;
            }
            tx.commit()?;
            Ok((fresh, true))
        })
        .await
}

/// Registers the user's Matrix account (shared-secret registration; login if it already
/// exists) when it has none yet, and stores the access token sealed.
pub async fn ensure_matrix_account(state: &AppState, mut user: UserRow) -> AppResult<UserRow> {
    if user.matrix_access_token_enc.is_some() {
        return Ok(user);
    }
    let Some(matrix) = &state.matrix else {
        return Ok(user);
    };
    let localpart = format!("sb_{}", user.id.replace('-', ""));
    let password = super::matrix_sessions::matrix_password(&state.master, &user.id);
    let session = matrix
        .register_or_login(&localpart, &password)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "matrix account registration failed");
            AppError::Unavailable {
                code: "homeserver_unavailable",
                message: format!("the Matrix homeserver could not create the account: {e}"),
            }
        })?;
    user.matrix_access_token_enc = Some(users::seal_matrix_token(
        &state.master,
        &user,
        &session.access_token,
    )?);
    user.matrix_user_id = Some(session.user_id);
    user.matrix_device_id = session.device_id;
    user.updated_at = unix_now() as i64;
    let row = user.clone();
    state
        .store
        .run(move |c| Ok::<_, AppError>(store::users::set_matrix_account(c, &row)?))
        .await?;
    // The sync supervisor starts a worker for the new Matrix account.
    state.sync_wakeup.notify_one();
    Ok(user)
}

/// Opens a session for `user`: a Matrix device of its own (see
/// [`super::matrix_sessions`]), an access token naming the session and a refresh token.
pub async fn open_session(
    state: &AppState,
    user: UserRow,
    is_new_user: bool,
) -> AppResult<Session> {
    let session_id = uuid::Uuid::new_v4().simple().to_string();
    let device = matrix_sessions::open_device(state, &user).await?;
    let sealed = match &device {
        Some(d) => Some(matrix_sessions::seal_token(
            &state.master,
            &user,
            &session_id,
            &d.access_token,
        )?),
        None => None,
    };
    let (access_token, expires_in) = state.jwt.issue(&user.id, Some(&session_id))?;
    let refresh_token = crypto::generate_refresh_token();
    let hash = crypto::sha256_hex(&refresh_token);
    let now = unix_now() as i64;
    let expires = now + state.config.auth.refresh_token_ttl.0.as_secs() as i64;
    let (uid, sid) = (user.id.clone(), session_id.clone());
    let device_id = device.as_ref().and_then(|d| d.device_id.clone());
    let stored = state
        .store
        .run(move |c| {
            let session = refresh_tokens::NewSession {
                token_hash: &hash,
                user_id: &uid,
                session_id: &sid,
                matrix_device_id: device_id.as_deref(),
                matrix_access_token_enc: sealed.as_deref(),
                expires_at: expires,
                now,
            };
            Ok::<_, AppError>(refresh_tokens::insert(c, &session)?)
        })
        .await;
    if let Err(e) = stored {
        if let Some(d) = &device {
            matrix_sessions::discard_device(state, &user.id, d).await;
        }
        return Err(e);
    }
    let matrix_access_token = device.map(|d| d.access_token);
    let profile = users::profile_of(&state.master, user)?;
    Ok(Session {
        access_token,
        refresh_token,
        expires_in,
        matrix_access_token,
        is_new_user,
        profile,
    })
}

/// `POST /api/auth/refresh`: a new access token for a valid refresh token.
pub async fn refresh(state: &AppState, refresh_token: &str) -> AppResult<(String, u64)> {
    let hash = crypto::sha256_hex(refresh_token.trim());
    let now = unix_now() as i64;
    let (user_id, session_id) = state
        .store
        .run(move |c| Ok::<_, AppError>(refresh_tokens::valid_session(c, &hash, now)?))
        .await?
        .ok_or_else(|| AppError::unauthorized("invalid, expired or revoked refresh token"))?;
    state.jwt.issue(&user_id, session_id.as_deref())
}

/// `POST /api/auth/logout`: revokes every refresh token of the user and logs the Matrix
/// devices of those sessions out (queued for later when the homeserver does not confirm).
pub async fn logout(state: &AppState, user_id: &str) -> AppResult<usize> {
    let uid = user_id.to_owned();
    let now = unix_now() as i64;
    let revoked = state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let n = refresh_tokens::revoke_all(&tx, &uid, now)?;
            matrix_logouts::queue_user_devices(&tx, &uid, now)?;
            tx.commit()?;
            Ok::<_, AppError>(n)
        })
        .await?;
    matrix_sessions::log_out_queued(state, user_id).await;
    Ok(revoked)
}

/// Lifetime of codes, for messages.
pub fn code_ttl(state: &AppState) -> Duration {
    state.config.auth.code_ttl.0
}
