//! `GET /api/sync`: the caller's change notifications as server-sent events.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use poem::web::sse::{Event, SSE};
use poem::web::Data;
use poem::{IntoResponse, Request, Response};
use poem_openapi::param::Header;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Object, OpenApi, Union};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

use super::gate::bearer_token;
use super::security::TokenAuth;
use super::ApiTags;
use crate::error::{AppError, ErrorCode};
use crate::events::{ChangeEvent, Published, StreamSlot, MAX_STREAMS_PER_USER};
use crate::services::session;
use crate::state::AppState;

/// Interval of the keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How often an open stream re-checks its credential (revocation, expiry, subscription),
/// so it ends well within 5 s of a revocation (docs/security.md).
const RECHECK: Duration = Duration::from_secs(1);

/// `room.updated`: a room's row, members or messages changed; re-read it.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomUpdated {
    pub room_id: String,
}

/// `message.created`: a new message was stored.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct MessageCreated {
    pub room_id: String,
    /// Matrix event id.
    pub event_id: String,
    /// Switchboard message id (UUID).
    pub message_id: String,
}

/// `room.deleted`: the room was removed from the service.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RoomDeleted {
    pub room_id: String,
    /// Whether its stored messages were deleted too.
    pub messages_deleted: Option<bool>,
}

/// `bridge.state`: a bridge login changed state; re-read `/api/bridges/{platform}`.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct BridgeStateChanged {
    /// whatsapp, telegram or discord.
    pub platform: String,
    pub login_id: Option<String>,
    /// The bridge's state event, e.g. CONNECTED, BAD_CREDENTIALS, LOGGED_OUT.
    pub state_event: Option<String>,
    pub error: Option<String>,
}

/// `scheduled.updated`: a scheduled message was created, changed, sent, failed or cancelled.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ScheduledUpdated {
    /// Scheduled message id (UUID).
    pub id: String,
    pub room_id: Option<String>,
    /// pending, sent, cancelled or failed.
    pub status: Option<String>,
}

/// `reminder.due`: a reminder fell due.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReminderDue {
    /// Reminder id (UUID).
    pub id: String,
    pub due_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// `email.updated`: a thread of one of the user's mailboxes changed (new mail, flags,
/// labels, an action); re-read `GET /api/email/threads/{threadId}`.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct EmailUpdated {
    /// Mailbox account id.
    pub account_id: String,
    /// Thread id.
    pub thread_id: String,
}

/// `verification.updated`: a SAS verification with one of the user's other Matrix
/// devices arrived (`requested` or `started`) or changed state; re-read
/// `GET /api/e2ee/verifications` (native sessions) for the emoji.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct VerificationUpdated {
    /// Verification id (the flow's transaction id).
    pub id: String,
    /// The other Matrix device of the user.
    pub other_device_id: String,
    /// requested, ready, started, keys_exchanged, done or cancelled.
    pub state: String,
}

/// `typing`: who else is typing in a room now; an empty `userIds` means nobody is. A
/// typing notice lasts until the next `typing` of the room (the homeserver ends it after
/// its timeout, at most 30 s without a renewal).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct Typing {
    pub room_id: String,
    /// Matrix IDs of the other members typing (never the user).
    pub user_ids: Vec<String>,
}

/// `receipt`: another member's public read receipt moved: they have read the room up to
/// `eventId` (and everything before it). `GET /api/rooms/{roomId}/receipts` lists them.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct Receipt {
    pub room_id: String,
    /// Matrix ID of the reader.
    pub user_id: String,
    /// Matrix event id read up to.
    pub event_id: String,
    /// When, Unix milliseconds.
    pub ts: i64,
}

/// `draft.updated`: the room's draft was saved, deleted, or deleted by a sent message;
/// re-read `GET /api/rooms/{roomId}/draft` (native sessions only, like the draft routes).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct DraftUpdated {
    pub room_id: String,
}

/// `resync`: events were missed (the `Last-Event-ID` is older than the retained window
/// or from before a restart, or this stream fell behind); rescan rooms and messages.
#[derive(Debug, Object)]
pub struct Resync {
    pub reason: String,
}

