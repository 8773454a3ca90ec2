//! Sending to a user's devices through APNs: the test push of one device, the push to all
//! of them, and what APNs' answer does to a device (a dead token removes it).

use super::{environment_name, open_token};
use crate::clients::push::{Notification, PushError};
use crate::config::PushEnvironment;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::scheduled::{now_ms, parse_id};
use crate::services::users;
use crate::services::Context;
use crate::store::devices::{self as store, DeviceRow};

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
