//! Drafts, kept where other mail clients keep them: in the account's Drafts mailbox
//! (SPECIAL-USE `\Drafts`, created as `Drafts` when the server has none), flagged
//! `\Draft`. A save APPENDs the new version and then expunges the old one (never the other
//! way round, so a failure leaves at least one), and keeps its Message-ID: the draft's id
//! (a row in `email_drafts`) names that Message-ID by keyed hash, so it stays the same
//! across saves. Drafts written by other clients are listed too (read from the cached
//! Drafts mailbox, synced before each listing); saving one here gives it a Message-ID when
//! it had none. A draft's files are in its MIME on the server: a save keeps them (minus
//! `removeAttachments`) and adds the new uploads.

use super::actions::{self, ensure, open_session};
use super::sync::{self, AccountCtx};
use super::threads::{self, Message};
use super::wire::Outgoing;
use super::{now_ms, parse_id, ref_hash, user_key, AttachmentMeta, Person};
use crate::clients::mail::imap;
use crate::error::{AppError, AppResult};
use crate::services::upstream::imap_error;
use crate::services::Context;
use crate::store::email::outgoing as store;

/// Drafts listed per account (the newest).
pub const MAX_LISTED: usize = 200;

#[derive(Debug, Clone)]
pub struct Draft {
    pub id: String,
    pub account_id: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub attachments: Vec<AttachmentMeta>,
    pub updated_at: i64,
}

pub(super) fn show(p: &Person) -> String {
    match &p.name {
        Some(n) => format!("{n} <{}>", p.email),
        None => p.email.clone(),
    }
}

pub(super) fn hash_of(ctx: &AccountCtx, message_id: Option<&str>, cache_id: &str) -> String {
    match message_id {
        Some(mid) => ref_hash(&ctx.dek, "draft", mid),
        None => ref_hash(&ctx.dek, "draft-cache", cache_id),
    }
}

/// The account's Drafts mailbox in the cache: `(id, name)`.
pub(super) async fn drafts_box(
    state: &Context,
    ctx: &AccountCtx,
) -> AppResult<Option<(String, String)>> {
    let (aid, key) = (ctx.account_id.clone(), ctx.dek.clone());
    let boxes = state
        .db(move |c| super::mailboxes::of_account(c, &key, &aid))
        .await?;
    Ok(boxes
        .iter()
        .find(|b| b.special_use.as_deref() == Some("drafts"))
        .or_else(|| boxes.iter().find(|b| b.name == "Drafts"))
        .map(|b| (b.id.clone(), b.name.clone())))
}

/// Syncs the Drafts mailbox (what other clients saved shows at once).
async fn refresh(state: &Context, ctx: &AccountCtx) -> AppResult<()> {
    let Some((_, name)) = drafts_box(state, ctx).await? else {
        return Ok(());
    };
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let (mut s, caps) = open_session(state, ctx).await?;
    let r = sync::sync_named(state, ctx, &mut s, caps, &[name]).await;
    imap::logout(s).await;
    r.map(|_| ()).map_err(AppError::from)
}

/// The cached drafts of an account: `(hash, uid, message)`, newest first.
async fn cached(state: &Context, ctx: &AccountCtx) -> AppResult<Vec<(String, i64, Message)>> {
    let Some((box_id, _)) = drafts_box(state, ctx).await? else {
        return Ok(Vec::new());
    };
    let mut locs = state
        .db(move |c| Ok(crate::store::email::messages::locations(c, &box_id)?))
        .await?;
    locs.sort_by_key(|l| std::cmp::Reverse(l.0));
    let mut out = Vec::new();
    for (uid, mid, _, _) in locs.into_iter().take(MAX_LISTED) {
        let Ok(m) = threads::message(state, &ctx.user_id, &mid).await else {
            continue;
        };
        out.push((hash_of(ctx, m.header.message_id.as_deref(), &m.id), uid, m));
    }
    Ok(out)
}

async fn contexts(state: &Context, user_id: &str) -> AppResult<Vec<AccountCtx>> {
    let mut out = Vec::new();
    for a in super::accounts::list(state, user_id).await? {
        if let Some(ctx) = sync::load_ctx(state, &a.id).await? {
            out.push(ctx);
        }
    }
    Ok(out)
}

pub(super) async fn draft_id(state: &Context, ctx: &AccountCtx, hash: &str) -> AppResult<String> {
    let (uid, aid, h) = (ctx.user_id.clone(), ctx.account_id.clone(), hash.to_owned());
    state
        .db(move |c| Ok(store::draft_id(c, &uid, &aid, &h, now_ms())?))
        .await
}

