//! Composing: new messages, replies and forwards, sent through the account's SMTP server
//! (lettre) and appended to its Sent mailbox, whose sync files them in the thread. With
//! `undoSeconds` the message is held in the outbox ([`super::outbox`]) and sent by the
//! scheduler when the window ends.
//!
//! Nothing is half-sent: every check (addresses, sizes, uploads, the original of a
//! forward) and the reading of every file happen before the SMTP transaction; the server
//! then accepts the whole message or none of it.

use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};

use super::mime::{self, angle, Parts};
use super::sync::{self, AccountCtx};
use super::threads::{self, Message as Cached};
use super::uploads::{self, File};
use super::{announce, parse_id, ref_hash, user_key};
use crate::clients::mail::{imap, smtp};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{imap_error, smtp_error};
use crate::services::Context;
use crate::store::email::messages as mstore;
use crate::store::email::outgoing::UploadRow;

pub const MAX_RECIPIENTS: usize = 100;
pub const MAX_SUBJECT_CHARS: usize = 998;
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
pub const MAX_UNDO_SECONDS: u32 = 60;
pub const MAX_ATTACHMENTS: usize = 50;

/// The compose fields (also what the outbox keeps, sealed, for a held message).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComposeInput {
    pub account_id: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub reply_to: Option<String>,
    pub forward: Option<String>,
    pub signature_id: Option<String>,
    #[serde(default)]
    pub attachments: Vec<String>,
    #[serde(default)]
    pub include_attachments: bool,
    /// Set when a draft is sent: it is removed from the Drafts mailbox once sent.
    #[serde(default)]
    pub draft_id: Option<String>,
}

pub struct Sent {
    pub id: String,
    pub thread_id: String,
}

/// What a compose request led to.
pub enum Outcome {
    Sent(Sent),
    Held { outbox_id: String, send_at: i64 },
}

pub(super) fn mailboxes(field: &str, list: &[String]) -> AppResult<Vec<Mailbox>> {
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let a = a.trim();
            if a.contains(['\r', '\n']) {
                return Err(AppError::invalid(
                    &format!("{field}[{i}]"),
                    "must be one line",
                ));
            }
            a.parse::<Mailbox>().map_err(|_| {
                AppError::invalid(
                    &format!("{field}[{i}]"),
                    "must be an address such as bob@example.org or Bob <bob@example.org>",
                )
            })
        })
        .collect()
}

fn quote_header(m: &Cached) -> String {
    let who = |p: &super::Person| match &p.name {
        Some(n) => format!("{n} <{}>", p.email),
        None => p.email.clone(),
    };
    // Rows cached before dates were clamped at ingest may hold a year past 9999.
    let date =
        crate::services::scheduled::to_time(super::parse::clamp_date(m.date / 1000)).to_rfc2822();
    format!(
        "---------- Forwarded message ----------\nFrom: {}\nDate: {date}\nSubject: {}\nTo: {}\n\n{}",
        m.header.from.as_ref().map(who).unwrap_or_default(),
        m.header.subject,
        m.header.to.iter().map(who).collect::<Vec<_>>().join(", "),
        m.body.text.clone().unwrap_or_default()
    )
}

/// A request checked against everything but the network: what sending needs.
pub(super) struct Checked {
    pub to: Vec<Mailbox>,
    pub cc: Vec<Mailbox>,
    pub bcc: Vec<Mailbox>,
    pub subject: String,
    pub original: Option<Cached>,
    pub uploads: Vec<UploadRow>,
    pub ctx: AccountCtx,
}

pub(super) fn check_text(subject: &str, text: &str, html: Option<&String>) -> AppResult<String> {
    let subject = subject.trim().to_owned();
    if subject.chars().count() > MAX_SUBJECT_CHARS || subject.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "subject",
            format!("must be at most {MAX_SUBJECT_CHARS} characters on one line"),
        ));
    }
    if text.len() > MAX_TEXT_BYTES || html.is_some_and(|h| h.len() > MAX_TEXT_BYTES) {
        return Err(AppError::invalid("text", "must be at most 1 MiB"));
    }
    Ok(subject)
}

