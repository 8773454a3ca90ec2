//! Push devices (APNs tokens) and sending pushes to a user's devices.
//!
//! - A token is 64 to 200 hex characters; it is stored lowercased, sealed under the user's
//!   data key (AAD `("devices", "token", tokenId)`), and found through the blind index
//!   `blind_index("device-token", token)`. It is never returned; lists show its last six
//!   characters.
//! - A token belongs to one user: registering it again for the same user updates the
//!   device and keeps its `tokenId`; registering it for another user (someone else signed
//!   in on that phone) moves it, with a new `tokenId`.
//! - `environment` selects the APNs host for the device; it defaults to the server's
//!   `[push] environment` (production when push is not configured).
//! - Pushes go to every device of the user; a token APNs reports dead (410, or 400
//!   `BadDeviceToken` / `Unregistered`) removes its device.
//!
//! Pushes are sent for: due reminders, scheduled messages that failed, and incoming
//! messages of importance ≥ [`IMPORTANT_MESSAGE_THRESHOLD`] that the chat's notification
//! level lets through (see [`crate::services::push::dispatch`]).

use super::scheduled::{now_ms, parse_id};
use super::users;
use crate::config::PushEnvironment;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::devices::{self as store, DeviceRow};

pub const MAX_DEVICE_NAME: usize = 100;
pub const MAX_DEVICE_MODEL: usize = 50;
pub const MAX_OS_VERSION: usize = 20;
pub const MAX_APP_VERSION: usize = 20;
/// Devices a user may register at most.
pub const MAX_DEVICES_PER_USER: i64 = 50;
/// Incoming messages at or above this importance (0 to 1) are pushed.
pub const IMPORTANT_MESSAGE_THRESHOLD: f64 = 0.7;
/// Only messages at most this old (origin server time) are pushed, so a first sync or a
/// backfill of history does not flood the user's phone.
pub const PUSH_MAX_MESSAGE_AGE_MS: i64 = 10 * 60 * 1000;

mod send;

pub use send::{notify_user, status, test, PushStatus};

const INDEX_DOMAIN: &str = "device-token";

/// A device as its owner sees it.
#[derive(Debug, Clone)]
pub struct Device {
    pub row: DeviceRow,
    /// Last six characters of the token; `None` when it cannot be read (key deletion).
    pub token_suffix: Option<String>,
}

fn aad(id: &str) -> Aad<'_> {
    Aad::new("devices", "token", id)
}

/// Re-seals every device push token of `user_id` from `old` to `new` (key deletion replaces
/// the data key; push must keep working). Tokens that cannot be opened are left as they are.
pub fn reseal_tokens(
    conn: &rusqlite::Connection,
    user_id: &str,
    old: &crate::crypto::DataKey,
    new: &crate::crypto::DataKey,
) -> rusqlite::Result<()> {
    for mut row in store::list(conn, user_id)? {
        if let Ok(token) = old.open(&row.token_enc, &aad(&row.id)) {
            row.token_enc = new.seal(&token, &aad(&row.id));
            store::update(conn, &row)?;
        }
    }
    Ok(())
}

/// Validates and normalises (trim, lowercase) a device token.
pub fn validate_token(token: &str) -> AppResult<String> {
    let t = token.trim();
    if !(64..=200).contains(&t.len()) {
        return Err(AppError::invalid(
            "token",
            "must be 64 to 200 hex characters",
        ));
    }
    if !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppError::invalid(
            "token",
            "must contain hex characters only",
        ));
    }
    Ok(t.to_ascii_lowercase())
}

