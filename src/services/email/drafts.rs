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
use super::compose::{self, check_text, mailboxes, ComposeInput};
use super::mime::{self, angle, Content, File, Parts};
use super::sync::{self, AccountCtx};
use super::threads::{self, Message};
use super::uploads;
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

fn hash_of(ctx: &AccountCtx, message_id: Option<&str>, cache_id: &str) -> String {
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

async fn draft_id(state: &Context, ctx: &AccountCtx, hash: &str) -> AppResult<String> {
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

/// Saves a new draft (`id` None) or replaces one; returns its id.
pub async fn save(
    state: &Context,
    user_id: &str,
    id: Option<&str>,
    input: ComposeInput,
    remove: &[u32],
) -> AppResult<String> {
    let to = mailboxes("to", &input.to)?;
    let cc = mailboxes("cc", &input.cc)?;
    let bcc = mailboxes("bcc", &input.bcc)?;
    if to.len() + cc.len() + bcc.len() > compose::MAX_RECIPIENTS {
        return Err(AppError::invalid("to", "too many recipients"));
    }
    let subject = check_text(&input.subject, &input.text, input.html.as_ref())?;
    if input.attachments.len() > compose::MAX_ATTACHMENTS {
        return Err(AppError::invalid("attachments", "too many files"));
    }
    let (draft_id, ctx, versions) = match id {
        Some(id) => {
            let (id, ctx, v) = locate(state, user_id, id).await?;
            if v.is_empty() {
                return Err(AppError::not_found("draft"));
            }
            (Some(id), ctx, v)
        }
        None => {
            let account =
                super::accounts::pick(state, user_id, input.account_id.as_deref()).await?;
            let ctx = sync::load_ctx(state, &account.id)
                .await?
                .ok_or_else(|| AppError::not_found("mail account"))?;
            (None, ctx, Vec::new())
        }
    };
    let rows = uploads::rows(state, user_id, &input.attachments).await?;
    let mut files: Vec<File> = Vec::new();
    let mut message_id = None;
    let (mut in_reply_to, mut references) = (None, None);
    if let Some((uid, m)) = versions.first() {
        let (_, name) = drafts_box(state, &ctx)
            .await?
            .ok_or_else(|| AppError::not_found("draft"))?;
        let kept: u64 = m
            .body
            .attachments
            .iter()
            .filter(|a| !remove.contains(&a.index))
            .map(|a| a.size)
            .sum();
        uploads::check_total(state, &rows, kept)?;
        message_id = m.header.message_id.clone();
        in_reply_to = m.header.in_reply_to.clone();
        if !m.header.references.is_empty() {
            references = Some(
                m.header
                    .references
                    .iter()
                    .map(|r| angle(r))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        if kept > 0 {
            let raw = actions::fetch_uid(state, &ctx, &name, *uid).await?;
            for (i, (ctype, fname, bytes)) in
                super::parse::attachments(&raw).into_iter().enumerate()
            {
                if !remove.contains(&(i as u32)) {
                    files.push(File {
                        name: fname.unwrap_or_else(|| format!("attachment-{i}")),
                        mimetype: ctype,
                        content: Content::Bytes(bytes),
                    });
                }
            }
        }
    } else {
        uploads::check_total(state, &rows, 0)?;
    }
    if input.reply_to.is_some() && in_reply_to.is_none() {
        let o = threads::message(
            state,
            user_id,
            input.reply_to.as_deref().unwrap_or_default(),
        )
        .await?;
        if let Some(mid) = &o.header.message_id {
            in_reply_to = Some(mid.clone());
            let mut refs: Vec<String> = o.header.references.iter().map(|r| angle(r)).collect();
            refs.push(angle(mid));
            references = Some(refs.join(" "));
        }
    }
    for row in &rows {
        files.push(uploads::file(state, &ctx.dek, row));
    }
    let from = compose::from_of(state, user_id, &ctx).await?;
    let message_id = message_id.unwrap_or_else(|| compose::new_message_id(&from));
    let out = mime::build(Parts {
        from,
        to,
        cc,
        bcc,
        subject,
        text: input.text.clone(),
        html: input.html.clone(),
        files,
        message_id: message_id.clone(),
        in_reply_to,
        references,
        draft: true,
    })?;
    let old: Vec<u32> = versions.iter().map(|(uid, _)| *uid as u32).collect();
    write(state, &ctx, Some(&out), &old).await?;
    drop(out);
    let hash = hash_of(&ctx, Some(&message_id), "");
    let id = match draft_id {
        Some(id) => {
            let (did, h) = (id.clone(), hash.clone());
            state
                .db(move |c| Ok(store::set_draft_hash(c, &did, &h, now_ms())?))
                .await?;
            id
        }
        None => draft_id_for(state, &ctx, &hash).await?,
    };
    let ids: Vec<String> = rows.into_iter().map(|r| r.id).collect();
    if let Err(e) = uploads::discard(state, ids).await {
        tracing::warn!(error = %e, "could not drop uploads saved into a draft");
    }
    Ok(id)
}

async fn draft_id_for(state: &Context, ctx: &AccountCtx, hash: &str) -> AppResult<String> {
    draft_id(state, ctx, hash).await
}

/// APPENDs `draft` to Drafts (`\Draft \Seen`, its files streamed from the spool), then
/// expunges the `old` UIDs, then syncs.
async fn write(
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
