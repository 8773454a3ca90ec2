//! Sending a composed message: at once, or held in the outbox ([`super::outbox`]) for
//! `undoSeconds` and sent by the scheduler when the window ends (unless undone).

use super::compose::{check, ComposeInput, Outcome, MAX_UNDO_SECONDS};
use super::deliver::deliver;
use super::user_key;
use crate::error::{AppError, AppResult};
use crate::services::Context;

/// Sends now (`undo_seconds` 0) or holds the message in the outbox for that long.
pub async fn send(
    state: &Context,
    user_id: &str,
    input: ComposeInput,
    undo_seconds: u32,
) -> AppResult<Outcome> {
    if undo_seconds > MAX_UNDO_SECONDS {
        return Err(AppError::invalid(
            "undoSeconds",
            format!("must be 0 to {MAX_UNDO_SECONDS}"),
        ));
    }
    let _ = user_key(state, user_id).await?;
    check(state, user_id, &input).await?;
    if undo_seconds == 0 {
        return Ok(Outcome::Sent(deliver(state, user_id, input).await?));
    }
    let (outbox_id, send_at) = super::outbox::hold(state, user_id, &input, undo_seconds).await?;
    Ok(Outcome::Held { outbox_id, send_at })
}
