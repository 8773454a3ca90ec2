//! The sender: listens to new messages (and new mail threads, [`super::email`]), applies
//! the rule of [`super::levels`], and queues one push per subscription for a small pool of
//! workers. APNs devices get their (text-free) push under the same rule.
//!
//! Bounded everywhere, so neither a flood of messages nor a misbehaving push service grows
//! memory or holds the sync: the queue holds [`QUEUE_CAPACITY`] pushes (more are dropped
//! and logged), [`WORKERS`] send at once, each push has the client's deadline, and a push
//! the service asks to retry (429, 5xx, no answer) waits out of the workers, at most
//! [`MAX_ATTEMPTS`] times in all with a backoff capped at [`MAX_BACKOFF`] (a larger
//! `Retry-After` gives up instead), and only while the message is still unread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, Mutex};

use super::levels::{self, Facts, Level, Me, Verdict};
use super::{now_ms, open, Opened};
use crate::clients::webpush::{Delivery, Target, Urgency, WebPushError};
use crate::events::ChangeEvent;
use crate::services::conversations::{self, RoomField};
use crate::services::devices::{self, IMPORTANT_MESSAGE_THRESHOLD, PUSH_MAX_MESSAGE_AGE_MS};
use crate::services::Context;
use crate::store::push_subscriptions as store;

/// Pushes waiting for a worker at most.
pub const QUEUE_CAPACITY: usize = 1024;
/// Pushes being sent at once.
pub const WORKERS: usize = 8;
/// Tries of one push in all (the first and the retries).
pub const MAX_ATTEMPTS: u32 = 3;
/// First retry after this; doubles per retry.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before a retry.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Pushes the push service keeps for an offline browser this long (RFC 8030 `TTL`).
pub const TTL_SECS: u32 = 24 * 3600;
/// The payload's limit (the design's; RFC 8291 allows ~4 KiB).
pub const MAX_PAYLOAD: usize = 3 * 1024;
/// Characters of the message text a push carries at most.
pub const MAX_BODY_CHARS: usize = 200;
const MAX_TITLE_CHARS: usize = 100;

/// One push to one subscription.
pub(crate) struct Job {
    user_id: String,
    sub: Opened,
    payload: Vec<u8>,
    delivery: Delivery,
    /// The room and event a message push is about (checked for "read" before a retry).
    about: Option<(String, String)>,
    attempt: u32,
    /// When the message was seen (for the latency figure in the log).
    since: Instant,
}

/// The queue between the listener and the workers.
pub(crate) struct Queue {
    tx: mpsc::Sender<Job>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    /// Retries waiting for their time (bounded like the queue).
    waiting: Arc<AtomicUsize>,
}

