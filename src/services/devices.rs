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
use crate::clients::push::{Notification, PushError};
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

fn not_configured() -> AppError {
    AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::PushNotConfigured,
        message: "push notifications are not configured on this server (no [push] section)".into(),
    }
}

fn env_of(row: &DeviceRow) -> PushEnvironment {
    if row.environment == "development" {
        PushEnvironment::Development
    } else {
        PushEnvironment::Production
    }
}

/// Sends to one device; forgets the device when APNs says its token is dead, records the
/// use otherwise.
async fn push_to(
    state: &Context,
    row: &DeviceRow,
    token: &str,
    n: &Notification,
) -> Result<(), PushError> {
    let Some(push) = &state.push else {
        return Err(PushError::Unreachable("push is not configured".into()));
    };
    let result = push.send(token, env_of(row), n).await;
    let (id, index) = (row.id.clone(), row.token_index.clone());
    let gone = matches!(&result, Err(e) if e.device_is_gone());
    let ok = result.is_ok();
    if gone || ok {
        let done = state
            .store
            .run(move |c| {
                if gone {
                    store::delete_if_token(c, &id, &index)
                } else {
                    store::touch(c, &id, now_ms())
                }
                .map_err(AppError::from)
            })
            .await;
        if let Err(e) = done {
            tracing::warn!(error = %e, "could not record a push outcome");
        }
    }
    if gone {
        tracing::info!(device = %row.id, "APNs reported the device token dead; device removed");
    }
    result
}

/// `POST /api/devices/{tokenId}/test`: 503 `push_not_configured` without `[push]`, 404 for
/// an unknown device, 502 `push_rejected` with the APNs reason (the device is removed when
/// the token is dead), 503 `push_unavailable` when APNs cannot be reached.
pub async fn test(state: &Context, user_id: &str, token_id: &str) -> AppResult<()> {
    let id = parse_id("tokenId", token_id)?;
    if state.push.is_none() {
        return Err(not_configured());
    }
    let user = users::load(state, user_id).await?;
    let uid = user_id.to_owned();
    let row = state
        .store
        .run(move |c| store::find(c, &uid, &id)?.ok_or_else(|| AppError::not_found("device")))
        .await?;
    let dek = users::data_key(&state.master, &user).ok();
    let Some(token) = open_token(dek.as_ref(), &row) else {
        return Err(AppError::conflict(
            ErrorCode::DeviceTokenUnreadable,
            "this device's token was sealed under a deleted key; register the device again",
        ));
    };
    let n = Notification::new(
        "Switchboard",
        "Test notification: push works on this device.",
    )
    .with("type", "test");
    let Err(e) = push_to(state, &row, &token, &n).await else {
        return Ok(());
    };
    let removed = if e.device_is_gone() {
        "; the device was removed"
    } else {
        ""
    };
    Err(match e {
        PushError::Rejected { status, reason } => AppError::BadGateway {
            code: ErrorCode::PushRejected,
            message: format!("APNs rejected the notification: {reason} (HTTP {status}){removed}"),
        },
        other => {
            // The detail is reqwest's text, whose URL holds the APNs host and the device
            // token: log only.
            tracing::warn!(error = %other, "push not delivered");
            AppError::Unavailable {
                retry_after_secs: None,
                code: ErrorCode::PushUnavailable,
                message: match other {
                    PushError::Signing(_) => "the APNs provider token cannot be signed; \
                                              see the server log"
                        .to_owned(),
                    _ => "APNs is unreachable".to_owned(),
                },
            }
        }
    })
}

/// `GET /api/devices/status`.
pub struct PushStatus {
    pub configured: bool,
    pub environment: Option<&'static str>,
    pub bundle_id: Option<String>,
}

pub fn status(state: &Context) -> PushStatus {
    match &state.push {
        Some(p) => PushStatus {
            configured: true,
            environment: Some(environment_name(p.environment())),
            bundle_id: Some(p.bundle_id().to_owned()),
        },
        None => PushStatus {
            configured: false,
            environment: None,
            bundle_id: None,
        },
    }
}

/// Pushes `notification` to every device of `user_id` (concurrently; dead tokens are
/// removed). A no-op without `[push]` or devices. Returns how many devices accepted it.
///
/// Public so other services can notify a user (e.g. the sync engine for important
/// messages, if it prefers calling this over the event hook).
pub async fn notify_user(state: &Context, user_id: &str, notification: Notification) -> usize {
    if state.push.is_none() {
        return 0;
    }
    let uid = user_id.to_owned();
    let loaded = state
        .db(move |c| {
            let devices = store::list(c, &uid)?;
            let user = crate::store::users::find(c, &uid)?;
            Ok((devices, user))
        })
        .await;
    let (devices, user) = match loaded {
        Ok((d, Some(u))) if !d.is_empty() => (d, u),
        Ok(_) => return 0,
        Err(e) => {
            tracing::warn!(error = %e, "cannot load devices for a push");
            return 0;
        }
    };
    let dek = users::data_key(&state.master, &user).ok();
    let sends = devices.iter().filter_map(|row| {
        let token = open_token(dek.as_ref(), row)?;
        let n = &notification;
        Some(async move { push_to(state, row, &token, n).await })
    });
    let results = futures_util::future::join_all(sends).await;
    let mut accepted = 0;
    for r in results {
        match r {
            Ok(()) => accepted += 1,
            Err(e) => tracing::warn!(error = %e, "push not delivered"),
        }
    }
    accepted
}

#[cfg(test)]
mod tests;
