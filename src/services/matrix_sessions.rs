//! The app's Matrix devices: every session (a sign-in or an account switch) logs in to the
//! user's Matrix account as a device of its own, and hands that device's token to the app
//! as `matrixAccessToken`. Switchboard's own device (`users.matrix_device_id`, whose token
//! the sync worker and the scheduler use) is never handed out and never logged out here.
//!
//! When a session ends — logout, removal of the account from its group, key deletion,
//! expiry — its device moves to the `matrix_logouts` queue in the same transaction, and is
//! logged out on the homeserver with `POST /delete_devices` (acting as Switchboard's own
//! device, confirmed with the account password). Logout and the other routes try that at
//! once (for at most [`IMMEDIATE_WAIT`]); what the homeserver did not confirm stays queued
//! and a background loop retries it ([`RETRY_SECS`]) until it does.

use std::time::Duration;

use crate::clients::matrix::{MatrixClient, MatrixSession};
use crate::clock::unix_now;
use crate::crypto::{Aad, MasterKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::users::UserRow;
use crate::store::{matrix_logouts, refresh_tokens};

use super::users;

/// Display name of the app devices (Switchboard's own device is called "Switchboard").
pub const APP_DEVICE_NAME: &str = "Switchboard app";

/// How long a request that ended sessions waits for the homeserver's confirmation.
pub const IMMEDIATE_WAIT: Duration = Duration::from_secs(5);

/// Delays before retrying a logout the homeserver did not confirm (the last repeats).
pub const RETRY_SECS: [i64; 4] = [30, 120, 600, 3600];

/// How often the background loop looks for ended sessions and due retries.
const LOOP_EVERY: Duration = Duration::from_secs(60);

/// The password of a user's Matrix account: derived from the master key, never stored.
pub fn matrix_password(master: &MasterKey, user_id: &str) -> String {
    hex::encode(master.blind_index("matrix-password", user_id))
}

fn token_aad(session_id: &str) -> Aad<'_> {
    Aad::new("refresh_tokens", "matrix_access_token", session_id)
}

/// Seals a session's Matrix token under the user's data key.
pub fn seal_token(
    master: &MasterKey,
    user: &UserRow,
    session_id: &str,
    token: &str,
) -> AppResult<Vec<u8>> {
    Ok(users::data_key(master, user)?.seal_str(token, &token_aad(session_id)))
}

fn homeserver_unavailable(e: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %e, "matrix login for an app session failed");
    AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: format!("the Matrix homeserver could not open a session: {e}"),
    }
}

/// Logs in to `user`'s Matrix account as a new app device. `None` without a homeserver
/// or before the user has a Matrix account; 503 `homeserver_unavailable` when the
/// homeserver refuses or cannot be reached.
pub async fn open_device(state: &Context, user: &UserRow) -> AppResult<Option<MatrixSession>> {
    let (Some(matrix), Some(mxid)) = (&state.matrix, &user.matrix_user_id) else {
        return Ok(None);
    };
    let password = matrix_password(&state.master, &user.id);
    let session = matrix
        .login_device(mxid, &password, APP_DEVICE_NAME)
        .await
        .map_err(homeserver_unavailable)?;
    if session.device_id.is_none() {
        // Without a device id it could never be logged out again: do not hand it out.
        let _ = matrix.logout(&session.access_token).await;
        return Err(homeserver_unavailable("the login named no device"));
    }
    Ok(Some(session))
}

/// Logs out a device whose session could not be stored (best effort: nothing refers to
/// it, so it is queued when the homeserver does not confirm).
pub async fn discard_device(state: &Context, user_id: &str, device: &MatrixSession) {
    let Some(matrix) = &state.matrix else { return };
    if matrix.logout(&device.access_token).await.is_ok() {
        return;
    }
    if let Some(device_id) = device.device_id.clone() {
        let uid = user_id.to_owned();
        let now = unix_now() as i64;
        let _ = state
            .store
            .query(move |c| matrix_logouts::queue(c, &uid, &device_id, now))
            .await;
    }
}

/// The Matrix token of the session `session_id` of `user` (`GET /api/accounts/active`):
/// its own device's token, a new device when it has none (its device was logged out by a
/// key deletion), `None` when the session has ended, the access token names no session,
/// or there is no homeserver.
pub async fn session_token(
    state: &Context,
    user: &UserRow,
    session_id: Option<&str>,
) -> AppResult<Option<String>> {
    let Some(sid) = session_id.map(str::to_owned) else {
        return Ok(None);
    };
    let (uid, key) = (user.id.clone(), sid.clone());
    let now = unix_now() as i64;
    let found = state
        .store
        .query(move |c| refresh_tokens::live_session_device(c, &uid, &key, now))
        .await?;
    let Some(found) = found else { return Ok(None) };
    if found.web {
        return Ok(None);
    }
    if let Some(sealed) = &found.access_token_enc {
        let dek = users::data_key(&state.master, user)?;
        return Ok(Some(dek.open_string(sealed, &token_aad(&sid))?));
    }
    let Some(device) = open_device(state, user).await? else {
        return Ok(None);
    };
    let device_id = device.device_id.clone().unwrap_or_default();
    let sealed = seal_token(&state.master, user, &sid, &device.access_token)?;
    let set = state
        .db(move |c| {
            Ok(refresh_tokens::set_device(
                c, &sid, &device_id, &sealed, now,
            )?)
        })
        .await;
    match set {
        Ok(true) => Ok(Some(device.access_token)),
        // A concurrent request gave the session a device first, or it just ended.
        Ok(false) => {
            discard_device(state, &user.id, &device).await;
            Box::pin(session_token(state, user, session_id)).await
        }
        Err(e) => {
            discard_device(state, &user.id, &device).await;
            Err(e)
        }
    }
}

