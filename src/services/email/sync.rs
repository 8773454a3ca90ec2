//! Mirroring a mailbox into the cache: UIDVALIDITY/UID bookkeeping, new messages (bounded
//! on the first sync), flags (CONDSTORE `CHANGEDSINCE` when offered), and messages gone
//! from the server. Used by the sync worker and by actions after they changed the server.
//!
//! A message is matched by the keyed hash of its Message-ID, so one moved between
//! mailboxes (archive, trash, labels) keeps its id; messages no mailbox holds any more
//! are dropped only after every touched mailbox was synced ([`drop_orphans`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::budget::{self, Budget, Limit};
use super::fetch::{cached_cost, fetch_into_cache};
use super::mailboxes::{self, Mailbox};
use super::T_ACCOUNTS;
use crate::clients::mail::imap::{self, Caps, Session};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::{self as store, messages as mstore};

pub use super::accounts::set_status;

pub use super::AccountCtx;
pub use super::SyncError;

/// Loads the account and its owner's data key; `None` when the account is gone (or its
/// owner's keys were deleted, which removes it).
pub async fn load_ctx(state: &Context, account_id: &str) -> AppResult<Option<AccountCtx>> {
    let id = account_id.to_owned();
    let found = state
        .store
        .run(move |c| {
            let Some(a) = store::account_by_id(c, &id)? else {
                return Ok::<_, AppError>(None);
            };
            let user = crate::store::users::find(c, &a.user_id)?;
            Ok(user.map(|u| (a, u)))
        })
        .await?;
    let Some((a, user)) = found else {
        return Ok(None);
    };
    if user.keys_shredded {
        return Ok(None);
    }
    let dek = crate::services::users::data_key(&state.master, &user)?;
    super::rekey::ensure(state, &a.id, &dek).await?;
    mailboxes::ensure_sealed(state, &a.id, &dek).await?;
    let settings = super::open_json(&dek, &a.settings_enc, T_ACCOUNTS, "settings", &a.id)?;
    Ok(Some(AccountCtx {
        account_id: a.id,
        user_id: a.user_id,
        dek,
        settings,
    }))
}

/// The per-account lock: a worker round and an action never interleave their syncs, so
/// a moved message is never dropped between leaving one mailbox and arriving in another.
pub async fn account_lock(state: &Context, account_id: &str) -> tokio::sync::OwnedMutexGuard<()> {
    state.email.lock_handle(account_id).lock_owned().await
}

/// LISTs the server's mailboxes into the cache and returns them.
pub async fn refresh_mailboxes(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
) -> Result<Vec<Mailbox>, SyncError> {
    let found = imap::list_mailboxes(s, state.config.email.max_mailboxes as usize).await?;
    let (id, dek) = (ctx.account_id.clone(), ctx.dek.clone());
    Ok(state
        .db(move |c| {
            let tx = c.transaction()?;
            let rows = mailboxes::replace(&tx, &dek, &id, &found)?;
            tx.commit()?;
            Ok(rows)
        })
        .await?)
}

/// What a round did: the changed threads, and what SELECT said about INBOX when the round
/// read it (the worker compares the SELECT that starts IDLE with it).
pub struct Round {
    pub changed: BTreeSet<String>,
    pub inbox: Option<imap::Selected>,
    /// The limit that left new mail on the server, if one did.
    pub limit: Option<Limit>,
}

/// The room of a sync of the account now.
pub async fn budget_of(state: &Context, ctx: &AccountCtx) -> AppResult<Budget> {
    let used = budget::usage(state, &ctx.account_id, &ctx.user_id).await?;
    Ok(Budget::new(&state.config.email, used))
}

