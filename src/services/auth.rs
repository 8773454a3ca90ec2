//! Passwordless sign-in: e-mailed codes, sessions (access + refresh tokens) and the
//! user's Matrix account.
//!
//! Codes: 6 digits, argon2-hashed, single use, expiring after `auth.code_ttl`; five wrong
//! tries burn a code; requesting a new code kills every older one, used or not; at most
//! three codes per ten minutes and 20 wrong codes per 24 hours per address.

use std::time::Duration;

use super::matrix_sessions;
use super::users::{self, Profile};
use crate::clock::unix_now;
use crate::crypto;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::UserRow;
use crate::store::{self, login_codes, matrix_logouts, refresh_tokens, user_keys};

pub const MAX_CODE_ATTEMPTS: i64 = 5;
pub const CODES_PER_WINDOW: usize = 3;
pub const CODE_WINDOW_SECS: i64 = 600;
/// `auth.max_code_failures` (20 by default) wrong codes per address per this window. With
/// one-in-a-million codes, a guesser gets 20 × 365 = 7,300 tries a year: a 0.73% chance of
/// ever getting in. The price: whoever knows the address can spend its tries and lock its
/// owner out of signing in (not of sessions already open) for up to a day.
pub const FAILURE_WINDOW_SECS: i64 = 86_400;
/// How long a request waits for a hashing slot before it is told the server is busy.
const HASH_QUEUE_WAIT: Duration = Duration::from_secs(5);

/// Argon2 is deliberately costly: it runs on blocking threads, never while holding a
/// database connection, and at most on half the cores at once, so a flood of sign-in
/// requests cannot starve everyone else of connections or CPU.
static HASH_SLOTS: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::sync::Semaphore::new((cores / 2).max(1))
});

async fn in_hash_slot<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> AppResult<T> {
    let permit = tokio::time::timeout(HASH_QUEUE_WAIT, HASH_SLOTS.acquire())
        .await
        .map_err(|_| AppError::busy("too many sign-in requests at once; retry in a moment"))?
        .map_err(AppError::internal)?;
    let out = tokio::task::spawn_blocking(work)
        .await
        .map_err(AppError::internal)?;
    drop(permit);
    Ok(out)
}

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
    state: &Context,
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
    // The per-address limit is checked before the costly hash, and again with the insert.
    let check_index = index.clone();
    state
        .store
        .run(move |c| check_code_budget(c, &check_index, now))
        .await?;
    let hash = in_hash_slot(move || crypto::hash_code(&code_for_hash)).await?;
    let id = state
        .db(move |c| {
            let tx = c.transaction()?;
            check_code_budget(&tx, &index, now)?;
            let expires = now + ttl.as_secs() as i64;
            let id = login_codes::insert(
                &tx,
                &index,
                purpose.as_str(),
                requested_by.as_deref(),
                &hash,
                expires,
                now,
            )?;
            tx.commit()?;
            Ok(id)
        })
        .await?;
    if let Err(e) = state
        .mailer
        .send_code(&email, &code, purpose.wording(), ttl)
        .await
    {
        // Not sent, so it must not count against the address or be usable.
        let _ = state.store.query(move |c| login_codes::delete(c, id)).await;
        // The mail server's words (and address) go to the log, not to the caller.
        tracing::warn!(error = %e, "sign-in code could not be mailed");
        return Err(AppError::Unavailable {
            retry_after_secs: None,
            code: ErrorCode::MailUnavailable,
            message: "the code could not be mailed; try again in a moment".to_owned(),
        });
    }
    Ok(())
}

/// Checks `code` against the newest usable code of `email`; consumes it on success.
/// Returns the code's row id and who requested it.
pub async fn check_code(
    state: &Context,
    email: &str,
    code: &str,
    purpose: CodePurpose,
) -> AppResult<(i64, Option<String>)> {
    let email = validate_email(email)?;
    validate_code(code)?;
    let index = users::email_index(&state.master, &email);
    let code = code.to_owned();
    let now = unix_now() as i64;
    let invalid = || {
        AppError::bad_request(
            ErrorCode::InvalidCode,
            "invalid or expired verification code",
        )
    };
    // One transaction: the address's failure budget, the code's own tries, and a failure
    // recorded in advance (taken back below if the code is right), so that concurrent
    // guesses cannot together exceed either limit.
    let taken_index = index.clone();
    let max_failures = i64::from(state.config.auth.max_code_failures);
    let (row, failure_id) = state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let (failures, oldest) = login_codes::failures_since(&tx, &taken_index, now - FAILURE_WINDOW_SECS)?;
            if failures >= max_failures {
                let retry = (oldest.unwrap_or(now) + FAILURE_WINDOW_SECS - now).max(1) as u64;
                return Err(AppError::TooManyRequests {
                    code: ErrorCode::TooManyAttempts,
                    message: format!(
                        "too many wrong codes for this address ({max_failures} per 24 h); retry in {retry} s"
                    ),
                    retry_after_secs: Some(retry),
                });
            }
            let Some(row) = login_codes::newest_usable(&tx, &taken_index, purpose.as_str(), now)? else {
                return Ok(None);
            };
            if login_codes::take_attempt(&tx, row.id, MAX_CODE_ATTEMPTS)?.is_none() {
                return Ok(None);
            }
            let failure_id = login_codes::record_failure(&tx, &taken_index, now)?;
            tx.commit()?;
            Ok(Some((row, failure_id)))
        })
        .await?
        .ok_or_else(invalid)?;
    let hash = row.code_hash.clone();
    if !in_hash_slot(move || crypto::verify_code(&code, &hash)).await? {
        return Err(invalid());
    }
    let (id, requested_by) = (row.id, row.requested_by);
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            if !login_codes::consume(&tx, id, now)? {
                return Err(invalid());
            }
            login_codes::forget_failure(&tx, failure_id)?;
            tx.commit()?;
            Ok((id, requested_by))
        })
        .await
}

