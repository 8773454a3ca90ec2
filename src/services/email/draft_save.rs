//! Saving a draft ([`super::drafts`]): a new one, or a new version replacing the last
//! one. The new version keeps the previous one's Message-ID, reply headers and files
//! (minus `removeAttachments`, read back from the server), adds the new uploads (streamed
//! from the spool) and is APPENDed before the old version is expunged.

use lettre::message::Mailbox;

use super::actions;
use super::compose::{self, check_text, mailboxes, ComposeInput};
use super::drafts::{draft_id, drafts_box, hash_of, locate, write};
use super::mime::{self, angle, Content, File, Parts};
use super::now_ms;
use super::sync::{self, AccountCtx};
use super::threads::{self, Message};
use super::uploads;
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::outgoing::{self as store, UploadRow};

/// Saves a new draft (`id` None) or replaces one; returns its id.
pub async fn save(
    state: &Context,
    user_id: &str,
    id: Option<&str>,
    input: ComposeInput,
    remove: &[u32],
) -> AppResult<String> {
    let fields = checked_fields(&input)?;
    let (replaced, ctx, versions) = target(state, user_id, id, &input).await?;
    let rows = uploads::rows(state, user_id, &input.attachments).await?;
    let mut kept = match versions.first() {
        Some((uid, m)) => previous(state, &ctx, (*uid, m), remove, &rows).await?,
        None => {
            uploads::check_total(state, &rows, 0)?;
            Kept::default()
        }
    };
    if let (Some(reply_to), None) = (&input.reply_to, &kept.in_reply_to) {
        if let Some((mid, refs)) = reply_headers(state, user_id, reply_to).await? {
            (kept.in_reply_to, kept.references) = (Some(mid), Some(refs));
        }
    }
    kept.files
        .extend(rows.iter().map(|row| uploads::file(state, &ctx.dek, row)));
    let from = compose::from_of(state, user_id, &ctx).await?;
    let message_id = kept
        .message_id
        .take()
        .unwrap_or_else(|| compose::new_message_id(&from));
    let (to, cc, bcc, subject) = fields;
    let out = mime::build(Parts {
        from,
        to,
        cc,
        bcc,
        subject,
        text: input.text.clone(),
        html: input.html.clone(),
        files: kept.files,
        message_id: message_id.clone(),
        in_reply_to: kept.in_reply_to,
        references: kept.references,
        draft: true,
    })?;
    let old: Vec<u32> = versions.iter().map(|(uid, _)| *uid as u32).collect();
    write(state, &ctx, Some(&out), &old).await?;
    drop(out);
    let id = record(state, &ctx, replaced, &message_id).await?;
    let ids: Vec<String> = rows.into_iter().map(|r| r.id).collect();
    if let Err(e) = uploads::discard(state, ids).await {
        tracing::warn!(error = %e, "could not drop uploads saved into a draft");
    }
    Ok(id)
}

/// To, Cc, Bcc and the subject.
type Fields = (Vec<Mailbox>, Vec<Mailbox>, Vec<Mailbox>, String);

/// To, Cc, Bcc and the subject, checked (a draft may have no recipient yet).
fn checked_fields(input: &ComposeInput) -> AppResult<Fields> {
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
    Ok((to, cc, bcc, subject))
}

/// The draft to replace (its id, account and versions; 404 when gone) or, for a new one,
/// the account to save it in.
async fn target(
    state: &Context,
    user_id: &str,
    id: Option<&str>,
    input: &ComposeInput,
) -> AppResult<(Option<String>, AccountCtx, Vec<(i64, Message)>)> {
    if let Some(id) = id {
        let (id, ctx, v) = locate(state, user_id, id).await?;
        if v.is_empty() {
            return Err(AppError::not_found("draft"));
        }
        return Ok((Some(id), ctx, v));
    }
    let account = super::accounts::pick(state, user_id, input.account_id.as_deref()).await?;
    let ctx = sync::load_ctx(state, &account.id)
        .await?
        .ok_or_else(|| AppError::not_found("mail account"))?;
    Ok((None, ctx, Vec::new()))
}

/// What a new version takes over from the previous one.
#[derive(Default)]
struct Kept {
    files: Vec<File>,
    message_id: Option<String>,
    in_reply_to: Option<String>,
    references: Option<String>,
}

/// The previous version's Message-ID, reply headers and files (those not in `remove`,
/// read back from the server); 413 when they and the new uploads pass the cap.
async fn previous(
    state: &Context,
    ctx: &AccountCtx,
    (uid, m): (i64, &Message),
    remove: &[u32],
    rows: &[UploadRow],
) -> AppResult<Kept> {
    let (_, name) = drafts_box(state, ctx)
        .await?
        .ok_or_else(|| AppError::not_found("draft"))?;
    let kept_size: u64 = m
        .body
        .attachments
        .iter()
        .filter(|a| !remove.contains(&a.index))
        .map(|a| a.size)
        .sum();
    uploads::check_total(state, rows, kept_size)?;
    let references = (!m.header.references.is_empty()).then(|| {
        let refs: Vec<String> = m.header.references.iter().map(|r| angle(r)).collect();
        refs.join(" ")
    });
    let mut files = Vec::new();
    if kept_size > 0 {
        let raw = actions::fetch_uid(state, ctx, &name, uid).await?;
        for (i, (ctype, fname, bytes)) in super::parse::attachments(&raw).into_iter().enumerate() {
            if !remove.contains(&(i as u32)) {
                files.push(File {
                    name: fname.unwrap_or_else(|| format!("attachment-{i}")),
                    mimetype: ctype,
                    content: Content::Bytes(bytes),
                });
            }
        }
    }
    Ok(Kept {
        files,
        message_id: m.header.message_id.clone(),
        in_reply_to: m.header.in_reply_to.clone(),
        references,
    })
}

/// In-Reply-To and References for a draft answering message `reply_to` (none when it
/// has no Message-ID).
async fn reply_headers(
    state: &Context,
    user_id: &str,
    reply_to: &str,
) -> AppResult<Option<(String, String)>> {
    let o = threads::message(state, user_id, reply_to).await?;
    let Some(mid) = &o.header.message_id else {
        return Ok(None);
    };
    let mut refs: Vec<String> = o.header.references.iter().map(|r| angle(r)).collect();
    refs.push(angle(mid));
    Ok(Some((mid.clone(), refs.join(" "))))
}

/// The draft's id: the same one for a replaced draft (now naming the new version's
/// Message-ID), a new one otherwise.
async fn record(
    state: &Context,
    ctx: &AccountCtx,
    replaced: Option<String>,
    message_id: &str,
) -> AppResult<String> {
    let hash = hash_of(ctx, Some(message_id), "");
    match replaced {
        Some(id) => {
            let did = id.clone();
            state
                .db(move |c| Ok(store::set_draft_hash(c, &did, &hash, now_ms())?))
                .await?;
            Ok(id)
        }
        None => draft_id(state, ctx, &hash).await,
    }
}
