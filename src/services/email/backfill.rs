//! Older mail on demand. The first sync of a mailbox caches only its newest
//! `[email] first_sync_limit` messages; each sync counts what older mail the server still
//! holds ([`super::Runtime::older`]). When a client pages `GET /api/email/threads` past the
//! oldest cached thread while a mailbox in view has such mail, the next older batch (the
//! same size) is fetched and cached, and the page is answered from it.
//!
//! A back-fill runs under the account's lock (never beside a sync round). Concurrent
//! pagers that reach the end together queue on that lock; the ones after the first see
//! that a back-fill finished while they waited and read what it brought instead of
//! fetching another batch. Only accounts whose last sync succeeded are back-filled, so a
//! mail server outage answers from the cache without waiting on timeouts.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::announce;
use super::fetch;
use super::mailboxes::{self, Mailbox};
use super::sync::{self, AccountCtx, SyncError};
use crate::clients::mail::imap::{self, ImapError, Session};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::{self as store, messages as mstore};

/// What a back-fill did for a page.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    /// New mail was cached (by this call or by one it waited for): read again.
    pub fetched: bool,
    /// The server still holds older mail in view after it.
    pub more: bool,
}

/// The user's accounts (whose last sync succeeded) with mailboxes in view that hold older
/// mail on the server: `(account id, mailbox ids)`. `label_hash`: the keyed hash of the
/// one mailbox name in view (see [`mailboxes::name_hash`]).
async fn pending(
    state: &Context,
    user_id: &str,
    label_hash: Option<&str>,
) -> AppResult<Vec<(String, Vec<String>)>> {
    let uid = user_id.to_owned();
    let accounts = state
        .store
        .run(move |c| {
            let mut out = Vec::new();
            for a in store::accounts_of(c, &uid)? {
                // `syncing` too: a round or another pager's back-fill is running (it sets
                // that status); waiting on the account's lock is what that pager needs.
                if matches!(a.status.as_str(), "ok" | "syncing") {
                    let boxes = store::mailboxes(c, &a.id)?;
                    out.push((a.id, boxes));
                }
            }
            Ok::<_, AppError>(out)
        })
        .await?;
    Ok(accounts
        .into_iter()
        .map(|(account, boxes)| {
            let ids = boxes
                .into_iter()
                .filter(|b| label_hash.is_none_or(|h| b.name_hash.as_deref() == Some(h)))
                .filter(|b| state.email.older(&account, &b.id) > 0)
                .map(|b| b.id)
                .collect::<Vec<_>>();
            (account, ids)
        })
        .filter(|(_, ids)| !ids.is_empty())
        .collect())
}

/// Fetches the next older batch of every mailbox in view (`label_hash`: the keyed hash of
/// one mailbox name) that
/// has one.
pub async fn more(state: &Context, user_id: &str, label_hash: Option<&str>) -> AppResult<Outcome> {
    let todo = pending(state, user_id, label_hash).await?;
    let mut out = Outcome::default();
    for (account_id, mailbox_ids) in todo {
        let before = state.email.backfills(&account_id);
        let _guard = sync::account_lock(state, &account_id).await;
        if state.email.backfills(&account_id) != before {
            out.fetched = true;
            continue;
        }
        let result = fetch_account(state, &account_id, &mailbox_ids).await;
        state.email.backfill_done(&account_id);
        match result {
            Ok(n) => out.fetched |= n > 0,
            Err(e) => {
                // The page is answered from the cache; the account's status tells.
                tracing::info!(account = %account_id, error = %e, "back-fill of older mail failed");
            }
        }
    }
    out.more = !pending(state, user_id, label_hash).await?.is_empty();
    Ok(out)
}

/// Back-fills the account's mailboxes `mailbox_ids`; returns how many messages it cached.
async fn fetch_account(
    state: &Context,
    account_id: &str,
    mailbox_ids: &[String],
) -> Result<u64, SyncError> {
    let Some(ctx) = sync::load_ctx(state, account_id).await? else {
        return Ok(0);
    };
    // Read again under the lock: a round may have moved the bookkeeping meanwhile.
    let (aid, key) = (account_id.to_owned(), ctx.dek.clone());
    let boxes: Vec<Mailbox> = state
        .db(move |c| mailboxes::of_account(c, &key, &aid))
        .await?
        .into_iter()
        .filter(|b| mailbox_ids.contains(&b.id))
        .collect();
    sync::set_status(state, &ctx.dek, account_id, "syncing", None).await;
    let result = async {
        let mut s = imap::connect(&ctx.settings.imap, &state.config.email, &ctx.user_id).await?;
        let fetched = async {
            let mut n = 0;
            for mb in &boxes {
                n += fetch_older(state, &ctx, &mut s, mb).await?;
            }
            Ok::<_, SyncError>(n)
        }
        .await;
        imap::logout(s).await;
        fetched
    }
    .await;
    state.email.clear_progress(account_id);
    match &result {
        Ok(_) => sync::set_status(state, &ctx.dek, account_id, "ok", None).await,
        Err(e) => {
            let status = match e {
                SyncError::Imap(ImapError::Login(_)) => "auth_failed",
                _ => "unreachable",
            };
            sync::set_status(state, &ctx.dek, account_id, status, Some(e.to_string())).await;
        }
    }
    result
}

/// Caches the newest `first_sync_limit` of the messages below what the mailbox's sync has
/// cached; returns how many.
async fn fetch_older(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    mb: &Mailbox,
) -> Result<u64, SyncError> {
    let sel = imap::select(s, &mb.name, false).await?;
    let validity = i64::from(sel.uid_validity);
    if mb.uid_validity != Some(validity) {
        // The UIDs changed meaning: the next round starts the mailbox over.
        return Ok(0);
    }
    let server: HashMap<u32, u64> = if sel.exists == 0 {
        HashMap::new()
    } else {
        imap::uid_sizes(s).await?.into_iter().collect()
    };
    let mbid = mb.id.clone();
    let cached: HashSet<i64> = state
        .store
        .run(move |c| Ok::<_, AppError>(mstore::locations(c, &mbid)?))
        .await?
        .into_iter()
        .map(|(uid, ..)| uid)
        .collect();
    let mut older: Vec<(u32, u64)> = server
        .into_iter()
        .filter(|(u, _)| i64::from(*u) <= mb.last_uid && !cached.contains(&i64::from(*u)))
        .collect();
    older.sort_unstable_by_key(|m| std::cmp::Reverse(m.0));
    let take = older
        .len()
        .min(state.config.email.first_sync_limit as usize);
    // The account's cap and the user's quota hold for back-fills too.
    let mut budget = sync::budget_of(state, ctx).await?;
    let cfg = &state.config.email;
    let batch: Vec<(u32, u64)> = older[..take]
        .iter()
        .copied()
        .filter(|(_, size)| budget.take(fetch::cached_cost(cfg, *size)))
        .collect();
    let batch = &batch[..];
    let total = batch.len() as u64;
    let mut changed = BTreeSet::new();
    state.email.set_progress(&ctx.account_id, 0, total);
    fetch::fetch_into_cache(state, ctx, s, (&mb.id, validity), batch, &mut changed).await?;
    state
        .email
        .set_older(&ctx.account_id, &mb.id, (older.len() - batch.len()) as u64);
    for t in &changed {
        announce(state, &ctx.user_id, &ctx.account_id, t);
    }
    Ok(total)
}