fn optional_field(field: &str, value: Option<String>, max: usize) -> AppResult<Option<String>> {
    let Some(v) = value else { return Ok(None) };
    let v = v.trim().to_owned();
    if v.chars().count() > max {
        return Err(AppError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    if v.chars().any(char::is_control) {
        return Err(AppError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok((!v.is_empty()).then_some(v))
}

pub fn parse_environment(value: &str) -> AppResult<PushEnvironment> {
    match value.trim() {
        "production" => Ok(PushEnvironment::Production),
        "development" => Ok(PushEnvironment::Development),
        _ => Err(AppError::invalid(
            "environment",
            "must be production or development",
        )),
    }
}

pub fn environment_name(env: PushEnvironment) -> &'static str {
    match env {
        PushEnvironment::Production => "production",
        PushEnvironment::Development => "development",
    }
}

fn token_index(state: &Context, token: &str) -> Vec<u8> {
    state.master.blind_index(INDEX_DOMAIN, token)
}

#[derive(Debug, Default)]
pub struct Registration {
    pub token: String,
    pub device_name: Option<String>,
    pub device_model: Option<String>,
    pub os_version: Option<String>,
    pub app_version: Option<String>,
    pub environment: Option<String>,
}

/// Registers (or updates) a device; returns its `tokenId`.
pub async fn register(state: &Context, user_id: &str, reg: Registration) -> AppResult<String> {
    let token = validate_token(&reg.token)?;
    let device_name = optional_field("deviceName", reg.device_name, MAX_DEVICE_NAME)?;
    let device_model = optional_field("deviceModel", reg.device_model, MAX_DEVICE_MODEL)?;
    let os_version = optional_field("osVersion", reg.os_version, MAX_OS_VERSION)?;
    let app_version = optional_field("appVersion", reg.app_version, MAX_APP_VERSION)?;
    let environment = match reg.environment.as_deref() {
        Some(e) if !e.trim().is_empty() => parse_environment(e)?,
        _ => state
            .push
            .as_ref()
            .map(|p| p.environment())
            .unwrap_or(PushEnvironment::Production),
    };
    let index = token_index(state, &token);
    let uid = user_id.to_owned();
    let master = state.master.clone();
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // The data key is read in the transaction that seals with it, so a key deletion
            // cannot slip in between (the token would be sealed under the deleted key).
            let user = crate::services::users::load_row(&tx, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let now = now_ms();
            let (mut row, is_new) = row_for_token(&tx, &uid, index, now)?;
            row.token_enc = dek.seal_str(&token, &aad(&row.id));
            row.device_name = device_name;
            row.device_model = device_model;
            row.os_version = os_version;
            row.app_version = app_version;
            row.environment = environment_name(environment).to_owned();
            row.updated_at = now;
            if is_new {
                store::insert(&tx, &row)?;
            } else {
                store::update(&tx, &row)?;
            }
            tx.commit()?;
            Ok(row.id)
        })
        .await
}

/// The caller's row of the token (`false`: not new), or a new one (`true`): a device that
/// was another user's until now moves to this user; at most [`MAX_DEVICES_PER_USER`].
fn row_for_token(
    tx: &rusqlite::Connection,
    uid: &str,
    index: Vec<u8>,
    now: i64,
) -> AppResult<(DeviceRow, bool)> {
    let other = match store::find_by_index(tx, &index)? {
        Some(d) if d.user_id == uid => return Ok((d, false)),
        other => other,
    };
    if let Some(d) = other {
        store::delete(tx, &d.user_id, &d.id)?;
    }
    if store::count_for_user(tx, uid)? >= MAX_DEVICES_PER_USER {
        return Err(AppError::bad_request(
            ErrorCode::TooManyDevices,
            format!("at most {MAX_DEVICES_PER_USER} devices can be registered; remove one first"),
        ));
    }
    let row = DeviceRow {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: uid.to_owned(),
        token_index: index,
        created_at: now,
        ..DeviceRow::default()
    };
    Ok((row, true))
}

/// Removes the caller's device with this token; 404 when the caller has none.
pub async fn unregister(state: &Context, user_id: &str, token: &str) -> AppResult<()> {
    let token = validate_token(token)?;
    let index = token_index(state, &token);
    let uid = user_id.to_owned();
    let n = state
        .db(move |c| {
            let Some(d) = store::find_by_index(c, &index)? else {
                return Ok(0);
            };
            if d.user_id != uid {
                return Ok(0);
            }
            Ok(store::delete(c, &uid, &d.id)?)
        })
        .await?;
    if n == 0 {
        return Err(AppError::not_found("device"));
    }
    Ok(())
}

pub async fn delete(state: &Context, user_id: &str, token_id: &str) -> AppResult<()> {
    let id = parse_id("tokenId", token_id)?;
    let uid = user_id.to_owned();
    let n = state
        .store
        .query(move |c| store::delete(c, &uid, &id))
        .await?;
    if n == 0 {
        return Err(AppError::not_found("device"));
    }
    Ok(())
}

fn open_token(dek: Option<&DataKey>, row: &DeviceRow) -> Option<String> {
    dek?.open_string(&row.token_enc, &aad(&row.id)).ok()
}

pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<Device>> {
    let user = users::load(state, user_id).await?;
    let dek = users::data_key(&state.master, &user).ok();
    let uid = user_id.to_owned();
    let rows = state.store.query(move |c| store::list(c, &uid)).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let token_suffix =
                open_token(dek.as_ref(), &row).map(|t| t[t.len().saturating_sub(6)..].to_owned());
            Device { row, token_suffix }
        })
        .collect())
}

#[cfg(test)]
mod tests;
