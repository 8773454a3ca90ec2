//! SAS (emoji) verification of the sync device with the user's other Matrix devices
//! (docs/design.md, E2EE and trust): listing and answering the flows the crypto
//! machine runs, and announcing their changes as `verification.updated` on `/api/sync`.
//!
//! Flows live in the machine's memory: a restart forgets unfinished ones (the other
//! device then times out) and the list of finished ones; the trust a finished one
//! gave stays in the crypto store.

use std::sync::Arc;

use super::e2ee::{error as e2ee_error, machine_for};
use crate::clients::matrix::e2ee::{Action, ActionError, UserCrypto, VerificationInfo};
use crate::clients::matrix::MatrixClient;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::Context;

/// Longest verification id accepted (flow ids are client-chosen transaction ids).
const MAX_ID_LEN: usize = 255;

/// The user's machine, or `None` without a homeserver or Matrix account.
async fn machine(state: &Context, user_id: &str) -> AppResult<Option<Arc<UserCrypto>>> {
    let uid = user_id.to_owned();
    let user = crate::services::users::load(state, &uid).await?;
    machine_for(state, &user).await
}

/// The user's verifications, oldest first; empty without a Matrix account.
pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<VerificationInfo>> {
    Ok(match machine(state, user_id).await? {
        Some(crypto) => crypto.verifications().await,
        None => Vec::new(),
    })
}

/// Accepts, confirms or cancels one of the user's verifications; the answer is sent to
/// the other device before this returns. 404 for an id the user's machine does not
/// know, 409 `verification_state` when the action does not fit the state.
pub async fn act(
    state: &Context,
    user_id: &str,
    id: &str,
    action: Action,
) -> AppResult<VerificationInfo> {
    let not_found = || AppError::not_found("verification");
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(not_found());
    }
    let (Some(matrix), Some(crypto)) = (&state.matrix, machine(state, user_id).await?) else {
        return Err(not_found());
    };
    let info = match crypto.act_on_verification(matrix, id, action).await {
        Ok(info) => info,
        Err(ActionError::Unknown) => return Err(not_found()),
        Err(ActionError::WrongState(s)) => {
            return Err(AppError::conflict(
                ErrorCode::VerificationState,
                format!(
                    "state: the verification is {}; {} needs {}",
                    s.as_str(),
                    verb(action),
                    needs(action)
                ),
            ))
        }
        Err(ActionError::E2ee(e)) => return Err(e2ee_error(e)),
    };
    settle(state, matrix, user_id, &crypto).await;
    Ok(info)
}

fn verb(action: Action) -> &'static str {
    match action {
        Action::Accept => "accept",
        Action::Confirm => "confirm",
        Action::Cancel => "cancel",
    }
}

fn needs(action: Action) -> &'static str {
    match action {
        Action::Accept => "requested, or started by the other device and not accepted yet",
        Action::Confirm => "keys_exchanged, not confirmed yet",
        Action::Cancel => "a verification that has not ended",
    }
}

/// Called by the sync worker after each sync's crypto requests went out: answers what
/// the flows need (see `UserCrypto::settle_verifications`) and announces changed ones.
pub async fn settle(state: &Context, matrix: &MatrixClient, user_id: &str, crypto: &UserCrypto) {
    match crypto.settle_verifications(matrix).await {
        Ok(changed) => {
            for v in changed {
                state.events.publish(
                    user_id,
                    ChangeEvent::VerificationUpdated {
                        id: v.id,
                        other_device_id: v.other_device_id,
                        state: v.state.as_str(),
                    },
                );
            }
        }
        Err(e) => {
            tracing::warn!(%user_id, error = %e, "answering device verifications failed; retried after the next sync")
        }
    }
}
