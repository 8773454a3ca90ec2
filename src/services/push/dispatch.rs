//! The sender: listens to new messages (and new mail threads, [`super::email`]), applies
//! the rule of [`super::levels`], and hands one push per subscription to the queue
//! ([`super::queue`], which bounds and retries them). APNs devices get their (text-free)
//! push under the same rule.

use std::time::Instant;

use super::levels::{self, Facts, Level, Me, Verdict};
use super::payload::{topic, Payload, TTL_SECS};
use super::queue::enqueue;
use super::{now_ms, open, Opened};
use crate::clients::webpush::{Delivery, Urgency};
use crate::events::ChangeEvent;
use crate::services::conversations::{self, MessageContent, RoomField};
use crate::services::devices::{self, IMPORTANT_MESSAGE_THRESHOLD, PUSH_MAX_MESSAGE_AGE_MS};
use crate::services::Context;
use crate::store::messages::MessageRow;
use crate::store::push_subscriptions as store;
use crate::store::rooms::RoomRow;
use crate::store::users::UserRow;

/// Starts the listener and the workers; they end on shutdown.
pub fn spawn(state: &Context) {
    super::queue::spawn_workers(state);
    let state = state.clone();
    let mut rx = state.events.subscribe();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = state.shutdown.wait() => return,
                e = rx.recv() => e,
            };
            let event = match event {
                Ok(e) => e,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "the push sender fell behind the event stream");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let state = state.clone();
            match &event.change {
                ChangeEvent::MessageCreated { event_id, .. } => {
                    let (user, event_id) = (event.user_id.clone(), event_id.clone());
                    tokio::spawn(async move { on_message(&state, &user, &event_id).await });
                }
                ChangeEvent::EmailUpdated {
                    account_id,
                    thread_id,
                } => {
                    let (user, a, t) =
                        (event.user_id.clone(), account_id.clone(), thread_id.clone());
                    tokio::spawn(
                        async move { super::email::on_thread(&state, &user, &a, &t).await },
                    );
                }
                _ => {}
            }
        }
    });
}

/// Everything about one new message the rule and the payload need, read at once.
struct Loaded {
    room_id: String,
    facts: Facts,
    importance: f64,
    ts: i64,
    title: Option<String>,
    sender: String,
    text: String,
    previews: bool,
    unread: i64,
    subs: Vec<Opened>,
    has_devices: bool,
}

fn load(
    state: &Context,
    c: &rusqlite::Connection,
    user_id: &str,
    event_id: &str,
) -> crate::error::AppResult<Option<Loaded>> {
    use crate::store::{devices as dstore, messages, rooms, users};
    let Some(msg) = messages::find_by_event(c, user_id, event_id)? else {
        return Ok(None);
    };
    let rows = store::list(c, user_id)?;
    let has_devices = state.push.is_some() && dstore::count_for_user(c, user_id)? > 0;
    if msg.is_mine || (rows.is_empty() && !has_devices) {
        return Ok(None);
    }
    let (Some(room), Some(user)) = (
        rooms::find(c, user_id, &msg.room_id)?,
        users::find(c, user_id)?,
    ) else {
        return Ok(None);
    };
    let Ok(dek) = crate::services::users::data_key(&state.master, &user) else {
        return Ok(None);
    };
    let content = conversations::open_message(&dek, &msg.id, &msg.content_enc).unwrap_or_default();
    let facts = facts_of(c, user_id, &msg, &room, &user, &content)?;
    let open_field = |f, v: &Option<Vec<u8>>| {
        conversations::open_room_field(&dek, user_id, &room.room_id, f, v.as_deref())
    };
    let partner = open_field(RoomField::RecipientName, &room.recipient_name_enc);
    let title = open_field(RoomField::Name, &room.name_enc).or_else(|| partner.clone());
    // The sender as the conversation shows them: the direct partner's name, else the
    // member's display name when the message was sent (stored, no homeserver call), else
    // the localpart.
    let sender = match (&partner, room.recipient_id.as_deref()) {
        (Some(name), Some(r)) if r == msg.sender_id => name.clone(),
        _ => {
            crate::services::senders::Senders::new(c, &dek, user_id)
                .of(&msg)?
                .name
        }
    };
    Ok(Some(Loaded {
        room_id: room.room_id.clone(),
        facts,
        importance: msg.importance,
        ts: msg.ts,
        title,
        sender,
        text: text_of(&msg.msgtype, content.body),
        previews: store::previews(c, user_id)?.unwrap_or(true),
        unread: store::unread_total(c, user_id)?,
        subs: rows.iter().filter_map(|r| open(&dek, r)).collect(),
        has_devices,
    }))
}