async fn check(state: &Context, user_id: &str, input: &ComposeInput) -> AppResult<Checked> {
    let to = mailboxes("to", &input.to)?;
    let cc = mailboxes("cc", &input.cc)?;
    let bcc = mailboxes("bcc", &input.bcc)?;
    if to.is_empty() {
        return Err(AppError::invalid("to", "needs at least one address"));
    }
    if to.len() + cc.len() + bcc.len() > MAX_RECIPIENTS {
        return Err(AppError::invalid(
            "to",
            format!("at most {MAX_RECIPIENTS} recipients in all"),
        ));
    }
    let subject = check_text(&input.subject, &input.text, input.html.as_ref())?;
    if input.attachments.len() > MAX_ATTACHMENTS {
        return Err(AppError::invalid(
            "attachments",
            format!("at most {MAX_ATTACHMENTS} files"),
        ));
    }
    if input.include_attachments && input.forward.is_none() {
        return Err(AppError::invalid(
            "includeAttachments",
            "only goes with forward",
        ));
    }
    let original = match (&input.reply_to, &input.forward) {
        (Some(_), Some(_)) => {
            return Err(AppError::invalid(
                "forward",
                "cannot be combined with replyTo",
            ))
        }
        (Some(r), None) => Some(threads::message(state, user_id, r).await?),
        (None, Some(f)) => Some(threads::message(state, user_id, f).await?),
        _ => None,
    };
    let uploads = uploads::rows(state, user_id, &input.attachments).await?;
    let forwarded: u64 = match (&original, input.include_attachments) {
        (Some(o), true) => o.body.attachments.iter().map(|a| a.size).sum(),
        _ => 0,
    };
    uploads::check_total(state, &uploads, forwarded)?;
    if let Some(sig) = &input.signature_id {
        super::signatures::get(state, user_id, &parse_id("signature", sig)?).await?;
    }
    let account_id = match (&original, &input.account_id) {
        (Some(o), None) => Some(o.account_id.clone()),
        (_, a) => a.clone(),
    };
    let account = super::accounts::pick(state, user_id, account_id.as_deref()).await?;
    let ctx: AccountCtx = sync::load_ctx(state, &account.id)
        .await?
        .ok_or_else(|| AppError::not_found("mail account"))?;
    Ok(Checked {
        to,
        cc,
        bcc,
        subject,
        original,
        uploads,
        ctx,
    })
}

/// Sends now (`undo_seconds` 0) or holds the message in the outbox for that long.
pub async fn send(
    state: &Context,
    user_id: &str,
    input: ComposeInput,
    undo_seconds: u32,
) -> AppResult<Outcome> {
    if undo_seconds > MAX_UNDO_SECONDS {
        return Err(AppError::invalid(
            "undoSeconds",
            format!("must be 0 to {MAX_UNDO_SECONDS}"),
        ));
    }
    let _ = user_key(state, user_id).await?;
    check(state, user_id, &input).await?;
    if undo_seconds == 0 {
        return Ok(Outcome::Sent(deliver(state, user_id, input).await?));
    }
    let (outbox_id, send_at) = super::outbox::hold(state, user_id, &input, undo_seconds).await?;
    Ok(Outcome::Held { outbox_id, send_at })
}

/// The sender of an account: `Name <address>`.
pub(super) async fn from_of(
    state: &Context,
    user_id: &str,
    ctx: &AccountCtx,
) -> AppResult<Mailbox> {
    let accounts = super::accounts::list(state, user_id).await?;
    let me = accounts
        .iter()
        .find(|a| a.id == ctx.account_id)
        .ok_or_else(|| AppError::not_found("mail account"))?;
    match &me.display_name {
        Some(n) => format!("{n} <{}>", me.email),
        None => me.email.clone(),
    }
    .parse()
    .map_err(|_| AppError::invalid("accountId", "the account's address is not usable"))
}

/// A new Message-ID in the domain of the sender.
pub(super) fn new_message_id(from: &Mailbox) -> String {
    format!("{}@{}", uuid::Uuid::new_v4(), from.email.domain())
}

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
        if !o.body.attachments.is_empty() {
            let raw = super::actions::fetch_raw(state, o).await?;
            for (i, (ctype, name, bytes)) in super::parse::attachments(&raw).into_iter().enumerate()
            {
                files.push(File {
                    name: name.unwrap_or_else(|| format!("attachment-{i}")),
                    mimetype: ctype,
                    bytes,
                });
            }
        }
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
