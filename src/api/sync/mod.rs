//! `GET /api/sync`: the caller's change notifications as server-sent events.
//!
//! This file is the route and its documented response; `schema.rs` documents each event's
//! JSON for the OpenAPI document, and `feed.rs` is the stream behind one connection (replay,
//! live events, who sees what, the credential re-check).

mod feed;
mod schema;

use std::time::Duration;

use poem::web::sse::SSE;
use poem::web::Data;
use poem::{IntoResponse, Request, Response};
use poem_openapi::param::Header;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, OpenApi};

pub use self::schema::SyncEvent;
use super::gate::bearer_token;
use super::security::TokenAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::state::AppState;
use feed::{open, Audience};

/// Interval of the keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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
