//! The queue between the sender ([`super::dispatch`], [`super::email`]) and a small pool of
//! workers that deliver each push to its subscription's push service.
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

use tokio::sync::{mpsc, Mutex};

use super::{now_ms, Opened};
use crate::clients::webpush::{Delivery, Target, WebPushError};
use crate::services::Context;
use crate::store::push_subscriptions as store;

pub const QUEUE_CAPACITY: usize = 1024;
/// Pushes being sent at once.
pub const WORKERS: usize = 8;
/// Tries of one push in all (the first and the retries).
pub const MAX_ATTEMPTS: u32 = 3;
/// First retry after this; doubles per retry.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before a retry.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

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

/// Starts the workers; they end on shutdown.
pub(super) fn spawn_workers(state: &Context) {
    for _ in 0..WORKERS {
        let state = state.clone();
        tokio::spawn(async move { worker(state).await });
    }
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
    retry_later(state, job, wait);
}

/// Offers `job` again after `wait`, unless the message was read meanwhile or the server
/// stops.
fn retry_later(state: &Context, job: Job, wait: Duration) {
    let queue = &state.web_push.queue;
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
