//! User records: creation, sealed columns (e-mail, Matrix token) and lookups by e-mail
//! through the blind index.

use rusqlite::Connection;

use crate::clock::unix_now;
use crate::config::DefaultSubscription;
use crate::crypto::{normalize_email, Aad, DataKey, MasterKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
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
pub fn new_user(state: &Context, email: &str, primary_user_id: Option<String>) -> UserRow {
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

/// A user with its e-mail opened, ready to be shown to its owner.
#[derive(Debug, Clone)]
pub struct Profile {
    pub user: UserRow,
    pub email: String,
}

pub fn profile_of(master: &MasterKey, user: UserRow) -> AppResult<Profile> {
    let email = email_of(master, &user)?;
    Ok(Profile { user, email })
}

pub async fn load(state: &Context, user_id: &str) -> AppResult<UserRow> {
    let uid = user_id.to_owned();
    state.store.run(move |c| load_row(c, &uid)).await
}

/// The user's row, or 404 `not_found` naming the user: the one way a service loads the
/// caller inside its own database job.
pub fn load_row(c: &Connection, user_id: &str) -> AppResult<UserRow> {
    users::find(c, user_id)?.ok_or_else(|| AppError::not_found("user"))
}

pub async fn load_profile(state: &Context, user_id: &str) -> AppResult<Profile> {
    profile_of(&state.master, load(state, user_id).await?)
}

/// Profile changes; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct ProfileChange {
    pub display_name: Option<String>,
    pub username: Option<String>,
    pub avatar_url: Option<String>,
}

pub fn validate_display_name(name: &str) -> AppResult<String> {
    let trimmed = name.trim();
    let n = trimmed.chars().count();
    if !(1..=255).contains(&n) {
        return Err(AppError::invalid(
            "displayName",
            "must be 1 to 255 characters",
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "displayName",
            "must not contain control characters",
        ));
    }
    Ok(trimmed.to_owned())
}

pub fn validate_username(name: &str) -> AppResult<String> {
    if !(3..=50).contains(&name.len()) {
        return Err(AppError::invalid("username", "must be 3 to 50 characters"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(AppError::invalid(
            "username",
            "only letters, digits and underscore are allowed",
        ));
    }
    Ok(name.to_owned())
}

/// Accepts a base64 image (a `data:image/…;base64,` URL or bare base64 of PNG, JPEG, GIF
/// or WebP bytes), an `mxc://server/media` URL, or an `https://` URL.
pub fn validate_avatar_url(value: &str) -> AppResult<String> {
    let v = value.trim();
    let bad = |why: &str| AppError::invalid("avatarUrl", why);
    if let Some(rest) = v.strip_prefix("mxc://") {
        let mut parts = rest.splitn(2, '/');
        let server = parts.next().unwrap_or_default();
        let media = parts.next().unwrap_or_default();
        let ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:[]".contains(c))
        };
        if !ok(server) || !ok(media) {
            return Err(bad("mxc:// URLs look like mxc://server/mediaId"));
        }
        return Ok(v.to_owned());
    }
    if v.starts_with("https://") {
        let url = reqwest::Url::parse(v).map_err(|e| bad(&format!("not a valid URL: {e}")))?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("https URL without a host"));
        }
        return Ok(v.to_owned());
    }
    let payload = match v.strip_prefix("data:") {
        Some(rest) => {
            let (meta, data) = rest
                .split_once(',')
                .ok_or_else(|| bad("malformed data URL"))?;
            if !meta.starts_with("image/") || !meta.ends_with(";base64") {
                return Err(bad("data URLs must be data:image/<type>;base64,…"));
            }
            data
        }
        None => v,
    };
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|_| bad("must be a base64 image, an mxc:// URL or an https:// URL"))?;
    let is_image = bytes.starts_with(b"\x89PNG\r\n\x1a\n")
        || bytes.starts_with(b"\xff\xd8\xff")
        || bytes.starts_with(b"GIF8")
        || (bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP");
    if !is_image {
        return Err(bad("base64 data is not a PNG, JPEG, GIF or WebP image"));
    }
    Ok(v.to_owned())
}

fn username_taken() -> AppError {
    AppError::conflict(ErrorCode::UsernameTaken, "this username is already taken")
}

/// Applies a validated profile change; 409 `username_taken` when another user has the
/// username (compared case-insensitively).
pub async fn update_profile(
    state: &Context,
    user_id: &str,
    change: ProfileChange,
) -> AppResult<Profile> {
    let display_name = change
        .display_name
        .as_deref()
        .map(validate_display_name)
        .transpose()?;
    let username = change
        .username
        .as_deref()
        .map(validate_username)
        .transpose()?;
    let avatar_url = change
        .avatar_url
        .as_deref()
        .map(validate_avatar_url)
        .transpose()?;
    let uid = user_id.to_owned();
    let row = state
        .store
        .run(move |c| {
            // Read and write back in one IMMEDIATE transaction: the write covers every column,
            // so a concurrent key deletion or subscription change committed between a bare
            // read and this write would be reverted.
            let tx = c.transaction()?;
            let mut user = load_row(&tx, &uid)?;
            if let Some(name) = username {
                if users::find_by_username(&tx, &name)?.is_some_and(|other| other.id != user.id) {
                    return Err(username_taken());
                }
                user.username = Some(name);
            }
            if let Some(name) = display_name {
                user.display_name = Some(name);
            }
            if let Some(url) = avatar_url {
                user.avatar_url = Some(url);
            }
            user.updated_at = unix_now() as i64;
            match users::update(&tx, &user) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    Err(username_taken())
                }
                Err(e) => Err(AppError::from(e)),
                Ok(_) => {
                    tx.commit()?;
                    Ok(user)
                }
            }
        })
        .await?;
    profile_of(&state.master, row)
}

pub async fn complete_onboarding(
    state: &Context,
    user_id: &str,
    display_name: Option<String>,
) -> AppResult<Profile> {
    let display_name = display_name
        .as_deref()
        .map(validate_display_name)
        .transpose()?;
    let uid = user_id.to_owned();
    let row = state
        .db(move |c| {
            let tx = c.transaction()?;
            let mut user = load_row(&tx, &uid)?;
            if let Some(name) = display_name {
                user.display_name = Some(name);
            }
            user.onboarding_completed = true;
            user.updated_at = unix_now() as i64;
            users::update(&tx, &user)?;
            tx.commit()?;
            Ok(user)
        })
        .await?;
    profile_of(&state.master, row)
}

/// The user's Matrix access token, or 409 `matrix_account_missing` when the account has
/// none yet (what every route acting on the homeserver needs first).
pub fn matrix_token(state: &Context, user: &UserRow) -> AppResult<String> {
    matrix_token_of(&state.master, user)?.ok_or_else(|| {
        AppError::conflict(
            ErrorCode::MatrixAccountMissing,
            "this account has no Matrix session yet; sign in again in the native app",
        )
    })
}
