//! `GET /api/sync`: the caller's change notifications as server-sent events.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use poem::web::sse::{Event, SSE};
use poem::web::Data;
use poem::{IntoResponse, Response};
use poem_openapi::param::Header;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Object, OpenApi, Union};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

use super::security::BearerAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::events::{ChangeEvent, Shutdown};
use crate::state::AppState;

/// Interval of the keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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
    /// {id, dueAt}, and `resync` {reason}. Each `data:` is JSON with a `type` equal to the event name. A
    /// notification says *that* something changed: re-read the room and its messages.
    ///
    /// Reconnect with `Last-Event-ID` to get the events missed meanwhile (from a window
    /// of recent events); when that is not possible the stream starts with `resync`,
    /// and the client rescans. A client that falls behind also gets `resync`. A comment
    /// line (`:`) is sent every 15 s as keep-alive. The stream ends when the server
    /// shuts down.
    #[oai(path = "/sync", method = "get", operation_id = "sync_stream")]
    async fn stream(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
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
        let stream = open(&state, auth.user_id(), resume);
        Ok(SyncStream(SSE::new(stream).keep_alive(KEEP_ALIVE)))
    }
}

/// Where the stream is: events to send first, then live ones.
struct Feed {
    user_id: String,
    pending: VecDeque<Event>,
    replayed: HashSet<u64>,
    rx: Receiver<Arc<ChangeEvent>>,
    shutdown: Shutdown,
}

fn open(state: &AppState, user_id: &str, resume: Option<u64>) -> BoxStream<'static, Event> {
    // Subscribe before reading the window, so nothing falls between the two.
    let rx = state.events.subscribe();
    let mut pending = VecDeque::new();
    let mut replayed = HashSet::new();
    if let Some(last) = resume {
        match state.events.since(user_id, last) {
            Some(missed) => {
                for e in missed {
                    replayed.insert(e.id);
                    pending.push_back(to_sse(&e));
                }
            }
            None => pending.push_back(resync("Last-Event-ID is too old to resume; rescan")),
        }
    }
    let feed = Feed {
        user_id: user_id.to_owned(),
        pending,
        replayed,
        rx,
        shutdown: state.shutdown.clone(),
    };
    stream::unfold(feed, next).boxed()
}

async fn next(mut feed: Feed) -> Option<(Event, Feed)> {
    if let Some(e) = feed.pending.pop_front() {
        return Some((e, feed));
    }
    loop {
        if feed.shutdown.is_triggered() {
            return None;
        }
        let received = tokio::select! {
            r = feed.rx.recv() => r,
            _ = feed.shutdown.wait() => return None,
        };
        match received {
            Ok(e) if e.user_id == feed.user_id && !feed.replayed.contains(&e.id) => {
                return Some((to_sse(&e), feed));
            }
            Ok(_) => continue,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!(user_id = %feed.user_id, missed = n, "event stream fell behind");
                return Some((resync("events were missed; rescan"), feed));
            }
            Err(RecvError::Closed) => return None,
        }
    }
}

fn to_sse(e: &ChangeEvent) -> Event {
    let mut data = serde_json::Map::new();
    data.insert("type".to_owned(), e.kind.into());
    match &e.data {
        serde_json::Value::Object(map) => {
            data.extend(
                map.iter()
                    .filter(|(k, _)| *k != "type")
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        serde_json::Value::Null => {}
        other => {
            data.insert("value".to_owned(), other.clone());
        }
    }
    Event::message(serde_json::Value::Object(data).to_string())
        .id(e.id.to_string())
        .event_type(e.kind)
}

fn resync(reason: &str) -> Event {
    let data = serde_json::json!({"type": "resync", "reason": reason});
    Event::message(data.to_string()).event_type("resync")
}
