//! The important-message hook: pushes to the user's devices when a message worth it
//! arrives.

use super::*;

/// Starts the important-message hook: listens to `message.created` events and pushes
/// "New important message" when the stored message (looked up by its `messageId` or
/// `eventId`) has importance ≥ [`IMPORTANT_MESSAGE_THRESHOLD`], was not sent by the
/// user, its room is not muted and it is recent ([`PUSH_MAX_MESSAGE_AGE_MS`]). The push carries no message text, only `roomId` and
/// `eventId` for the app to open. Ends on shutdown.
pub fn spawn_message_hook(state: &Context) -> Option<tokio::task::JoinHandle<()>> {
    state.push.as_ref()?;
    let state = state.clone();
    let mut rx = state.events.subscribe();
    Some(tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = state.shutdown.wait() => return,
                e = rx.recv() => e,
            };
            let event = match event {
                Ok(e) => e,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "push hook fell behind the event stream");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let ChangeEvent::MessageCreated {
                message_id,
                event_id,
                ..
            } = &event.change
            else {
                continue;
            };
            let (message_id, event_id) = (Some(message_id.clone()), Some(event_id.clone()));
            let state = state.clone();
            tokio::spawn(async move {
                let uid = event.user_id.clone();
                let facts = state
                    .db(move |c| {
                        Ok(store::message_facts(
                            c,
                            &uid,
                            message_id.as_deref(),
                            event_id.as_deref(),
                        )?)
                    })
                    .await;
                let Ok(Some(f)) = facts else { return };
                let stale = now_ms() - f.ts > PUSH_MAX_MESSAGE_AGE_MS;
                if f.is_mine || f.muted || stale || f.importance < IMPORTANT_MESSAGE_THRESHOLD {
                    return;
                }
                let n = Notification::new("New important message", "Open Switchboard to read it.")
                    .with("type", "message")
                    .with("roomId", f.room_id)
                    .with("eventId", f.event_id);
                notify_user(&state, &event.user_id, n).await;
            });
        }
    }))
}
