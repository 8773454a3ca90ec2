//! Passwordless sign-in: sessions (access + refresh tokens) and the user's Matrix account,
//! opened with an e-mailed code ([`super::codes`]).
pub use super::codes::{
    check_code, code_ttl, request_code, validate_code, validate_email, CodePurpose,
};
use super::matrix_sessions;
use super::users::{self, Profile};
use crate::clock::unix_now;
use crate::crypto;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::UserRow;
use crate::store::{self, login_codes, matrix_logouts, refresh_tokens, user_keys};

/// Everything a successful sign-in (or account switch) hands to the client.
pub struct Session {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
    pub matrix_access_token: Option<String>,
    pub is_new_user: bool,
    pub profile: Profile,
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
            let mut row = crate::services::users::load_row(&tx, &uid)?;
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
