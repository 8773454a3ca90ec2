//! Delivering a composed message through the account's SMTP server (lettre) and appending
//! it to its Sent mailbox, whose sync files it in the thread. Used for an immediate send
//! and by the outbox when an undo window ends.

use super::compose::{check, from_of, new_message_id, quote_header, Checked, ComposeInput, Sent};
use super::mime::{self, angle, File, Parts};
use super::spool::TempFiles;
use super::sync::{self, AccountCtx};
use super::uploads;
use super::wire::Outgoing;
use super::{announce, parse_id, ref_hash};
use crate::clients::mail::{imap, smtp};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{imap_error, smtp_error};
use crate::services::Context;
use crate::store::email::messages as mstore;
use lettre::message::Mailbox;

/// Checks again, builds the message (its files left in the spool), streams it to SMTP and
/// into Sent; then counts its recipients for completion, removes its draft and drops its
/// uploads.
pub async fn deliver(state: &Context, user_id: &str, input: ComposeInput) -> AppResult<Sent> {
    let c = check(state, user_id, &input).await?;
    // A forward's files spooled for this send: removed whatever way it ends.
    let mut temp = TempFiles::default();
    let text = body_text(state, user_id, &input, &c).await?;
    let files = files(state, &input, &c, &mut temp).await?;
    let from = from_of(state, user_id, &c.ctx).await?;
    let message_id = new_message_id(&from);
    let (in_reply_to, references) = reply_headers(&input, &c);
    let recipients: Vec<Mailbox> = c.to.iter().chain(&c.cc).chain(&c.bcc).cloned().collect();
    let out = mime::build(Parts {
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
    })?;
    let ctx = c.ctx;
    let pieces = out.pieces().map_err(unreadable)?;
    let len = out.wire_len();
    smtp::send(
        &ctx.settings.smtp,
        &state.config.email,
        &out.envelope,
        len,
        out.is_ascii(),
        pieces,
    )
    .await
    .map_err(smtp_error)?;
    after_send(state, user_id, &ctx, &recipients, input.draft_id.as_deref()).await;
    // Sent: into the Sent mailbox (streamed from the spool again), then synced so it joins
    // its thread in the cache; the spooled files go after that.
    let appended = {
        let _guard = sync::account_lock(state, &ctx.account_id).await;
        append_sent(state, &ctx, &out).await
    };
    drop((out, temp));
    let upload_ids: Vec<String> = c.uploads.into_iter().map(|u| u.id).collect();
    if let Err(e) = uploads::discard(state, upload_ids).await {
        tracing::warn!(error = %e, "could not drop the uploads of a sent mail");
    }
    filed(state, user_id, &ctx, &message_id, appended).await
}

/// A spool file missing before anything went out.
fn unreadable(e: std::io::Error) -> AppError {
    AppError::internal(format!(
        "a file of the message cannot be read; nothing was sent: {e}"
    ))
}

/// The text with the signature and, for a forward, the quoted original.
async fn body_text(
    state: &Context,
    user_id: &str,
    input: &ComposeInput,
    c: &Checked,
) -> AppResult<String> {
    let mut text = input.text.clone();
    if let Some(sig) = &input.signature_id {
        let s = super::signatures::get(state, user_id, &parse_id("signature", sig)?).await?;
        text = format!("{text}\n\n-- \n{}", s.text);
    }
    if let (Some(o), Some(_)) = (&c.original, &input.forward) {
        text = format!("{text}\n\n{}", quote_header(o));
    }
    Ok(text)
}

/// The uploads (left in their spool), then a forward's files (spooled into `temp`).
async fn files(
    state: &Context,
    input: &ComposeInput,
    c: &Checked,
    temp: &mut TempFiles,
) -> AppResult<Vec<File>> {
    let mut files: Vec<File> = c
        .uploads
        .iter()
        .map(|row| uploads::file(state, &c.ctx.dek, row))
        .collect();
    if let (Some(o), true) = (&c.original, input.include_attachments) {
        files.extend(super::forward::original_files(state, o, temp).await?);
    }
    Ok(files)
}

/// In-Reply-To and References of a reply (none when the original has no Message-ID).
fn reply_headers(input: &ComposeInput, c: &Checked) -> (Option<String>, Option<String>) {
    let (Some(o), Some(_)) = (&c.original, &input.reply_to) else {
        return (None, None);
    };
    let Some(mid) = &o.header.message_id else {
        return (None, None);
    };
    let mut refs: Vec<String> = o.header.references.iter().map(|r| angle(r)).collect();
    refs.push(angle(mid));
    (Some(mid.clone()), Some(refs.join(" ")))
}

/// What follows a message that went out: its recipients counted for completion, its
/// draft removed. Neither undoes the send, so a failure is only logged.
async fn after_send(
    state: &Context,
    user_id: &str,
    ctx: &AccountCtx,
    recipients: &[Mailbox],
    draft_id: Option<&str>,
) {
    if let Err(e) = super::addresses::remember_sent(state, ctx, recipients).await {
        tracing::warn!(error = %e, "could not count the recipients of a sent mail");
    }
    if let Some(d) = draft_id {
        if let Err(e) = super::drafts::remove_after_send(state, user_id, d).await {
            tracing::warn!(error = %e, "could not remove the draft of a sent mail");
        }
    }
}

/// The sent message as the cache has it (synced from Sent); 502 `mail_append_failed` when
/// it could not be filed there (it was sent all the same).
async fn filed(
    state: &Context,
    user_id: &str,
    ctx: &AccountCtx,
    message_id: &str,
    appended: AppResult<()>,
) -> AppResult<Sent> {
    let key = ref_hash(&ctx.dek, "mid", message_id);
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

async fn append_sent(state: &Context, ctx: &AccountCtx, out: &Outgoing) -> AppResult<()> {
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
        let pieces = out.pieces().map_err(AppError::internal)?;
        imap::append_pieces(&mut s, &sent, "(\\Seen)", out.wire_len(), pieces)
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
