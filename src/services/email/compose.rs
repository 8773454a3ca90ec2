//! Composing: new messages, replies and forwards, sent through the account's SMTP server
//! (lettre) and appended to its Sent mailbox, whose sync files them in the thread.

use lettre::message::{Mailbox, MultiPart};
use lettre::Message;

use super::sync::{self, AccountCtx};
use super::threads::{self, Message as Cached};
use super::{announce, parse_id, ref_hash, user_key};
use crate::clients::mail::{imap, smtp};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::{imap_error, smtp_error};
use crate::services::Context;
use crate::store::email::messages as mstore;

pub const MAX_RECIPIENTS: usize = 100;
pub const MAX_SUBJECT_CHARS: usize = 998;
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Default)]
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
}

pub struct Sent {
    pub id: String,
    pub thread_id: String,
}

fn mailboxes(field: &str, list: &[String]) -> AppResult<Vec<Mailbox>> {
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

fn angle(id: &str) -> String {
    format!(
        "<{}>",
        id.trim().trim_start_matches('<').trim_end_matches('>')
    )
}

pub async fn send(state: &Context, user_id: &str, input: ComposeInput) -> AppResult<Sent> {
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
    let subject = input.subject.trim().to_owned();
    if subject.chars().count() > MAX_SUBJECT_CHARS || subject.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "subject",
            format!("must be at most {MAX_SUBJECT_CHARS} characters on one line"),
        ));
    }
    if input.text.len() > MAX_TEXT_BYTES
        || input
            .html
            .as_ref()
            .is_some_and(|h| h.len() > MAX_TEXT_BYTES)
    {
        return Err(AppError::invalid("text", "must be at most 1 MiB"));
    }
    let dek = user_key(state, user_id).await?;
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
    let account_id = match (&original, &input.account_id) {
        (Some(o), None) => Some(o.account_id.clone()),
        (_, a) => a.clone(),
    };
    let account = super::accounts::pick(state, user_id, account_id.as_deref()).await?;
    let ctx: AccountCtx = sync::load_ctx(state, &account.id)
        .await?
        .ok_or_else(|| AppError::not_found("mail account"))?;
    let mut text = input.text.clone();
    if let Some(sig) = &input.signature_id {
        let sig_id = parse_id("signature", sig)?;
        let s = super::signatures::get(state, user_id, &sig_id).await?;
        text = format!("{text}\n\n-- \n{}", s.text);
    }
    if let (Some(o), Some(_)) = (&original, &input.forward) {
        text = format!("{text}\n\n{}", quote_header(o));
    }
    let accounts = super::accounts::list(state, user_id).await?;
    let me = accounts
        .iter()
        .find(|a| a.id == ctx.account_id)
        .ok_or_else(|| AppError::not_found("mail account"))?;
    let from: Mailbox = match &me.display_name {
        Some(n) => format!("{n} <{}>", me.email),
        None => me.email.clone(),
    }
    .parse()
    .map_err(|_| AppError::invalid("accountId", "the account's address is not usable"))?;
    let domain = me
        .email
        .rsplit('@')
        .next()
        .unwrap_or("localhost")
        .to_owned();
    let message_id = format!("{}@{domain}", uuid::Uuid::new_v4());
    let mut b = Message::builder()
        .from(from)
        .subject(subject)
        .date_now()
        .message_id(Some(angle(&message_id)));
    for m in to {
        b = b.to(m);
    }
    for m in cc {
        b = b.cc(m);
    }
    for m in bcc {
        b = b.bcc(m);
    }
    if let (Some(o), Some(_)) = (&original, &input.reply_to) {
        if let Some(mid) = &o.header.message_id {
            b = b.in_reply_to(angle(mid));
            let mut refs: Vec<String> = o.header.references.iter().map(|r| angle(r)).collect();
            refs.push(angle(mid));
            b = b.references(refs.join(" "));
        }
    }
    let message = match &input.html {
        Some(html) => b.multipart(MultiPart::alternative_plain_html(text, html.clone())),
        None => b.body(text),
    }
    .map_err(|e| AppError::invalid("to", e.to_string()))?;
    let raw = message.formatted();
    smtp::send(
        &ctx.settings.smtp,
        &state.config.email,
        message.envelope().clone(),
        &raw,
    )
    .await
    .map_err(smtp_error)?;
    // Sent: into the Sent mailbox, then synced so it joins its thread in the cache.
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let appended = append_sent(state, &ctx, &raw).await;
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
        let sent = match boxes
            .iter()
            .find(|b| b.special_use.as_deref() == Some("sent"))
        {
            Some(b) => b.name.clone(),
            None => {
                if !boxes.iter().any(|b| b.name == "Sent") {
                    imap::create_mailbox(&mut s, "Sent")
                        .await
                        .map_err(imap_error)?;
                }
                "Sent".to_owned()
            }
        };
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