/// Syncs every mailbox, then drops what no mailbox holds.
pub async fn full_round(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    caps: Caps,
) -> Result<Round, SyncError> {
    let boxes = refresh_mailboxes(state, ctx, s).await?;
    let ids: Vec<String> = boxes.iter().map(|b| b.id.clone()).collect();
    state.email.retain_mailboxes(&ctx.account_id, &ids);
    let mut changed = BTreeSet::new();
    let mut inbox = None;
    let mut budget = budget_of(state, ctx).await?;
    for mb in &boxes {
        let (c, sel) = sync_mailbox(state, ctx, s, caps, mb, &mut budget).await?;
        changed.extend(c);
        if mb.name.eq_ignore_ascii_case("INBOX") {
            inbox = Some(sel);
        }
    }
    changed.extend(drop_orphans(state, ctx).await?);
    Ok(Round {
        changed,
        inbox,
        limit: budget.hit,
    })
}

/// Syncs the named mailboxes (after an action), then drops orphans.
pub async fn sync_named(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    caps: Caps,
    names: &[String],
) -> Result<BTreeSet<String>, SyncError> {
    let boxes = refresh_mailboxes(state, ctx, s).await?;
    let mut changed = BTreeSet::new();
    let mut budget = budget_of(state, ctx).await?;
    for mb in boxes.iter().filter(|b| names.contains(&b.name)) {
        changed.extend(sync_mailbox(state, ctx, s, caps, mb, &mut budget).await?.0);
    }
    changed.extend(drop_orphans(state, ctx).await?);
    Ok(changed)
}

pub async fn drop_orphans(state: &Context, ctx: &AccountCtx) -> AppResult<Vec<String>> {
    let (id, uid) = (ctx.account_id.clone(), ctx.user_id.clone());
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let t = mstore::drop_orphans(&tx, &id)?;
            // The AI-search vectors of the dropped mails go with them.
            if !t.is_empty() {
                crate::store::search_index::drop_orphan_vectors(&tx, &uid)?;
            }
            tx.commit()?;
            Ok::<_, AppError>(t)
        })
        .await
}

/// Brings one mailbox's cached locations and flags in line with the server; returns the
/// changed threads and what SELECT said.
pub async fn sync_mailbox(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    caps: Caps,
    mb: &Mailbox,
    budget: &mut Budget,
) -> Result<(BTreeSet<String>, imap::Selected), SyncError> {
    let sel = imap::select(s, &mb.name, caps.condstore).await?;
    let validity = i64::from(sel.uid_validity);
    let (last_uid, modseq) = check_validity(state, mb, validity).await?;
    let listed: HashMap<u32, u64> = if sel.exists == 0 {
        HashMap::new()
    } else {
        imap::uid_sizes(s).await?.into_iter().collect()
    };
    let server: HashSet<u32> = listed.keys().copied().collect();
    let mbid = mb.id.clone();
    let cached: Cached = state
        .store
        .run(move |c| Ok::<_, AppError>(mstore::locations(c, &mbid)?))
        .await?
        .into_iter()
        .map(|(uid, id, seen, flagged)| (uid, (id, seen, flagged)))
        .collect();
    let mut changed = BTreeSet::new();
    let new = pick_new(state, ctx, mb, (&listed, &cached), last_uid, budget);
    remove_gone(state, mb, &cached, &server).await?;
    fetch_into_cache(state, ctx, s, (&mb.id, validity), &new, &mut changed).await?;
    state.email.clear_progress(&ctx.account_id);
    changed.extend(sync_flags(state, s, caps, modseq, &cached, &server).await?);
    let top = server.iter().copied().max().map(i64::from).unwrap_or(0);
    let mbid = mb.id.clone();
    let highest = sel.highest_modseq.map(|m| m as i64);
    let last = last_uid.max(top);
    state
        .store
        .run(move |c| Ok::<_, AppError>(store::set_position(c, &mbid, validity, last, highest)?))
        .await?;
    Ok((changed, sel))
}

/// The cached messages of a mailbox by UID: `(message id, seen, flagged)`.
type Cached = HashMap<i64, (String, bool, bool)>;

/// The last UID and mod-sequence the cache knows; both start over (and the mailbox's
/// cached locations go) when the server's UIDVALIDITY changed.
async fn check_validity(
    state: &Context,
    mb: &Mailbox,
    validity: i64,
) -> Result<(i64, Option<i64>), SyncError> {
    if mb.uid_validity.is_none_or(|v| v == validity) {
        return Ok((mb.last_uid, mb.highest_modseq));
    }
    let id = mb.id.clone();
    state
        .store
        .run(move |c| Ok::<_, AppError>(store::reset_mailbox(c, &id)?))
        .await?;
    Ok((0, None))
}

