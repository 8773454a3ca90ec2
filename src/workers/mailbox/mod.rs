//! Mailbox sync (issue #10): one supervised task per connected account.
//!
//! Each task logs in, mirrors every mailbox into the cache ([`sync::full_round`]), then
//! waits in IMAP IDLE on INBOX (or sleeps without IDLE) until the server reports a change,
//! `[email] poll_interval` passes (the other mailboxes are polled then), or it is poked.
//! Failures set the account's `status` (`auth_failed`, `unreachable`) and `error` and
//! retry with exponential backoff (2 s doubling to 5 min); the cache stays readable
//! meanwhile. A task ends when its account is removed or the process stops.

use std::collections::HashMap;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::clients::mail::imap::{self, ImapError};
use crate::error::AppError;
use crate::services::email::announce;
use crate::services::email::budget::Limit;
use crate::services::email::sync::{self, AccountCtx, SyncError};
use crate::services::Context;

const RESCAN: Duration = Duration::from_secs(60);
const BACKOFF_MIN: Duration = Duration::from_secs(2);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

pub fn spawn(state: &Context) {
    tokio::spawn(supervise(state.clone()));
}

async fn supervise(state: Context) {
    let mut tasks: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        tasks.retain(|_, h| !h.is_finished());
        let ids = state
            .store
            .run(|c| Ok::<_, AppError>(crate::store::email::all_account_ids(c)?))
            .await;
        match ids {
            Ok(ids) => {
                for id in ids {
                    if let std::collections::hash_map::Entry::Vacant(slot) = tasks.entry(id) {
                        let task = run_account(state.clone(), slot.key().clone());
                        slot.insert(tokio::spawn(task));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "mailbox supervisor cannot list accounts"),
        }
        tokio::select! {
            _ = state.email.wakeup.notified() => {}
            _ = tokio::time::sleep(RESCAN) => {}
            _ = state.shutdown.wait() => break,
        }
    }
}

async fn run_account(state: Context, account_id: String) {
    let poke = state.email.poke_handle(&account_id);
    let mut backoff = BACKOFF_MIN;
    loop {
        let ctx = match sync::load_ctx(&state, &account_id).await {
            Ok(Some(ctx)) => ctx,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(account = %account_id, error = %e, "mailbox sync cannot load its account");
                break;
            }
        };
        match session(&state, &ctx, &poke, &mut backoff).await {
            Ok(()) => break,
            Err(e) => {
                let (status, message) = match &e {
                    SyncError::Imap(ImapError::Login(m)) => ("auth_failed", m.clone()),
                    other => ("unreachable", other.to_string()),
                };
                tracing::info!(account = %account_id, status, error = %message, "mailbox sync failed; retrying");
                sync::set_status(&state, &ctx.dek, &account_id, status, Some(message)).await;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = poke.notified() => {}
            _ = state.shutdown.wait() => break,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    state.email.forget(&account_id);
    tracing::debug!(account = %account_id, "mailbox sync stopped");
}

/// Rounds in a row that may skip IDLE because INBOX changed meanwhile; then IDLE anyway
/// (a server whose counters never settle must not keep the task spinning).
const MAX_RESTLESS_ROUNDS: u32 = 5;

/// IDLE wake-ups in a row whose round changed nothing, after which the task pauses
/// (doubling from 2 s up to the poll interval) before it idles again.
const NOISY_WAKEUPS: u32 = 3;

/// One connection's life: rounds and IDLE until an error, removal or shutdown (`Ok`).
///
/// IDLE reports what happens after its SELECT, so a change made on the server between a
/// round's read of INBOX and that SELECT would wait for the next poll. The SELECT that
/// starts IDLE is therefore compared with the one the round made (UIDVALIDITY, EXISTS,
/// UIDNEXT, and HIGHESTMODSEQ under CONDSTORE): when they differ, another round runs at
/// once, and IDLE starts only when INBOX is quiet. Without CONDSTORE a flag change in
/// that window is seen by the next poll.
async fn session(
    state: &Context,
    ctx: &AccountCtx,
    poke: &tokio::sync::Notify,
    backoff: &mut Duration,
) -> Result<(), SyncError> {
    let mut s = imap::connect(&ctx.settings.imap, &state.config.email, &ctx.user_id).await?;
    let caps = imap::capabilities(&mut s).await?;
    let poll = state.config.email.poll_interval.0;
    let mut restless = 0;
    // IDLE wake-ups in a row after which a round found nothing to change.
    let mut idle_noise = 0u32;
    let mut idle_woke = false;
    loop {
        if state.shutdown.is_triggered() || !exists(state, &ctx.account_id).await? {
            imap::logout(s).await;
            return Ok(());
        }
        let round = round(state, ctx, &mut s, caps).await?;
        *backoff = BACKOFF_MIN;
        if idle_woke {
            idle_noise = if round.changed.is_empty() {
                idle_noise + 1
            } else {
                0
            };
        }
        if caps.idle {
            let now = imap::select(&mut s, "INBOX", caps.condstore).await?;
            let moved = round.inbox.is_some_and(|seen| now.differs_from(&seen));
            if moved && restless < MAX_RESTLESS_ROUNDS {
                restless += 1;
                tracing::debug!(account = %ctx.account_id, "INBOX changed before IDLE; syncing again");
                continue;
            }
            restless = 0;
            if idle_noise >= NOISY_WAKEUPS {
                // The server keeps waking IDLE without a change: back off before the next.
                let pause = (BACKOFF_MIN * 2u32.pow((idle_noise - NOISY_WAKEUPS).min(8))).min(poll);
                tracing::debug!(account = %ctx.account_id, ?pause, "IDLE wake-ups without changes; backing off");
                sleep_or_wake(state, poke, pause).await;
            }
            let wake = async {
                tokio::select! {
                    _ = poke.notified() => {}
                    _ = state.shutdown.wait() => {}
                }
            };
            let (back, changed) = imap::idle(s, poll, wake).await?;
            s = back;
            idle_woke = changed;
        } else {
            sleep_or_wake(state, poke, poll).await;
        }
    }
}

/// One sync round under the account's lock: its changes announced, the account's status
/// set (a limit that holds, account cap or quota, stays visible on the account; the round
/// cap only defers mail).
async fn round(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut imap::Session,
    caps: imap::Caps,
) -> Result<sync::Round, SyncError> {
    let round = {
        let _guard = sync::account_lock(state, &ctx.account_id).await;
        let round = sync::full_round(state, ctx, s, caps).await?;
        for t in &round.changed {
            announce(state, &ctx.user_id, &ctx.account_id, t);
        }
        round
    };
    let note = round
        .limit
        .filter(|l| *l != Limit::Round)
        .map(|l| l.message().to_owned());
    sync::set_status(state, &ctx.dek, &ctx.account_id, "ok", note).await;
    Ok(round)
}

/// Waits `pause`, or less when the account is poked or the server shuts down.
async fn sleep_or_wake(state: &Context, poke: &tokio::sync::Notify, pause: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(pause) => {}
        _ = poke.notified() => {}
        _ = state.shutdown.wait() => {}
    }
}

async fn exists(state: &Context, account_id: &str) -> Result<bool, SyncError> {
    let id = account_id.to_owned();
    Ok(state
        .store
        .run(move |c| Ok::<_, AppError>(crate::store::email::account_by_id(c, &id)?.is_some()))
        .await?)
}
