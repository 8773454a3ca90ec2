//! One open `/api/sync` connection: the events missed since `Last-Event-ID` first, then live
//! ones, filtered by what the credential may see, until the server stops or the credential
//! is no longer admitted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use poem::web::sse::Event;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

use crate::error::{AppError, ErrorCode};
use crate::events::{ChangeEvent, Published, StreamSlot, MAX_STREAMS_PER_USER};
use crate::services::session;
use crate::state::AppState;

/// How often an open stream re-checks its credential (revocation, expiry, subscription),
/// so it ends well within 5 s of a revocation (docs/security.md).
const RECHECK: Duration = Duration::from_secs(1);

/// Where the stream is: events to send first, then live ones.
struct Feed {
    state: AppState,
    /// The credential the stream was opened with, re-checked every [`RECHECK`].
    token: String,
    user_id: String,
    /// What the credential may see beyond the common events.
    audience: Audience,
    pending: VecDeque<Event>,
    rx: Receiver<Arc<Published>>,
    recheck: tokio::time::Interval,
    /// Released when the feed is dropped: the stream ended or the client went away.
    _slot: StreamSlot,
}

pub(super) fn open(
    state: &AppState,
    user_id: &str,
    token: String,
    audience: Audience,
    resume: Option<u64>,
) -> Result<BoxStream<'static, Event>, AppError> {
    let sub = state
        .events
        .open_stream(user_id, resume)
        .map_err(|_| AppError::TooManyRequests {
            retry_after_secs: None,
            code: ErrorCode::TooManyStreams,
            message: format!(
                "at most {MAX_STREAMS_PER_USER} event streams per user can be open at once; close one first"
            ),
        })?;
    let pending = match sub.missed {
        Some(missed) => missed
            .iter()
            .filter(|e| audience.sees(e))
            .map(|e| to_sse(e))
            .collect(),
        None => VecDeque::from([resync("Last-Event-ID is too old to resume; rescan")]),
    };
    let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let feed = Feed {
        state: state.clone(),
        token,
        user_id: user_id.to_owned(),
        audience,
        pending,
        rx: sub.rx,
        recheck,
        _slot: sub.slot,
    };
    Ok(stream::unfold(feed, next).boxed())
}

async fn next(mut feed: Feed) -> Option<(Event, Feed)> {
    if let Some(e) = feed.pending.pop_front() {
        return Some((e, feed));
    }
    loop {
        if feed.state.shutdown.is_triggered() {
            return None;
        }
        let received = tokio::select! {
            r = feed.rx.recv() => r,
            _ = feed.recheck.tick() => {
                if still_admitted(&feed).await {
                    continue;
                }
                return None;
            }
            _ = feed.state.shutdown.wait() => return None,
        };
        match received {
            Ok(e) if feed.audience.sees(&e) => return Some((to_sse(&e), feed)),
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => {
                tracing::debug!(user_id = %feed.user_id, missed = n, "event stream fell behind");
                return Some((resync("events were missed; rescan"), feed));
            }
            Err(RecvError::Closed) => return None,
        }
    }
}

/// Whether the stream's credential would still be admitted by the gate: not revoked, not
/// expired, its user still there and (for personal tokens) its subscription active. The
/// check goes through the authentication cache, which any write through this process
/// invalidates, so it costs a database read only after something changed.
async fn still_admitted(feed: &Feed) -> bool {
    match session::authenticate(&feed.state, &feed.token).await {
        Ok(p) if p.user_id() == feed.user_id => true,
        Ok(_) => false,
        Err(e) => {
            tracing::debug!(user_id = %feed.user_id, reason = %e, "event stream ended: credential no longer admitted");
            false
        }
    }
}

/// Who a stream is for: a native session gets everything; a personal token gets neither what
/// only native routes act on (`verification.updated`, `draft.updated`) nor typing and
/// receipts unless it may call their routes (allowlist version 5, or its opt-in).
#[derive(Debug, Clone, Copy)]
pub(super) struct Audience {
    native: bool,
    conversation: bool,
}

impl Audience {
    pub(super) fn of(p: &crate::services::session::Principal) -> Self {
        use crate::services::session::Principal;
        match p {
            Principal::User { .. } => Self {
                native: true,
                conversation: true,
            },
            Principal::ApiToken {
                allowlist_version,
                opted_in_version,
                ..
            } => Self {
                native: false,
                conversation: crate::services::allowlist::personal_token_allows(
                    "GET",
                    "/api/rooms/{roomId}/receipts",
                    *allowlist_version,
                    *opted_in_version,
                ),
            },
        }
    }

    fn sees(self, e: &Published) -> bool {
        match e.change {
            ChangeEvent::VerificationUpdated { .. } | ChangeEvent::DraftUpdated { .. } => {
                self.native
            }
            ChangeEvent::Typing { .. } | ChangeEvent::Receipt { .. } => self.conversation,
            _ => true,
        }
    }
}

/// The one place a change becomes JSON: `{"type": kind, ...payload}`.
fn payload(change: &ChangeEvent) -> serde_json::Value {
    use serde_json::json;
    match change {
        ChangeEvent::RoomUpdated { room_id } => json!({"roomId": room_id}),
        ChangeEvent::RoomDeleted {
            room_id,
            messages_deleted,
        } => json!({"roomId": room_id, "messagesDeleted": messages_deleted}),
        ChangeEvent::MessageCreated {
            room_id,
            event_id,
            message_id,
        } => json!({"roomId": room_id, "eventId": event_id, "messageId": message_id}),
        ChangeEvent::BridgeState {
            platform,
            login_id,
            state_event,
            error,
        } => json!({
            "platform": platform,
            "loginId": login_id,
            "stateEvent": state_event,
            "error": error,
        }),
        ChangeEvent::ScheduledUpdated {
            id,
            room_id,
            status,
        } => json!({"id": id, "roomId": room_id, "status": status}),
        ChangeEvent::ReminderDue { id, due_at } => json!({"id": id, "dueAt": due_at}),
        ChangeEvent::EmailUpdated {
            account_id,
            thread_id,
        } => json!({"accountId": account_id, "threadId": thread_id}),
        ChangeEvent::VerificationUpdated {
            id,
            other_device_id,
            state,
        } => json!({"id": id, "otherDeviceId": other_device_id, "state": state}),
        ChangeEvent::Typing { room_id, user_ids } => {
            json!({"roomId": room_id, "userIds": user_ids})
        }
        ChangeEvent::Receipt {
            room_id,
            user_id,
            event_id,
            ts,
        } => json!({"roomId": room_id, "userId": user_id, "eventId": event_id, "ts": ts}),
        ChangeEvent::DraftUpdated { room_id } => json!({"roomId": room_id}),
    }
}

fn to_sse(e: &Published) -> Event {
    let kind = e.change.kind();
    let mut data = serde_json::Map::new();
    data.insert("type".to_owned(), kind.into());
    if let serde_json::Value::Object(map) = payload(&e.change) {
        data.extend(map);
    }
    Event::message(serde_json::Value::Object(data).to_string())
        .id(e.id.to_string())
        .event_type(kind)
}

fn resync(reason: &str) -> Event {
    let data = serde_json::json!({"type": "resync", "reason": reason});
    Event::message(data.to_string()).event_type("resync")
}