impl Queue {
    pub(crate) fn new() -> Self {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        Self {
            tx,
            rx: Arc::new(Mutex::new(rx)),
            waiting: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn offer(&self, job: Job) {
        if self.tx.try_send(job).is_err() {
            tracing::warn!("Web Push queue full; a push was dropped");
        }
    }
}

/// The payload of a push (what the service worker shows).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub title: String,
    pub body: String,
    pub unread: i64,
}

fn cut(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.chars().count() <= max {
        return clean.to_owned();
    }
    let mut out: String = clean.chars().take(max - 1).collect();
    out.push('…');
    out
}

impl Payload {
    /// The JSON bytes, never over [`MAX_PAYLOAD`]: the texts are shortened to fit.
    pub fn to_bytes(&mut self) -> Vec<u8> {
        self.title = cut(&self.title, MAX_TITLE_CHARS);
        self.body = cut(&self.body, MAX_BODY_CHARS);
        loop {
            let bytes = serde_json::to_vec(self).unwrap_or_default();
            if bytes.len() <= MAX_PAYLOAD || (self.body.is_empty() && self.title.is_empty()) {
                return bytes;
            }
            // Only pathological texts (every character escaped) get here.
            let half = |s: &str| s.chars().take(s.chars().count() / 2).collect::<String>();
            self.body = half(&self.body);
            self.title = half(&self.title);
        }
    }
}

/// RFC 8030 `Topic`: at most 32 characters of the URL-safe base64 alphabet; a hash, so the
/// push service does not learn the room id.
pub fn topic(of: &str) -> String {
    let digest = Sha256::digest(of.as_bytes());
    URL_SAFE_NO_PAD.encode(digest)[..32].to_owned()
}

/// Starts the listener and the workers; they end on shutdown.
pub fn spawn(state: &Context) {
    for _ in 0..WORKERS {
        let state = state.clone();
        tokio::spawn(async move { worker(state).await });
    }
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
    let facts = Facts {
        is_mine: msg.is_mine,
        level: Level::of_row(&room),
        snooze_until: room.snooze_until,
        read,
        mentioned: levels::mentions(&me, &content.content, &content.body, replies_to_me),
        is_direct: room.is_direct,
    };
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
    let text = match msg.msgtype.as_str() {
        "m.image" => "Photo".to_owned(),
        "m.video" => "Video".to_owned(),
        "m.audio" => "Audio".to_owned(),
        "m.file" => "File".to_owned(),
        "m.sticker" => "Sticker".to_owned(),
        _ => content.body,
    };
    Ok(Some(Loaded {
        room_id: room.room_id.clone(),
        facts,
        importance: msg.importance,
        ts: msg.ts,
        title,
        sender,
        text,
        previews: store::previews(c, user_id)?.unwrap_or(true),
        unread: store::unread_total(c, user_id)?,
        subs: rows.iter().filter_map(|r| open(&dek, r)).collect(),
        has_devices,
    }))
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
        let n = crate::clients::push::Notification::new(
            "New important message",
            "Open Switchboard to read it.",
        )
        .with("type", "message")
        .with("roomId", room_id.clone())
        .with("eventId", event_id);
        let (state, user) = (state.clone(), user_id.to_owned());
        tokio::spawn(async move { devices::notify_user(&state, &user, n).await });
    }
    if loaded.subs.is_empty() {
        return;
    }
    let (title, body) = if loaded.previews {
        (
            loaded.title.unwrap_or_else(|| "Switchboard".into()),
            format!("{}: {}", loaded.sender, loaded.text),
        )
    } else {
        ("Switchboard".to_owned(), "New message".to_owned())
    };
    let payload = Payload {
        kind: "message",
        room_id: Some(room_id.clone()),
        event_id: Some(event_id.to_owned()),
        account_id: None,
        thread_id: None,
        title,
        body,
        unread: loaded.unread,
    }
    .to_bytes();
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

pub(crate) fn enqueue(
    state: &Context,
    user_id: &str,
    subs: Vec<Opened>,
    payload: &[u8],
    delivery: &Delivery,
    about: Option<(String, String)>,
    since: Instant,
) {
    for sub in subs {
        state.web_push.queue.offer(Job {
            user_id: user_id.to_owned(),
            sub,
            payload: payload.to_vec(),
            delivery: delivery.clone(),
            about: about.clone(),
            attempt: 0,
            since,
        });
    }
}

async fn worker(state: Context) {
    let rx = state.web_push.queue.rx.clone();
    loop {
        let job = {
            let mut rx = rx.lock().await;
            tokio::select! {
                _ = state.shutdown.wait() => return,
                j = rx.recv() => j,
            }
        };
        let Some(job) = job else { return };
        send(&state, job).await;
    }
}

/// Whether the user has read the message since (a retry is then pointless).
async fn is_read(state: &Context, user_id: &str, about: &Option<(String, String)>) -> bool {
    let Some((room_id, event_id)) = about.clone() else {
        return false;
    };
    let uid = user_id.to_owned();
    state
        .db(move |c| {
            use crate::store::{messages, rooms};
            let Some(room) = rooms::find(c, &uid, &room_id)? else {
                return Ok(true);
            };
            let Some(msg) = messages::find_by_event(c, &uid, &event_id)? else {
                return Ok(true);
            };
            Ok(match room.last_read_event_id.as_deref() {
                Some(e) if e == event_id => true,
                Some(e) => messages::find_by_event(c, &uid, e)?.is_some_and(|m| m.ts >= msg.ts),
                None => false,
            })
        })
        .await
        .unwrap_or(false)
}

async fn record(state: &Context, id: &str, outcome: Outcome) {
    let id = id.to_owned();
    let done = state
        .db(move |c| {
            match outcome {
                Outcome::Success => store::mark_success(c, &id, now_ms())?,
                Outcome::Failure => store::mark_failure(c, &id)?,
                Outcome::Gone => {
                    c.execute("DELETE FROM push_subscriptions WHERE id = ?1", [&id])?
                }
            };
            Ok(())
        })
        .await;
    if let Err(e) = done {
        tracing::warn!(error = %e, "cannot record a push outcome");
    }
}

#[derive(Clone, Copy)]
enum Outcome {
    Success,
    Failure,
    Gone,
}

async fn send(state: &Context, mut job: Job) {
    let key = match super::vapid(state).await {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(error = %e, "no VAPID key; push not sent");
            return;
        }
    };
    let target = Target {
        endpoint: &job.sub.endpoint,
        p256dh: &job.sub.p256dh,
        auth: &job.sub.auth,
    };
    let result = state
        .web_push
        .client
        .send(&key, &target, &job.payload, &job.delivery)
        .await;
    job.attempt += 1;
    let retry_after = match result {
        Ok(()) => {
            tracing::debug!(
                subscription = %job.sub.id,
                latency_ms = job.since.elapsed().as_millis() as u64,
                "push delivered to the push service"
            );
            return record(state, &job.sub.id, Outcome::Success).await;
        }
        Err(WebPushError::Gone(status)) => {
            tracing::info!(subscription = %job.sub.id, status, "push subscription gone; removed");
            return record(state, &job.sub.id, Outcome::Gone).await;
        }
        Err(WebPushError::Retry {
            reason,
            retry_after,
        }) => {
            tracing::info!(subscription = %job.sub.id, attempt = job.attempt, %reason, "push to retry");
            retry_after
        }
        Err(e) => {
            tracing::warn!(subscription = %job.sub.id, error = %e, "push refused");
            return record(state, &job.sub.id, Outcome::Failure).await;
        }
    };
    let backoff = FIRST_BACKOFF * 2u32.pow(job.attempt - 1);
    let wait = retry_after.map_or(backoff, |r| r.max(backoff));
    let queue = &state.web_push.queue;
    if job.attempt >= MAX_ATTEMPTS
        || wait > MAX_BACKOFF
        || queue.waiting.load(Ordering::Relaxed) >= QUEUE_CAPACITY
    {
        return record(state, &job.sub.id, Outcome::Failure).await;
    }
    queue.waiting.fetch_add(1, Ordering::Relaxed);
    let state = state.clone();
    tokio::spawn(async move {
        let queue = &state.web_push.queue;
        tokio::select! {
            _ = state.shutdown.wait() => {}
            _ = tokio::time::sleep(wait) => {
                if is_read(&state, &job.user_id, &job.about).await {
                    tracing::debug!(subscription = %job.sub.id, "read meanwhile; retry dropped");
                } else {
                    queue.offer(job);
                }
            }
        }
        queue.waiting.fetch_sub(1, Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_32_url_safe_characters() {
        let t = topic("!room:example.org");
        assert_eq!(t.len(), 32);
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(t, topic("!other:example.org"));
    }

    #[test]
    fn payloads_stay_under_3_kib_and_cut_the_text() {
        let mut p = Payload {
            kind: "message",
            room_id: Some(format!("!{}:example.org", "r".repeat(240))),
            event_id: Some(format!("${}", "e".repeat(250))),
            account_id: None,
            thread_id: None,
            title: "\u{1}".repeat(5000),
            body: "\"".repeat(5000),
            unread: 3,
        };
        let bytes = p.to_bytes();
        assert!(bytes.len() <= MAX_PAYLOAD, "{}", bytes.len());
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["type"], "message");
        assert!(v["body"].as_str().unwrap().chars().count() <= MAX_BODY_CHARS);
        let mut short = Payload {
            kind: "message",
            room_id: None,
            event_id: None,
            account_id: None,
            thread_id: None,
            title: "Mom".into(),
            body: format!("mom: {}", "x".repeat(300)),
            unread: 1,
        };
        let v: serde_json::Value = serde_json::from_slice(&short.to_bytes()).unwrap();
        let body = v["body"].as_str().unwrap();
        assert_eq!(body.chars().count(), MAX_BODY_CHARS);
        assert!(body.ends_with('…'));
    }
}
