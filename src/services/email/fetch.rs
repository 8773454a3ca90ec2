//! Caching fetched mail: what a message costs the sync budget, and fetching a mailbox's new
//! messages in bounded batches into the cache. Used by the sync ([`super::sync`]) and the
//! back-fill of older mail ([`super::backfill`]).

use std::collections::BTreeSet;

use super::budget;
use super::ingest::{ingest, Incoming};
use super::{AccountCtx, SyncError};
use crate::clients::mail::imap::{self, Extent, Session};
use crate::services::Context;

/// What caching a message of `size` announced bytes costs: itself, or for mail over the
/// cap its header and first part.
pub(crate) fn cached_cost(cfg: &crate::config::EmailConfig, size: u64) -> u64 {
    if size > cfg.max_message_bytes() {
        budget::partial_body(cfg) + 64 * 1024
    } else {
        size
    }
}

/// Fetches `(uid, announced size)` of the selected mailbox `(id, validity)` in batches
/// bounded by count and bytes ([`budget::batches`]; mail over `[email] max_message_mb`
/// partially), caches each batch in one transaction, adds the threads it touched to
/// `changed` and reports the progress (of `msgs.len()`) after each batch.
pub(crate) async fn fetch_into_cache(
    state: &Context,
    ctx: &AccountCtx,
    s: &mut Session,
    (mailbox_id, validity): (&str, i64),
    msgs: &[(u32, u64)],
    changed: &mut BTreeSet<String>,
) -> Result<(), SyncError> {
    let total = msgs.len() as u64;
    let cfg = &state.config.email;
    // Large mail (not over the cap) is read from its structure, without its files.
    let (large, rest): (Vec<_>, Vec<_>) = msgs.iter().copied().partition(|(_, size)| {
        *size > cfg.large_message_bytes() && *size <= cfg.max_message_bytes()
    });
    let mb = (mailbox_id, validity);
    let mut whole = super::outline::cache_large(state, ctx, s, mb, &large, changed).await?;
    let mut done = (large.len() - whole.len()) as u64;
    state.email.set_progress(&ctx.account_id, done, total);
    whole.extend(rest);
    for batch in budget::batches(cfg, &whole) {
        let extent = if batch.partial {
            Extent::Partial(budget::partial_body(cfg))
        } else {
            Extent::Whole
        };
        // A server may round its sizes: allow some slack over what it announced.
        let allowed = batch.bytes + batch.bytes / 8 + 64 * 1024;
        let fetched = imap::fetch_messages(s, &imap::uid_set(&batch.uids), extent, allowed).await?;
        done += batch.uids.len() as u64;
        let (ctx2, mbid) = (ctx.clone(), mailbox_id.to_owned());
        let threads = state
            .db(move |c| {
                let tx = c.transaction()?;
                let mut threads = Vec::new();
                for f in fetched {
                    threads.push(ingest(&tx, &ctx2, &mbid, validity, Incoming::parse(f))?);
                }
                tx.commit()?;
                Ok(threads)
            })
            .await?;
        changed.extend(threads);
        state.email.set_progress(&ctx.account_id, done, total);
    }
    Ok(())
}
