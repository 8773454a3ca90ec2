//! Composing: what a new message, reply or forward is made of ([`ComposeInput`]), its
//! limits and the checks every way of sending runs first. Sending itself is
//! [`super::send`] (now or held for undo) and [`super::deliver`] (the SMTP transaction and
//! the Sent copy); drafts ([`super::drafts`]) reuse the checks.
//!
//! Nothing is half-sent: every check (addresses, sizes, uploads, the original of a
//! forward) happens and every file is in the spool, opened, before the SMTP transaction.
//! The files are then read as the message streams out; a file that cannot be read half-way
//! breaks the transaction off before the end of DATA, so the server accepts the whole
//! message or none of it.

use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};

use super::parse_id;
use super::sync::{self, AccountCtx};
use super::threads::{self, Message as Cached};
use super::uploads;
use crate::error::{AppError, AppResult};
use crate::services::Context;
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

pub(super) fn quote_header(m: &Cached) -> String {
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

pub(super) async fn check(
    state: &Context,
    user_id: &str,
    input: &ComposeInput,
) -> AppResult<Checked> {
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