/// The `data:` of each event: a JSON object whose `type` equals the SSE `event:` name.
/// Payloads may gain fields; clients ignore unknown ones.
#[derive(Debug, Union)]
#[oai(discriminator_name = "type")]
pub enum SyncEvent {
    #[oai(mapping = "room.updated")]
    RoomUpdated(RoomUpdated),
    #[oai(mapping = "message.created")]
    MessageCreated(MessageCreated),
    #[oai(mapping = "room.deleted")]
    RoomDeleted(RoomDeleted),
    #[oai(mapping = "bridge.state")]
    BridgeState(BridgeStateChanged),
    #[oai(mapping = "scheduled.updated")]
    ScheduledUpdated(ScheduledUpdated),
    #[oai(mapping = "reminder.due")]
    ReminderDue(ReminderDue),
    #[oai(mapping = "email.updated")]
    EmailUpdated(EmailUpdated),
    #[oai(mapping = "verification.updated")]
    VerificationUpdated(VerificationUpdated),
    #[oai(mapping = "typing")]
    Typing(Typing),
    #[oai(mapping = "receipt")]
    Receipt(Receipt),
    #[oai(mapping = "draft.updated")]
    DraftUpdated(DraftUpdated),
    #[oai(mapping = "resync")]
    Resync(Resync),
}

/// A `text/event-stream` response, documented with [`SyncEvent`] as its items.
pub struct SyncStream(SSE);

impl IntoResponse for SyncStream {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

impl ApiResponse for SyncStream {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "An endless `text/event-stream`. Each event has `id:` (a \
                    number, increasing), `event:` (the type) and one `data:` line of JSON \
                    (a SyncEvent). Lines starting with `:` are keep-alive comments.",
                status: Some(200),
                status_range: None,
                content: vec![MetaMediaType {
                    content_type: "text/event-stream",
                    schema: MetaSchemaRef::Inline(Box::new(poem_openapi::registry::MetaSchema {
                        items: Some(Box::new(SyncEvent::schema_ref())),
                        ..poem_openapi::registry::MetaSchema::new_with_format(
                            "array",
                            "event-stream",
                        )
                    })),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        SyncEvent::register(registry);
    }
}

pub struct SyncApi;

#[OpenApi(prefix_path = "/api", tag = "ApiTags::Sync")]
impl SyncApi {
    /// Stream change notifications
    ///
    /// Server-sent events for the caller's account (native and personal tokens):
    /// `room.updated` {roomId}, `message.created` {roomId, eventId, messageId},
    /// `room.deleted` {roomId, messagesDeleted}, `bridge.state` {platform, loginId,
    /// stateEvent, error}, `scheduled.updated` {id, roomId, status}, `reminder.due`
    /// {id, dueAt}, `email.updated` {accountId, threadId}, `verification.updated` {id,
    /// otherDeviceId, state} (a SAS verification with another of the user's Matrix
    /// devices arrived or changed state; native sessions only: the verification routes are
    /// not open to personal tokens, so their streams do not carry it), `typing` {roomId,
    /// userIds} (who else is typing now) and `receipt` {roomId, userId, eventId, ts} (another
    /// member read up to an event; both for native sessions and for personal tokens that may
    /// call `GET /api/rooms/{roomId}/receipts`, allowlist version 5), `draft.updated` {roomId} (native sessions only, like
    /// the draft routes), and `resync` {reason}. Each `data:` is JSON with a `type` equal to the event name. A
    /// notification says *that* something changed: re-read the room and its messages.
    ///
    /// Reconnect with `Last-Event-ID` to get the events missed meanwhile (from a window
    /// of recent events); when that is not possible the stream starts with `resync`,
    /// and the client rescans. A client that falls behind also gets `resync`. The window
    /// holds each user's last 1024 events, whatever other users do. A comment line (`:`)
    /// is sent every 15 s as keep-alive.
    ///
    /// The stream ends when the server shuts down, and within 2 s of its credential
    /// ending: a personal token revoked or expired, an access token (JWT) expired, the
    /// user's subscription lapsed (personal tokens). Reconnecting then gets the gate's
    /// 401 or 403. At most 8 streams per user can be open at once: one more is 429
    /// `too_many_streams`.
    #[oai(path = "/sync", method = "get", operation_id = "sync_stream")]
    async fn stream(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: TokenAuth,
        /// Id of the last event received, to resume after a reconnect.
        #[oai(name = "Last-Event-ID")]
        last_event_id: Header<Option<String>>,
    ) -> Result<SyncStream, AppError> {
        let resume = match last_event_id.0.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(v) => Some(v.parse::<u64>().map_err(|_| {
                AppError::invalid("Last-Event-ID", "must be an event id from this stream")
            })?),
        };
        // The gate admitted this token; the stream re-checks it for as long as it runs.
        let token =
            bearer_token(req).ok_or_else(|| AppError::unauthorized("authentication required"))?;
        let stream = open(&state, auth.user_id(), token, Audience::of(&auth.0), resume)?;
        Ok(SyncStream(SSE::new(stream).keep_alive(KEEP_ALIVE)))
    }
}

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

fn open(
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
struct Audience {
    native: bool,
    conversation: bool,
}

impl Audience {
    fn of(p: &crate::services::session::Principal) -> Self {
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