/// What the rule needs to know about the message: mine, read, mentioning me (by name,
/// id or a reply to one of mine), and the room's level, snooze and kind.
fn facts_of(
    c: &rusqlite::Connection,
    user_id: &str,
    msg: &MessageRow,
    room: &RoomRow,
    user: &UserRow,
    content: &MessageContent,
) -> rusqlite::Result<Facts> {
    use crate::store::messages;
    let replies_to_me = match levels::reply_target(&content.content) {
        Some(target) => messages::find_by_event(c, user_id, target)?.is_some_and(|m| m.is_mine),
        None => false,
    };
    let me = Me {
        matrix_user_id: user.matrix_user_id.clone(),
        display_name: user.display_name.clone(),
    };
    let read = match room.last_read_event_id.as_deref() {
        Some(e) if e == msg.event_id => true,
        Some(e) => messages::find_by_event(c, user_id, e)?.is_some_and(|m| m.ts >= msg.ts),
        None => false,
    };
    Ok(Facts {
        is_mine: msg.is_mine,
        level: Level::of_row(room),
        snooze_until: room.snooze_until,
        read,
        mentioned: levels::mentions(&me, &content.content, &content.body, replies_to_me),
        is_direct: room.is_direct,
    })
}

/// The text a push shows: the body, or what kind of attachment it is.
fn text_of(msgtype: &str, body: String) -> String {
    match msgtype {
        "m.image" => "Photo".to_owned(),
        "m.video" => "Video".to_owned(),
        "m.audio" => "Audio".to_owned(),
        "m.file" => "File".to_owned(),
        "m.sticker" => "Sticker".to_owned(),
        _ => body,
    }
}

async fn on_message(state: &Context, user_id: &str, event_id: &str) {
    let since = Instant::now();
    let (uid, eid, st) = (user_id.to_owned(), event_id.to_owned(), state.clone());
    let loaded = match state.db(move |c| load(&st, c, &uid, &eid)).await {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a new message for its push");
            return;
        }
    };
    // A first sync or a history backfill must not flood the user's devices.
    if now_ms() - loaded.ts > PUSH_MAX_MESSAGE_AGE_MS {
        return;
    }
    let Verdict::Notify { high } = levels::verdict(&loaded.facts, now_ms()) else {
        return;
    };
    let room_id = loaded.room_id.clone();
    if loaded.has_devices && loaded.importance >= IMPORTANT_MESSAGE_THRESHOLD {
        notify_devices(state, user_id, &room_id, event_id);
    }
    if loaded.subs.is_empty() {
        return;
    }
    let payload = web_push_payload(&loaded, event_id);
    let delivery = Delivery {
        ttl: TTL_SECS,
        urgency: if high { Urgency::High } else { Urgency::Normal },
        topic: Some(topic(&room_id)),
    };
    enqueue(
        state,
        user_id,
        loaded.subs,
        &payload,
        &delivery,
        Some((room_id, event_id.to_owned())),
        since,
    );
}

/// APNs devices get a text-free push for an important message.
fn notify_devices(state: &Context, user_id: &str, room_id: &str, event_id: &str) {
    let n = crate::clients::push::Notification::new(
        "New important message",
        "Open Switchboard to read it.",
    )
    .with("type", "message")
    .with("roomId", room_id.to_owned())
    .with("eventId", event_id);
    let (state, user) = (state.clone(), user_id.to_owned());
    tokio::spawn(async move { devices::notify_user(&state, &user, n).await });
}

/// The Web Push payload: title and "sender: text" with previews on, a generic text
/// without.
fn web_push_payload(loaded: &Loaded, event_id: &str) -> Vec<u8> {
    let (title, body) = if loaded.previews {
        (
            loaded.title.clone().unwrap_or_else(|| "Switchboard".into()),
            format!("{}: {}", loaded.sender, loaded.text),
        )
    } else {
        ("Switchboard".to_owned(), "New message".to_owned())
    };
    Payload {
        kind: "message",
        room_id: Some(loaded.room_id.clone()),
        event_id: Some(event_id.to_owned()),
        account_id: None,
        thread_id: None,
        title,
        body,
        unread: loaded.unread,
    }
    .to_bytes()
}
