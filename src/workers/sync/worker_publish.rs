//! What a sync step announces ([`crate::events`]): new messages, changed rooms, typing
//! and receipts, for the SSE stream and the push sender.

use crate::events::ChangeEvent;
use crate::services::Context;
use crate::workers::sync::ingest::IngestOutcome;

/// Batches with more new messages than this (e.g. the first sync) are announced with one
/// `room.updated` per room instead of a `message.created` per message.
const MAX_MESSAGE_EVENTS: usize = 256;

/// `message.created` per new message (unless the batch is large), then `room.updated`
/// per changed room, then `typing` and `receipt`.
pub(super) fn publish(state: &Context, user_id: &str, outcome: &IngestOutcome) {
    if outcome.new_messages.len() <= MAX_MESSAGE_EVENTS {
        for m in &outcome.new_messages {
            state.events.publish(
                user_id,
                ChangeEvent::MessageCreated {
                    room_id: m.room_id.clone(),
                    event_id: m.event_id.clone(),
                    message_id: m.message_id.clone(),
                },
            );
        }
    }
    for room_id in &outcome.changed_rooms {
        state.events.publish(
            user_id,
            ChangeEvent::RoomUpdated {
                room_id: room_id.to_owned(),
            },
        );
    }
    for (room_id, user_ids) in &outcome.live.typing {
        state.events.publish(
            user_id,
            ChangeEvent::Typing {
                room_id: room_id.clone(),
                user_ids: user_ids.clone(),
            },
        );
    }
    for (room_id, r) in &outcome.live.receipts {
        state.events.publish(
            user_id,
            ChangeEvent::Receipt {
                room_id: room_id.clone(),
                user_id: r.reader_id.clone(),
                event_id: r.event_id.clone(),
                ts: r.ts,
            },
        );
    }
}