/// 429 when three codes were sent to this address in the last ten minutes.
fn check_code_budget(c: &rusqlite::Connection, index: &[u8], now: i64) -> AppResult<()> {
    let recent = login_codes::sent_since(c, index, now - CODE_WINDOW_SECS)?;
    if recent.len() >= CODES_PER_WINDOW {
        let retry = (recent[0] + CODE_WINDOW_SECS - now).max(1) as u64;
        return Err(AppError::TooManyRequests {
            code: ErrorCode::RateLimited,
            message: format!(
                "at most {CODES_PER_WINDOW} codes per 10 minutes for one address; retry in {retry} s"
            ),
            retry_after_secs: Some(retry),
        });
    }
    Ok(())
}

/// `POST /api/auth/verify`: checks the code, creates the user on first sign-in (with its
/// optional X25519 key), makes sure the Matrix account exists, and opens a session.
pub async fn sign_in(
    state: &Context,
    email: &str,
    code: &str,
    public_key: Option<String>,
    web: bool,
) -> AppResult<Session> {
    let email = validate_email(email)?;
    if let Some(key) = &public_key {
        super::public_key::validate_public_key(key)?;
    }
    let (code_id, _) = check_code(state, &email, code, CodePurpose::SignIn).await?;
    let result = async {
        let (user, is_new) = find_or_create(state, &email, None, public_key).await?;
        let user = ensure_matrix_account(state, user).await?;
        open_session(state, user, is_new, web).await
    }
    .await;
    if result.is_err() {
        // The user did nothing wrong: let the same code work for a retry.
        let _ = state
            .store
            .query(move |c| login_codes::release(c, code_id))
            .await;
    }
    result
}

/// The user with this e-mail, created (as a member of `primary` when given) if unknown.
pub async fn find_or_create(
    state: &Context,
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
pub async fn ensure_matrix_account(state: &Context, user: UserRow) -> AppResult<UserRow> {
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
                retry_after_secs: None,
                code: ErrorCode::HomeserverUnavailable,
                message: format!(
                    "the Matrix homeserver could not create the account ({})",
                    e.public_message()
                ),
            }
        })?;
    // Sealed inside the transaction that writes it, under the data key read there: the
    // registration above took a network round trip, during which the user may have deleted
    // their keys (a token sealed under the old key would be unreadable for good).
    let master = state.master.clone();
    let uid = user.id.clone();
    let user = state
        .db(move |c| {
            let tx = c.transaction()?;
            let mut row =
                store::users::find(&tx, &uid)?.ok_or_else(|| AppError::not_found("user"))?;
            row.matrix_access_token_enc = Some(users::seal_matrix_token(
                &master,
                &row,
                &session.access_token,
            )?);
            row.matrix_user_id = Some(session.user_id);
            row.matrix_device_id = session.device_id;
            row.updated_at = unix_now() as i64;
            store::users::set_matrix_account(&tx, &row)?;
            tx.commit()?;
            Ok(row)
        })
        .await?;
    // The sync supervisor starts a worker for the new Matrix account.
    state.sync_wakeup.notify_one();
    Ok(user)
}

/// Opens a session for `user`: a Matrix device of its own (see
/// [`super::matrix_sessions`]), an access token naming the session and a refresh token.
/// A `web` session (the browser app) gets no Matrix device: the app never uses one, and a
/// token to the user's Matrix account should not sit where page scripts can read it.
pub async fn open_session(
    state: &Context,
    user: UserRow,
    is_new_user: bool,
    web: bool,
) -> AppResult<Session> {
    let session_id = uuid::Uuid::new_v4().simple().to_string();
    let device = if web {
        None
    } else {
        matrix_sessions::open_device(state, &user).await?
    };
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
        .db(move |c| {
            let session = refresh_tokens::NewSession {
                token_hash: &hash,
                user_id: &uid,
                session_id: &sid,
                matrix_device_id: device_id.as_deref(),
                matrix_access_token_enc: sealed.as_deref(),
                web,
                expires_at: expires,
                now,
            };
            Ok(refresh_tokens::insert(c, &session)?)
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
pub async fn refresh(state: &Context, refresh_token: &str) -> AppResult<(String, u64)> {
    let hash = crypto::sha256_hex(refresh_token.trim());
    let now = unix_now() as i64;
    let (user_id, session_id) = state
        .store
        .query(move |c| refresh_tokens::valid_session(c, &hash, now))
        .await?
        .ok_or_else(|| AppError::unauthorized("invalid, expired or revoked refresh token"))?;
    state.jwt.issue(&user_id, session_id.as_deref())
}

/// `POST /api/auth/logout`: revokes every refresh token of the user and logs the Matrix
/// devices of those sessions out (queued for later when the homeserver does not confirm).
pub async fn logout(state: &Context, user_id: &str) -> AppResult<usize> {
    let uid = user_id.to_owned();
    let now = unix_now() as i64;
    let revoked = state
        .db(move |c| {
            let tx = c.transaction()?;
            let n = refresh_tokens::revoke_all(&tx, &uid, now)?;
            matrix_logouts::queue_user_devices(&tx, &uid, now)?;
            tx.commit()?;
            Ok(n)
        })
        .await?;
    matrix_sessions::log_out_queued(state, user_id).await;
    Ok(revoked)
}

/// Lifetime of codes, for messages.
pub fn code_ttl(state: &Context) -> Duration {
    state.config.auth.code_ttl.0
}