/// Logs out `user_id`'s queued devices now, waiting at most [`IMMEDIATE_WAIT`]; what is
/// not confirmed by then stays queued for the background loop. Never fails: the caller's
/// own change (a logout, a removal) is already committed.
pub async fn log_out_queued(state: &Context, user_id: &str) {
    let Some(matrix) = state.matrix.clone() else {
        return;
    };
    let attempt = log_out_user(state, &matrix, user_id, None);
    match tokio::time::timeout(IMMEDIATE_WAIT, attempt).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "queued Matrix logouts failed"),
        Err(_) => {
            tracing::warn!("the homeserver did not confirm the logouts in time; retrying later")
        }
    }
}

/// One attempt at `user_id`'s queued devices (all, or those due by `due_by`).
async fn log_out_user(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    due_by: Option<i64>,
) -> AppResult<()> {
    let uid = user_id.to_owned();
    let (user, queued) = state
        .db(move |c| {
            let user = crate::store::users::find(c, &uid)?;
            let queued = matrix_logouts::queued(c, &uid, due_by)?;
            Ok((user, queued))
        })
        .await?;
    let Some(user) = user else { return Ok(()) };
    if queued.is_empty() {
        return Ok(());
    }
    let attempts = queued.iter().map(|(_, a)| *a).min().unwrap_or(0);
    let (own, devices): (Vec<String>, Vec<String>) = queued
        .into_iter()
        .map(|(d, _)| d)
        .partition(|d| Some(d) == user.matrix_device_id.as_ref());
    let outcome = match (
        users::matrix_token_of(&state.master, &user)?,
        &user.matrix_user_id,
    ) {
        _ if devices.is_empty() => Ok(()),
        (Some(token), Some(mxid)) => {
            let password = matrix_password(&state.master, &user.id);
            matrix
                .delete_devices(&token, mxid, &password, &devices)
                .await
                .map_err(|e| e.to_string())
        }
        _ => Err("the user has no Matrix session to act with".to_owned()),
    };
    let now = unix_now() as i64;
    let uid = user_id.to_owned();
    let result = outcome.clone();
    state
        .db(move |c| {
            // Switchboard's own device is never logged out; drop it from the queue.
            matrix_logouts::remove(c, &uid, &own)?;
            match &result {
                Ok(()) => matrix_logouts::remove(c, &uid, &devices)?,
                Err(e) => {
                    let delay = RETRY_SECS[(attempts.max(0) as usize).min(RETRY_SECS.len() - 1)];
                    matrix_logouts::record_failure(c, &uid, &devices, now + delay, e)?
                }
            }
            Ok(())
        })
        .await?;
    outcome.map_err(|e| AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: e,
    })
}

/// Starts the loop that queues the devices of expired sessions and retries queued
/// logouts (with a homeserver only). Its first round, at start, tries every queued device
/// whatever its retry time: the outage may have been this process's (a wrong URL, a
/// network that came up late). Ends on shutdown.
pub fn spawn(state: &Context) -> Option<tokio::task::JoinHandle<()>> {
    let matrix = state.matrix.clone()?;
    let state = state.clone();
    Some(tokio::spawn(async move {
        let mut first = true;
        loop {
            let result = round(&state, &matrix, first).await;
            first = false;
            if let Err(e) = result {
                tracing::warn!(error = %e, "Matrix logout round failed");
            }
            tokio::select! {
                _ = tokio::time::sleep(LOOP_EVERY) => {}
                _ = state.shutdown.wait() => return,
            }
        }
    }))
}

async fn round(state: &Context, matrix: &MatrixClient, everything: bool) -> AppResult<()> {
    let now = unix_now() as i64;
    let due_by = if everything { i64::MAX } else { now };
    let users = state
        .db(move |c| {
            matrix_logouts::queue_ended_sessions(c, now)?;
            Ok(matrix_logouts::users_due(c, due_by, 100)?)
        })
        .await?;
    for user_id in users {
        if let Err(e) = log_out_user(state, matrix, &user_id, Some(due_by)).await {
            tracing::warn!(error = %e, "a queued Matrix logout failed; retrying later");
        }
    }
    Ok(())
}
