//! Sending due scheduled messages: claim, send (each attempt: [`super::attempt`]),
//! commit (see the module docs of [`crate::workers::scheduler`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use super::attempt::{retry_at, send_one, Outcome};
use super::{CLAIM_BATCH, LEASE_MS, SEND_CONCURRENCY};
use crate::clients::push::Notification;
use crate::error::AppResult;
use crate::services::scheduled::{self, now_ms};
use crate::services::Context;
use crate::services::{devices, users};
use crate::store::scheduled_messages::{self as store, ScheduledRow, FAILED, SENT};

/// Most outcomes committed in one transaction (outcomes that completed while the previous
/// commit ran are committed together, so the commit rate never limits the send rate).
const COMMIT_BATCH: usize = 1024;

/// A send starts only with at least this much lease left (a send times out after 30 s),
/// so a message can never be cancelled, or taken by another loop, while its send runs.
const MIN_LEASE_LEFT_MS: i64 = 35_000;

/// Access tokens of the users of a batch: `Err(reason)` when a user cannot send.
async fn tokens_for(
    state: &Context,
    rows: &[ScheduledRow],
) -> AppResult<HashMap<String, Result<String, String>>> {
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r.user_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let users = state
        .db(move |c| {
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(u) = crate::store::users::find(c, &id)? {
                    found.push(u);
                }
            }
            Ok(found)
        })
        .await?;
    Ok(users
        .into_iter()
        .map(|u| {
            let token = match users::matrix_token_of(&state.master, &u) {
                Ok(Some(t)) => Ok(t),
                Ok(None) => Err("the user has no Matrix account yet".to_owned()),
                Err(e) => Err(format!("the user's Matrix token cannot be read: {e}")),
            };
            (u.id, token)
        })
        .collect())
}

/// A committed status change, to publish.
struct Change {
    user_id: String,
    id: String,
    room_id: String,
    status: &'static str,
}

fn commit(
    c: &mut rusqlite::Connection,
    batch: &[(ScheduledRow, Outcome)],
    now: i64,
) -> AppResult<Vec<Change>> {
    let tx = c.transaction()?;
    let mut changes = Vec::new();
    for (row, outcome) in batch {
        let (status, n) = match outcome {
            Outcome::Sent { room_id, event_id } => (
                SENT,
                store::mark_sent(&tx, &row.id, room_id, event_id, now)?,
            ),
            Outcome::Fatal { reason } => (FAILED, store::mark_failed(&tx, &row.id, reason, now)?),
            Outcome::Requeue => {
                store::requeue(&tx, &row.id, now)?;
                continue;
            }
            Outcome::Error { reason, transient } => match retry_at(row.attempts, *transient, now) {
                Some(at) => {
                    store::schedule_retry(&tx, &row.id, at, reason, now)?;
                    continue;
                }
                None => {
                    let reason = format!("gave up after {} attempts: {reason}", row.attempts);
                    (FAILED, store::mark_failed(&tx, &row.id, &reason, now)?)
                }
            },
        };
        if n > 0 {
            changes.push(Change {
                user_id: row.user_id.clone(),
                id: row.id.clone(),
                room_id: row.room_id.clone(),
                status,
            });
        }
    }
    tx.commit()?;
    Ok(changes)
}

type Done = (ScheduledRow, Outcome);

/// Claims due messages and starts their sends; returns how many were claimed.
async fn claim_and_start(
    state: &Context,
    permits: &Arc<Semaphore>,
    done: &mpsc::UnboundedSender<Done>,
    tasks: &mut JoinSet<()>,
    open: &mut HashSet<String>,
) -> AppResult<usize> {
    let now = now_ms();
    let claimed = state
        .store
        .query(move |c| store::claim_due(c, now, LEASE_MS, CLAIM_BATCH))
        .await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    let tokens = Arc::new(tokens_for(state, &claimed).await?);
    let count = claimed.len();
    for row in claimed {
        open.insert(row.id.clone());
        let (state, permits, tokens, done) =
            (state.clone(), permits.clone(), tokens.clone(), done.clone());
        tasks.spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let token = match tokens.get(&row.user_id) {
                Some(Ok(t)) => Ok(t.as_str()),
                Some(Err(reason)) => Err(reason.as_str()),
                None => Err("the user no longer exists"),
            };
            let lease_left = row.lease_until.unwrap_or(0) - now_ms();
            let outcome = if lease_left < MIN_LEASE_LEFT_MS {
                Outcome::Requeue
            } else {
                send_one(&state, &row, token).await
            };
            let _ = done.send((row, outcome));
        });
    }
    Ok(count)
}

