//! Rooms stored before their history was tracked (no `history_rooms` row: stored by a
//! version without back-fill, and without a new timeline since). When a history page
//! reaches such a room's oldest stored message ([`stored::untracked`]), the homeserver is
//! asked where its history continues below that message (`/rooms/{id}/context/{event}`,
//! its `start` token) and the room is tracked from there: the gap back to its creation
//! is then filled like any other ([`super::history`]).

use rusqlite::TransactionBehavior;

use super::users;
use super::Context;
use crate::clients::matrix::MatrixError;
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::store::history::{self as stored, Gap, NewGap};

/// Tracks the room of `gap` (an [`stored::UNTRACKED`] one) from its oldest stored message;
/// returns whether that changed anything a page reads (always, unless there is no
/// homeserver or Matrix account).
pub async fn start_tracking(state: &Context, user_id: &str, gap: &Gap) -> AppResult<bool> {
    let Some(matrix) = state.matrix.clone() else {
        return Ok(false);
    };
    let Some(token) = matrix_token(state, user_id).await? else {
        return Ok(false);
    };
    let start = match matrix
        .context_start(&token, &gap.room_id, &gap.before_event)
        .await
    {
        Ok(start) => start,
        // Older events are not for this user (or that event is gone): nothing to fetch.
        Err(MatrixError::Http {
            status: 400 | 403 | 404,
            message,
            ..
        }) => {
            tracing::info!(%user_id, room_id = %gap.room_id, %message,
                "the homeserver refuses older history of this room");
            None
        }
        Err(e) => {
            return Err(AppError::Unavailable {
                code: ErrorCode::HomeserverUnavailable,
                retry_after_secs: None,
                message: e.to_string(),
            })
        }
    };
    let (uid, gap) = (user_id.to_owned(), gap.clone());
    let room_id = gap.room_id.clone();
    state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // The sync may have tracked it meanwhile (a new timeline): that stands.
            if !stored::tracked(&tx, &uid, &gap.room_id)? {
                let start = start.as_deref().map(|from| NewGap {
                    before_ts: gap.before_ts,
                    before_event: &gap.before_event,
                    from_token: from,
                    to_token: None,
                    after_ts: None,
                });
                stored::track(&tx, &uid, &gap.room_id, start.as_ref(), unix_now() as i64)?;
            }
            tx.commit()?;
            Ok::<_, AppError>(())
        })
        .await?;
    tracing::info!(%user_id, %room_id, "history of a room stored before back-fill is tracked from its oldest message");
    Ok(true)
}

/// The user's Matrix access token; `None` without a user or Matrix account.
async fn matrix_token(state: &Context, user_id: &str) -> AppResult<Option<String>> {
    let uid = user_id.to_owned();
    let user = state
        .store
        .run(move |c| Ok::<_, AppError>(crate::store::users::find(c, &uid)?))
        .await?;
    match user {
        Some(user) => users::matrix_token_of(&state.master, &user),
        None => Ok(None),
    }
}