/// Every draft of every account of the user, newest first. A mail server that cannot be
/// reached leaves the cached drafts listed.
pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<Draft>> {
    let _ = user_key(state, user_id).await?;
    let mut out = Vec::new();
    for ctx in contexts(state, user_id).await? {
        if let Err(e) = refresh(state, &ctx).await {
            tracing::debug!(error = %e, "drafts listed from the cache");
        }
        for (hash, _, m) in cached(state, &ctx).await? {
            let id = draft_id(state, &ctx, &hash).await?;
            out.push(Draft {
                id,
                account_id: ctx.account_id.clone(),
                to: m.header.to.iter().map(show).collect(),
                cc: m.header.cc.iter().map(show).collect(),
                bcc: Vec::new(),
                subject: m.header.subject.clone(),
                text: m.body.text.clone().unwrap_or_default(),
                html: m.body.html.clone(),
                attachments: m.body.attachments.clone(),
                updated_at: m.date,
            });
        }
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.updated_at));
    Ok(out)
}

/// The draft `id`: its account and its current versions `(uid, message)` in Drafts.
pub(super) async fn locate(
    state: &Context,
    user_id: &str,
    id: &str,
) -> AppResult<(String, AccountCtx, Vec<(i64, Message)>)> {
    let id = parse_id("draft", id)?;
    let (uid, did) = (user_id.to_owned(), id.clone());
    let (account_id, hash) = state
        .db(move |c| store::find_draft(c, &uid, &did)?.ok_or_else(|| AppError::not_found("draft")))
        .await?;
    let ctx = sync::load_ctx(state, &account_id)
        .await?
        .ok_or_else(|| AppError::not_found("draft"))?;
    let versions: Vec<(i64, Message)> = cached(state, &ctx)
        .await?
        .into_iter()
        .filter(|(h, _, _)| *h == hash)
        .map(|(_, uid, m)| (uid, m))
        .collect();
    Ok((id, ctx, versions))
}

/// One draft, read from the server (Bcc included). 404 when it is gone.
pub async fn get(state: &Context, user_id: &str, id: &str) -> AppResult<Draft> {
    let (id, ctx, versions) = locate(state, user_id, id).await?;
    let (uid, m) = versions
        .into_iter()
        .next()
        .ok_or_else(|| AppError::not_found("draft"))?;
    let (_, name) = drafts_box(state, &ctx)
        .await?
        .ok_or_else(|| AppError::not_found("draft"))?;
    let raw = actions::fetch_uid(state, &ctx, &name, uid).await?;
    let f = super::parse::draft_fields(&raw).unwrap_or_default();
    Ok(Draft {
        id,
        account_id: ctx.account_id.clone(),
        to: f.to.iter().map(show).collect(),
        cc: f.cc.iter().map(show).collect(),
        bcc: f.bcc.iter().map(show).collect(),
        subject: f.subject,
        text: f.text,
        html: f.html,
        attachments: m.body.attachments,
        updated_at: m.date,
    })
}

/// APPENDs `draft` to Drafts (`\Draft \Seen`, its files streamed from the spool), then
/// expunges the `old` UIDs, then syncs.
pub(super) async fn write(
    state: &Context,
    ctx: &AccountCtx,
    draft: Option<&Outgoing>,
    old: &[u32],
) -> AppResult<()> {
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let (mut s, caps) = open_session(state, ctx).await?;
    let result = async {
        let (aid, key) = (ctx.account_id.clone(), ctx.dek.clone());
        let boxes = state
            .db(move |c| super::mailboxes::of_account(c, &key, &aid))
            .await?;
        let name = ensure(&mut s, &boxes, "drafts", "Drafts").await?;
        if let Some(d) = draft {
            let pieces = d.pieces().map_err(AppError::internal)?;
            imap::append_pieces(&mut s, &name, "(\\Draft \\Seen)", d.wire_len(), pieces)
                .await
                .map_err(imap_error)?;
        }
        if !old.is_empty() {
            imap::select(&mut s, &name, false)
                .await
                .map_err(imap_error)?;
            imap::expunge_uids(&mut s, caps, &imap::uid_set(old))
                .await
                .map_err(imap_error)?;
        }
        let changed = sync::sync_named(state, ctx, &mut s, caps, &[name])
            .await
            .map_err(AppError::from)?;
        for t in &changed {
            super::announce(state, &ctx.user_id, &ctx.account_id, t);
        }
        Ok(())
    }
    .await;
    imap::logout(s).await;
    result
}

/// Deletes a draft from the server (every version of it). 404 when unknown.
pub async fn delete(state: &Context, user_id: &str, id: &str) -> AppResult<()> {
    let (id, ctx, versions) = locate(state, user_id, id).await?;
    if versions.is_empty() {
        return Err(AppError::not_found("draft"));
    }
    let old: Vec<u32> = versions.iter().map(|(uid, _)| *uid as u32).collect();
    write(state, &ctx, None, &old).await?;
    state.db(move |c| Ok(store::delete_draft(c, &id)?)).await
}

/// After its message went out: the draft leaves the Drafts mailbox.
pub async fn remove_after_send(state: &Context, user_id: &str, id: &str) -> AppResult<()> {
    match delete(state, user_id, id).await {
        Err(AppError::NotFound { .. }) => Ok(()),
        r => r,
    }
}