/// Sends every due message: claims them [`CLAIM_BATCH`] at a time (the next batch while
/// the previous one is still sending, so the pipeline never drains), sends
/// [`SEND_CONCURRENCY`] at a time, and commits outcomes as they complete. Returns how
/// many were claimed. On shutdown the sends still running are abandoned and their leases
/// released (the homeserver deduplicates a send that had gone out).
pub async fn send_due(state: &Context) -> AppResult<usize> {
    let permits = Arc::new(Semaphore::new(SEND_CONCURRENCY));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut tasks = JoinSet::new();
    let mut open: HashSet<String> = HashSet::new();
    let mut claimed_total = 0;
    let mut more = true;
    loop {
        // Refill when less than half a batch is left in flight.
        if more && open.len() < (CLAIM_BATCH as usize) / 2 {
            let n = claim_and_start(state, &permits, &done_tx, &mut tasks, &mut open).await?;
            claimed_total += n;
            more = n as i64 == CLAIM_BATCH;
        }
        if open.is_empty() {
            break;
        }
        let first = tokio::select! {
            r = done_rx.recv() => r,
            _ = state.shutdown.wait() => {
                tasks.abort_all();
                release_at_shutdown(state, open).await;
                return Ok(claimed_total);
            }
        };
        let Some(first) = first else { break };
        let mut batch = vec![first];
        while batch.len() < COMMIT_BATCH {
            match done_rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        for (row, _) in &batch {
            open.remove(&row.id);
        }
        commit_batch(state, batch).await?;
    }
    while tasks.join_next().await.is_some() {}
    Ok(claimed_total)
}

/// Gives the messages still being sent back to the queue (their leases released) when
/// the service stops; the homeserver deduplicates a send that had gone out.
async fn release_at_shutdown(state: &Context, open: HashSet<String>) {
    let ids: Vec<String> = open.into_iter().collect();
    let n = ids.len();
    let released = state
        .store
        .query(move |c| store::release(c, &ids, now_ms()))
        .await;
    match released {
        Err(e) => tracing::warn!(error = %e, "cannot release scheduled messages at shutdown"),
        Ok(_) if n > 0 => {
            tracing::info!(messages = n, "shutdown: unsent scheduled messages released")
        }
        Ok(_) => {}
    }
}

/// Commits one batch of outcomes, tells the user's clients, and the user (a push) when a
/// message failed for good.
async fn commit_batch(state: &Context, batch: Vec<Done>) -> AppResult<()> {
    let failed_reasons: HashMap<String, String> = batch
        .iter()
        .filter_map(|(row, o)| match o {
            Outcome::Fatal { reason } | Outcome::Error { reason, .. } => {
                Some((row.id.clone(), reason.clone()))
            }
            Outcome::Sent { .. } | Outcome::Requeue => None,
        })
        .collect();
    let changes = state
        .store
        .run(move |c| commit(c, &batch, now_ms()))
        .await?;
    for change in changes {
        scheduled::publish(
            state,
            &change.user_id,
            &change.id,
            &change.room_id,
            change.status,
        );
        if change.status == FAILED {
            tracing::warn!(
                id = %change.id,
                reason = failed_reasons.get(&change.id).map(String::as_str).unwrap_or(""),
                "scheduled message failed"
            );
            notify_failed(state, change.user_id, change.id);
        }
    }
    Ok(())
}

/// A push to the user's devices that a scheduled message could not be sent (when push is
/// configured), in the background.
fn notify_failed(state: &Context, user_id: String, id: String) {
    if state.push.is_none() {
        return;
    }
    let state = state.clone();
    tokio::spawn(async move {
        let n = Notification::new(
            "Scheduled message not sent",
            "A scheduled message could not be delivered. Open Switchboard for details.",
        )
        .with("type", "scheduled_failed")
        .with("scheduledMessageId", id);
        devices::notify_user(&state, &user_id, n).await;
    });
}

/// The earliest time a pending message needs the scheduler.
pub async fn next_due(state: &Context) -> AppResult<Option<i64>> {
    Ok(state.store.query(|c| store::next_due(c)).await?)
}
