//! Delivering a composed message through the account's SMTP server (lettre) and appending
//! it to its Sent mailbox, whose sync files it in the thread. Used for an immediate send
//! and by the outbox when an undo window ends.

use super::compose::{check, from_of, new_message_id, quote_header, ComposeInput, Sent};
use super::mime::{self, angle, Parts};
use super::sync::{self, AccountCtx};
use super::uploads::{self, File};
use super::{announce, parse_id, ref_hash};
use crate::clients::mail::{imap, smtp};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{imap_error, smtp_error};
use crate::services::Context;
use crate::store::email::messages as mstore;
use lettre::message::Mailbox;

/// Checks again, reads every file, builds the message, sends it, files it in Sent; then
/// drops its uploads, counts its recipients for completion and removes its draft.
pub async fn deliver(state: &Context, user_id: &str, input: ComposeInput) -> AppResult<Sent> {
    let c = check(state, user_id, &input).await?;
    let dek = c.ctx.dek.clone();
    let mut text = input.text.clone();
    if let Some(sig) = &input.signature_id {
        let s = super::signatures::get(state, user_id, &parse_id("signature", sig)?).await?;
        text = format!("{text}\n\n-- \n{}", s.text);
    }
    if let (Some(o), Some(_)) = (&c.original, &input.forward) {
        text = format!("{text}\n\n{}", quote_header(o));
    }
    let mut files: Vec<File> = Vec::new();
    for row in &c.uploads {
        files.push(uploads::read(state, &dek, row).await?);
    }
    if let (Some(o), true) = (&c.original, input.include_attachments) {
        files.extend(super::forward::original_files(state, o).await?);
    }
    let from = from_of(state, user_id, &c.ctx).await?;
    let message_id = new_message_id(&from);
    let (mut in_reply_to, mut references) = (None, None);
    if let (Some(o), Some(_)) = (&c.original, &input.reply_to) {
        if let Some(mid) = &o.header.message_id {
            in_reply_to = Some(mid.clone());
            let mut refs: Vec<String> = o.header.references.iter().map(|r| angle(r)).collect();
            refs.push(angle(mid));
            references = Some(refs.join(" "));
        }
    }
    let recipients: Vec<Mailbox> = c.to.iter().chain(&c.cc).chain(&c.bcc).cloned().collect();
    let message = mime::build(Parts {
        from,
        to: c.to,
        cc: c.cc,
        bcc: c.bcc,
        subject: c.subject,
        text,
        html: input.html.clone(),
        files,
        message_id: message_id.clone(),
        in_reply_to,
        references,
        draft: false,
    })
    .map_err(|e| AppError::invalid("to", e.to_string()))?;
    let envelope = message.envelope().clone();
    // The message as bytes once; the builder's copy goes before the transaction.
    let raw = message.formatted();
    drop(message);
    let ctx = c.ctx;
    smtp::send(&ctx.settings.smtp, &state.config.email, envelope, &raw)
        .await
        .map_err(smtp_error)?;
    let upload_ids: Vec<String> = c.uploads.into_iter().map(|u| u.id).collect();
    if let Err(e) = uploads::discard(state, upload_ids).await {
        tracing::warn!(error = %e, "could not drop the uploads of a sent mail");
    }
    if let Err(e) = super::addresses::remember_sent(state, &ctx, &recipients).await {
        tracing::warn!(error = %e, "could not count the recipients of a sent mail");
    }
    if let Some(d) = &input.draft_id {
        if let Err(e) = super::drafts::remove_after_send(state, user_id, d).await {
            tracing::warn!(error = %e, "could not remove the draft of a sent mail");
        }
    }
    // Sent: into the Sent mailbox, then synced so it joins its thread in the cache.
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let appended = append_sent(state, &ctx, &raw).await;
    drop(raw);
    let key = ref_hash(&dek, "mid", &message_id);
    let aid = ctx.account_id.clone();
    let found = state
        .store
        .run(move |c| Ok::<_, AppError>(mstore::find_by_key(c, &aid, &key)?))
        .await?;
    match (appended, found) {
        (_, Some((id, thread_id))) => {
            announce(state, user_id, &ctx.account_id, &thread_id);
            Ok(Sent { id, thread_id })
        }
        (Err(e), None) => Err(AppError::BadGateway {
            code: ErrorCode::MailAppendFailed,
            message: format!("the message was sent but could not be saved to Sent: {e}"),
        }),
        (Ok(()), None) => Err(AppError::BadGateway {
            code: ErrorCode::MailAppendFailed,
            message: "the message was sent but is not in the Sent mailbox".into(),
        }),
    }
}

async fn append_sent(state: &Context, ctx: &AccountCtx, raw: &[u8]) -> AppResult<()> {
    let mut s = imap::connect(&ctx.settings.imap, &state.config.email, &ctx.user_id)
        .await
        .map_err(imap_error)?;
    let result = async {
        let caps = imap::capabilities(&mut s).await.map_err(imap_error)?;
        let (aid, key) = (ctx.account_id.clone(), ctx.dek.clone());
        let boxes = state
            .db(move |c| super::mailboxes::of_account(c, &key, &aid))
            .await?;
        let sent = super::actions::ensure(&mut s, &boxes, "sent", "Sent").await?;
        imap::append(&mut s, &sent, "(\\Seen)", raw)
            .await
            .map_err(imap_error)?;
        let changed = sync::sync_named(state, ctx, &mut s, caps, &[sent])
            .await
            .map_err(AppError::from)?;
        for t in &changed {
            announce(state, &ctx.user_id, &ctx.account_id, t);
        }
        Ok(())
    }
    .await;
    imap::logout(s).await;
    result
}
