//! The scheduler: ONE tokio task that sends due scheduled messages and announces due
//! reminders.
//!
//! It sleeps until the earliest of: the next due time (a scheduled message's time, a
//! retry time or the end of a lease, or a reminder's due time), at most [`MAX_WAIT`]; a
//! wake-up from `state.scheduler_wakeup` (every create, update and cancel notifies it); or
//! shutdown. Work that fell due while the server was stopped is simply due at start.
//!
//! Sending ([`jobs::send_due`]): due pending messages are claimed in one statement
//! (one more attempt and a lease: status stays `pending` but no other loop takes them
//! until the lease runs out), opened with the server's X25519 secret and sent as the user
//! with `PUT /rooms/{room}/send/m.room.message/{txnId}`, txnId = the scheduled message's
//! id. The homeserver deduplicates a repeated txnId of the same access token, so a crash
//! between the send and the commit cannot send twice: after the lease the message is sent
//! again and the homeserver answers with the first event. At most [`SEND_CONCURRENCY`]
//! sends run at once; outcomes are committed in batches as they complete.
//!
//! Retries: a homeserver that is unreachable or answers 5xx/429/408 is retried after 5 s,
//! 30 s and 2 min (4 attempts); another 4xx (e.g. not a member of the room) after 1 s and
//! 4 s (3 attempts); a body that no longer opens fails at once. Then the message is
//! `failed` with `failureReason`, `scheduled.updated` is published and the user's devices
//! get a push.
//!
//! Every [`aging::EVERY`] it also re-ages the importance of rooms with unread messages,
//! and every [`purge::EVERY`] (first at start) it deletes expired sign-in codes and dead
//! tokens ([`purge`]).
//!
//! Also started here: the push sender for incoming messages and mail, Web Push and APNs
//! ([`crate::services::push::dispatch::spawn`]).
//!
//! Mail held for "undo send" ([`email::outbox`]) is sent here too when its window ends
//! (claimed once, delivered on its own task), and every purge drops mail attachments
//! unused for 24 h.

use std::time::Duration;

use crate::services::scheduled::now_ms;
use crate::services::Context;
use crate::services::{email, reminders};

pub mod aging;
pub mod attempt;
pub mod jobs;
pub mod purge;

/// Longest sleep between two looks at the tables.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Sends in flight at once.
pub const SEND_CONCURRENCY: usize = 16;
/// Messages claimed at once (the next batch is claimed while half of one is still in flight).
pub const CLAIM_BATCH: i64 = 1024;
/// How long a claimed message is held before another loop may take it (a send times out
/// after 30 s).
pub const LEASE_MS: i64 = 60_000;

/// Starts the scheduler loop (and the push sender). Both end on
/// `state.shutdown`.
pub fn spawn(state: &Context) -> tokio::task::JoinHandle<()> {
    crate::services::push::dispatch::spawn(state);
    let state = state.clone();
    tokio::spawn(async move { run(state).await })
}

/// The loop itself; returns on shutdown.
pub async fn run(state: Context) {
    tracing::info!("scheduler started");
    if let Err(e) = email::outbox::recover(&state).await {
        tracing::warn!(error = %e, "cannot look for held mails interrupted mid-send");
    }
    let mut failures: u32 = 0;
    let mut next_aging = tokio::time::Instant::now();
    let mut next_purge = tokio::time::Instant::now();
    loop {
        if state.shutdown.is_triggered() {
            break;
        }
        if tokio::time::Instant::now() >= next_aging {
            next_aging += aging::EVERY;
            if let Err(e) = aging::run(&state).await {
                tracing::warn!(error = %e, "re-aging room importance failed");
            }
        }
        if tokio::time::Instant::now() >= next_purge {
            next_purge += purge::EVERY;
            purge_all(&state).await;
        }
        let wait = match round(&state).await {
            Ok(true) => Duration::ZERO,
            Ok(false) => {
                failures = 0;
                until_next_wake(&state).await
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                tracing::warn!(error = %e, "scheduler round failed");
                Duration::from_millis(500 * u64::from(failures.min(20)))
            }
        };
        if wait.is_zero() {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = state.scheduler_wakeup.notified() => {}
            _ = state.shutdown.wait() => break,
        }
    }
    tracing::info!("scheduler stopped");
}

/// Expired codes and tokens, and mail attachments uploaded but never sent.
async fn purge_all(state: &Context) {
    if let Err(e) = purge::run(state).await {
        tracing::warn!(error = %e, "purging expired codes and tokens failed");
    }
    match email::uploads::purge(state).await {
        Ok(n) if n > 0 => tracing::info!(uploads = n, "dropped unused mail attachments"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "dropping unused mail attachments failed"),
    }
}

/// How long to sleep when nothing is due now: until the next due time, at most
/// [`MAX_WAIT`] (a second when it cannot be read).
async fn until_next_wake(state: &Context) -> Duration {
    match next_wake(state).await {
        Ok(Some(at)) => {
            Duration::from_millis((at - now_ms()).clamp(0, MAX_WAIT.as_millis() as i64) as u64)
        }
        Ok(None) => MAX_WAIT,
        Err(e) => {
            tracing::warn!(error = %e, "scheduler cannot read the next due time");
            Duration::from_secs(1)
        }
    }
}

/// One round: every due message, then due reminders. True when more reminders may be
/// due right away (a full batch was announced).
async fn round(state: &Context) -> crate::error::AppResult<bool> {
    jobs::send_due(state).await?;
    let held = email::outbox::send_due(state).await?;
    let announced = reminders::announce_due(state).await?;
    Ok(announced >= reminders::ANNOUNCE_BATCH || held as i64 >= email::outbox::CLAIM_BATCH)
}

async fn next_wake(state: &Context) -> crate::error::AppResult<Option<i64>> {
    let messages = jobs::next_due(state).await?;
    let reminders = reminders::next_due(state).await?;
    let held = email::outbox::next_due(state).await?;
    Ok([messages, reminders, held].into_iter().flatten().min())
}
