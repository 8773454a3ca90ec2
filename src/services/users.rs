//! User records: creation, sealed columns (e-mail, Matrix token) and lookups by e-mail
//! through the blind index.

use rusqlite::Connection;

use crate::config::DefaultSubscription;
use crate::crypto::{normalize_email, Aad, DataKey, MasterKey};
use crate::error::{AppError, AppResult};
use crate::ratelimit::unix_now;
use crate::state::AppState;
use crate::store::users::{self, UserRow};

const EMAIL_DOMAIN: &str = "email";

pub fn email_index(master: &MasterKey, email: &str) -> Vec<u8> {
    master.blind_index(EMAIL_DOMAIN, &normalize_email(email))
}

pub fn data_key(master: &MasterKey, user: &UserRow) -> AppResult<DataKey> {
    Ok(master.unwrap_dek(&user.dek_wrapped, &user.id)?)
}

pub fn email_of(master: &MasterKey, user: &UserRow) -> AppResult<String> {
    let dek = data_key(master, user)?;
    Ok(dek.open_string(&user.email_enc, &Aad::new("users", "email", &user.id))?)
}

pub fn matrix_token_of(master: &MasterKey, user: &UserRow) -> AppResult<Option<String>> {
    let Some(sealed) = &user.matrix_access_token_enc else {
        return Ok(None);
    };
    let dek = data_key(master, user)?;
    Ok(Some(dek.open_string(
        sealed,
        &Aad::new("users", "matrix_access_token", &user.id),
    )?))
}

pub fn seal_matrix_token(master: &MasterKey, user: &UserRow, token: &str) -> AppResult<Vec<u8>> {
    let dek = data_key(master, user)?;
    Ok(dek.seal_str(token, &Aad::new("users", "matrix_access_token", &user.id)))
}

/// A new user row for `email` with a fresh data key; admin if listed in `auth.admin_emails`.
pub fn new_user(state: &AppState, email: &str, primary_user_id: Option<String>) -> UserRow {
    let id = uuid::Uuid::new_v4().to_string();
    let normalized = normalize_email(email);
    let dek = DataKey::generate();
    let now = unix_now() as i64;
    let is_admin = state
        .config
        .auth
        .admin_emails
        .iter()
        .any(|a| normalize_email(a) == normalized);
    UserRow {
        email_index: email_index(&state.master, &normalized),
        email_enc: dek.seal_str(&normalized, &Aad::new("users", "email", &id)),
        dek_wrapped: state.master.wrap_dek(&dek, &id),
        display_name: None,
        username: None,
        avatar_url: None,
        is_admin,
        onboarding_completed: false,
        subscription_active: state.config.subscriptions.default == DefaultSubscription::Active,
        subscription_until: None,
        matrix_user_id: None,
        matrix_device_id: None,
        matrix_access_token_enc: None,
        primary_user_id,
        keys_shredded: false,
        last_key_deletion_at: None,
        created_at: now,
        updated_at: now,
        id,
    }
}

/// Finds a user by id or, when `who` contains '@', by e-mail.
pub fn find_by_id_or_email(conn: &Connection, master: &MasterKey, who: &str) -> AppResult<UserRow> {
    let found = if who.contains('@') {
        users::find_by_email_index(conn, &email_index(master, who))?
    } else {
        users::find(conn, who)?
    };
    found.ok_or_else(|| AppError::not_found("user"))
}