/// The new messages to cache, newest first, as far as the budget takes them; records how
/// many older ones stay on the server and starts the progress.
fn pick_new(
    state: &Context,
    ctx: &AccountCtx,
    mb: &Mailbox,
    (listed, cached): (&HashMap<u32, u64>, &Cached),
    last_uid: i64,
    budget: &mut Budget,
) -> Vec<(u32, u64)> {
    // New here: above the last UID seen (below it are only messages the bounded first
    // sync left on the server).
    let mut new: Vec<u32> = listed
        .keys()
        .filter(|u| i64::from(**u) > last_uid && !cached.contains_key(&i64::from(**u)))
        .copied()
        .collect();
    new.sort_unstable_by(|a, b| b.cmp(a));
    if last_uid == 0 {
        // First sync: only the newest messages (older ones stay on the server until a
        // client pages past them: backfill).
        new.truncate(state.config.email.first_sync_limit as usize);
    }
    // What the round, the account and the user's quota still take (newest first).
    let cfg = &state.config.email;
    let new: Vec<(u32, u64)> = new
        .into_iter()
        .map(|u| (u, listed.get(&u).copied().unwrap_or(0)))
        .filter(|(_, size)| budget.take(cached_cost(cfg, *size)))
        .collect();
    let left = listed.len()
        - listed
            .keys()
            .filter(|u| cached.contains_key(&i64::from(**u)))
            .count();
    state
        .email
        .set_older(&ctx.account_id, &mb.id, (left - new.len()) as u64);
    state
        .email
        .set_progress(&ctx.account_id, 0, new.len() as u64);
    new
}

/// Drops the cached locations of messages gone from this mailbox (expunged or moved).
async fn remove_gone(
    state: &Context,
    mb: &Mailbox,
    cached: &Cached,
    server: &HashSet<u32>,
) -> Result<(), SyncError> {
    let gone: Vec<i64> = cached
        .keys()
        .filter(|u| !server.contains(&(**u as u32)))
        .copied()
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    let mbid = mb.id.clone();
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            for uid in gone {
                mstore::remove_location(&tx, &mbid, uid)?;
            }
            tx.commit()?;
            Ok::<_, AppError>(())
        })
        .await?;
    Ok(())
}

/// Flags of what was already cached (CHANGEDSINCE when the server keeps mod-sequences);
/// returns the threads whose messages changed.
async fn sync_flags(
    state: &Context,
    s: &mut Session,
    caps: Caps,
    modseq: Option<i64>,
    cached: &Cached,
    server: &HashSet<u32>,
) -> Result<Vec<String>, SyncError> {
    let known: Vec<u32> = cached
        .keys()
        .map(|u| *u as u32)
        .filter(|u| server.contains(u))
        .collect();
    if known.is_empty() {
        return Ok(Vec::new());
    }
    let flags = match (caps.condstore, modseq) {
        (true, Some(m)) => imap::fetch_flags(s, "1:*", Some(m as u64)).await?,
        _ => imap::fetch_flags(s, &imap::uid_set(&known), None).await?,
    };
    let updates: Vec<(String, bool, bool)> = flags
        .into_iter()
        .filter_map(|f| {
            let (id, seen, flagged) = cached.get(&i64::from(f.uid))?;
            (*seen != f.seen || *flagged != f.flagged).then(|| (id.clone(), f.seen, f.flagged))
        })
        .collect();
    if updates.is_empty() {
        return Ok(Vec::new());
    }
    let threads = state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            let mut t = Vec::new();
            for (id, seen, flagged) in updates {
                t.extend(mstore::set_flags(&tx, &id, seen, flagged)?);
            }
            tx.commit()?;
            Ok::<_, AppError>(t)
        })
        .await?;
    Ok(threads)
}
