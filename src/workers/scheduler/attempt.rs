//! One attempt to send a scheduled message (open the body, find the room, send it as the
//! user, encrypted where the room is) and what its outcome leads to (the retry schedule).

use crate::clients::matrix::MatrixError;
use crate::services::e2ee::{self, Outgoing, SendFailure};
use crate::services::linked;
use crate::services::scheduled::{message_content, open_body};
use crate::services::Context;
use crate::store::scheduled_messages::ScheduledRow;

/// Retry delays after transient failures (homeserver down, 5xx, 429, 408): 4 attempts.
pub const TRANSIENT_BACKOFF_MS: [i64; 3] = [5_000, 30_000, 120_000];
/// Retry delays after other refusals (4xx, e.g. not in the room): 3 attempts.
pub const REFUSED_BACKOFF_MS: [i64; 2] = [1_000, 4_000];

/// What happened to one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Sent {
        room_id: String,
        event_id: String,
    },
    /// Failed this time; `transient` selects the retry schedule.
    Error {
        reason: String,
        transient: bool,
    },
    /// Cannot ever succeed.
    Fatal {
        reason: String,
    },
    /// Not attempted (the lease ran too short while it waited): back to the queue.
    Requeue,
}

/// The decision for a message after an attempt: `Ok(Some(at))` retry at `at`, `Ok(None)`
/// give up. `attempts` counts this attempt.
pub fn retry_at(attempts: i64, transient: bool, now: i64) -> Option<i64> {
    let table: &[i64] = if transient {
        &TRANSIENT_BACKOFF_MS
    } else {
        &REFUSED_BACKOFF_MS
    };
    let index = usize::try_from(attempts - 1).ok()?;
    table.get(index).map(|d| now + d)
}

fn classify(e: &MatrixError) -> bool {
    match e {
        MatrixError::Http { status, .. } => *status >= 500 || *status == 429 || *status == 408,
        MatrixError::Unreachable(_) | MatrixError::Decode(_) => true,
        MatrixError::InvalidSegment(_) => false,
    }
}

/// One attempt to send `row` as the holder of `token`.
pub async fn send_one(state: &Context, row: &ScheduledRow, token: Result<&str, &str>) -> Outcome {
    let text = match opened_text(state, row) {
        Ok(text) => text,
        Err(outcome) => return outcome,
    };
    let Some(matrix) = &state.matrix else {
        return transient("no Matrix homeserver is configured".into());
    };
    let token = match token {
        Ok(t) => t,
        Err(reason) => return transient(reason.to_owned()),
    };
    let room_id = match target_room(state, row).await {
        Ok(room) => room,
        Err(outcome) => return outcome,
    };
    let content = message_content(&text);
    let out = Outgoing {
        room_id: &room_id,
        txn_id: &row.id,
        event_type: "m.room.message",
        content: &content,
    };
    match e2ee::send_event(state, matrix, &row.user_id, token, &out).await {
        Ok(event_id) => Outcome::Sent { room_id, event_id },
        Err(SendFailure::Encryption(e)) => {
            tracing::info!(id = %row.id, error = %e, "scheduled send could not be encrypted");
            transient("the message could not be encrypted for this room; nothing was sent".into())
        }
        Err(SendFailure::Homeserver(e)) => {
            // `failureReason` is shown to the user: no homeserver address in it.
            tracing::info!(id = %row.id, error = %e, "scheduled send attempt failed");
            Outcome::Error {
                transient: classify(&e),
                reason: e.public_message(),
            }
        }
    }
}

fn transient(reason: String) -> Outcome {
    Outcome::Error {
        reason,
        transient: true,
    }
}

/// The message's text, opened with the server key: fatal when it cannot be.
fn opened_text(state: &Context, row: &ScheduledRow) -> Result<String, Outcome> {
    let Ok(plain) = open_body(
        state,
        &row.encrypted_body,
        &row.nonce,
        &row.ephemeral_pubkey,
    ) else {
        return Err(Outcome::Fatal {
            reason: "the message body cannot be decrypted with the server key".into(),
        });
    };
    String::from_utf8(plain).map_err(|_| Outcome::Fatal {
        reason: "the decrypted message is not UTF-8 text".into(),
    })
}

/// The room to send to: the message's room, or its linked room on the target platform.
async fn target_room(state: &Context, row: &ScheduledRow) -> Result<String, Outcome> {
    let Some(platform) = &row.target_platform else {
        return Ok(row.room_id.clone());
    };
    linked::room_for_platform(state, &row.user_id, &row.room_id, platform)
        .await
        .map_err(|e| transient(format!("cannot resolve the {platform} room: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_the_backoff_then_give_up() {
        assert_eq!(retry_at(1, true, 0), Some(5_000));
        assert_eq!(retry_at(3, true, 0), Some(120_000));
        assert_eq!(retry_at(4, true, 0), None);
        assert_eq!(retry_at(1, false, 10), Some(1_010));
        assert_eq!(retry_at(2, false, 0), Some(4_000));
        assert_eq!(retry_at(3, false, 0), None);
    }

    #[test]
    fn homeserver_errors_are_classified() {
        let http = |status| MatrixError::Http {
            status,
            errcode: "X".into(),
            message: String::new(),
        };
        assert!(classify(&http(502)));
        assert!(classify(&http(429)));
        assert!(!classify(&http(403)));
        assert!(!classify(&http(404)));
        assert!(classify(&MatrixError::Unreachable("x".into())));
    }
}
