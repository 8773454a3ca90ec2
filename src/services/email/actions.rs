//! Thread actions and label creation: made on the IMAP server first, then the touched
//! mailboxes are re-synced into the cache and the new thread is returned.

use std::collections::{BTreeMap, BTreeSet};

use super::mailboxes::{self, Mailbox};
use super::sync::{self, AccountCtx};
use super::threads::{self, Label, Thread};
use super::{announce, parse_id, user_key};
use crate::clients::mail::imap::{self, Caps, Session};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::upstream::imap_error;
use crate::services::Context;

/// A message flag that read/unread and star/unstar set or clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    Seen,
    Flagged,
}

impl Flag {
    fn imap(self) -> &'static str {
        match self {
            Self::Seen => "\\Seen",
            Self::Flagged => "\\Flagged",
        }
    }
}

/// What a thread action does on the IMAP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Adds (`true`) or removes the flag on every message of the thread.
    SetFlag(Flag, bool),
    Archive,
    Unarchive,
    Trash,
    Delete,
    AddLabel(String),
    RemoveLabel(String),
}

/// The `label` that addLabel and removeLabel need: trimmed, non-empty.
pub fn required_label(label: Option<&str>) -> AppResult<String> {
    label
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| AppError::invalid("label", "is required for addLabel and removeLabel"))
}

pub(super) async fn open_session(state: &Context, ctx: &AccountCtx) -> AppResult<(Session, Caps)> {
    let mut s = imap::connect(&ctx.settings.imap, &state.config.email, &ctx.user_id)
        .await
        .map_err(imap_error)?;
    let caps = imap::capabilities(&mut s).await.map_err(imap_error)?;
    Ok((s, caps))
}

pub(super) async fn account_ctx(state: &Context, account_id: &str) -> AppResult<AccountCtx> {
    sync::load_ctx(state, account_id)
        .await?
        .ok_or_else(|| AppError::not_found("mail account"))
}

fn special<'a>(boxes: &'a [Mailbox], role: &str) -> Option<&'a Mailbox> {
    boxes
        .iter()
        .find(|b| b.special_use.as_deref() == Some(role))
}

/// The mailbox with `role`, created under `name` when the server has none.
pub(super) async fn ensure(
    s: &mut Session,
    boxes: &[Mailbox],
    role: &str,
    name: &str,
) -> AppResult<String> {
    if let Some(b) = special(boxes, role) {
        return Ok(b.name.clone());
    }
    if !boxes.iter().any(|b| b.name == name) {
        imap::create_mailbox(s, name).await.map_err(imap_error)?;
    }
    Ok(name.to_owned())
}

pub async fn apply(
    state: &Context,
    user_id: &str,
    thread_id: &str,
    action: Action,
) -> AppResult<Thread> {
    let thread_id = parse_id("thread", thread_id)?;
    let dek = user_key(state, user_id).await?;
    let before = threads::load(state, &dek, user_id, &thread_id).await?;
    let ctx = account_ctx(state, &before.account_id).await?;
    let (ids, aid, key) = (
        before.message_ids.clone(),
        ctx.account_id.clone(),
        ctx.dek.clone(),
    );
    let (locations, boxes) = state
        .db(move |c| {
            Ok((
                mailboxes::locations(c, &key, &ids)?,
                mailboxes::of_account(c, &key, &aid)?,
            ))
        })
        .await?;
    let mut by_box: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (_, name, uid) in &locations {
        by_box.entry(name.clone()).or_default().push(*uid as u32);
    }
    if let Action::AddLabel(l) | Action::RemoveLabel(l) = &action {
        let Some(b) = boxes.iter().find(|b| &b.name == l) else {
            return Err(AppError::not_found("label"));
        };
        if matches!(action, Action::RemoveLabel(_)) && b.special_use.is_some() {
            return Err(AppError::invalid(
                "label",
                "system labels are left with archive, unarchive or trash",
            ));
        }
    }
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let (mut s, caps) = open_session(state, &ctx).await?;
    let result = act(&mut s, caps, &boxes, &by_box, &locations, &action).await;
    let touched = match result {
        Ok(t) => t,
        Err(e) => {
            imap::logout(s).await;
            return Err(e);
        }
    };
    let changed = sync::sync_named(state, &ctx, &mut s, caps, &touched).await;
    imap::logout(s).await;
    let mut changed = changed.map_err(AppError::from)?;
    changed.insert(thread_id.clone());
    for t in &changed {
        announce(state, user_id, &ctx.account_id, t);
    }
    match threads::load(state, &dek, user_id, &thread_id).await {
        Ok(t) => Ok(t),
        // Deleted for good: the thread as it was, without messages or labels.
        Err(AppError::NotFound { .. }) => Ok(Thread {
            message_ids: Vec::new(),
            labels: Vec::new(),
            unread: false,
            starred: false,
            ..before
        }),
        Err(e) => Err(e),
    }
}

/// Makes the change on the server; returns the mailboxes to re-sync.
async fn act(
    s: &mut Session,
    caps: Caps,
    boxes: &[Mailbox],
    by_box: &BTreeMap<String, Vec<u32>>,
    locations: &[(String, String, i64)],
    action: &Action,
) -> AppResult<Vec<String>> {
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let inbox = special(boxes, "inbox")
        .map(|b| b.name.clone())
        .unwrap_or_else(|| "INBOX".into());
    match action {
        Action::SetFlag(flag, add) => {
            for (name, uids) in by_box {
                imap::select(s, name, false).await.map_err(imap_error)?;
                imap::store_flag(s, &imap::uid_set(uids), *add, flag.imap())
                    .await
                    .map_err(imap_error)?;
                touched.insert(name.clone());
            }
        }
        Action::Archive => {
            if let Some(uids) = by_box.get(&inbox) {
                let archive = ensure(s, boxes, "archive", "Archive").await?;
                move_from(s, caps, &inbox, uids, &archive).await?;
                touched.extend([inbox, archive]);
            }
        }
        Action::Unarchive => {
            if let Some(archive) = special(boxes, "archive").map(|b| b.name.clone()) {
                if let Some(uids) = by_box.get(&archive) {
                    move_from(s, caps, &archive, uids, &inbox).await?;
                    touched.extend([inbox, archive]);
                }
            }
        }
        Action::Trash => {
            let trash = ensure(s, boxes, "trash", "Trash").await?;
            for (name, uids) in by_box.iter().filter(|(n, _)| **n != trash) {
                move_from(s, caps, name, uids, &trash).await?;
                touched.insert(name.clone());
            }
            touched.insert(trash);
        }
        Action::Delete => {
            for (name, uids) in by_box {
                expunge_from(s, caps, name, uids).await?;
                touched.insert(name.clone());
            }
        }
        Action::AddLabel(label) => {
            copy_to_label(s, locations, label).await?;
            touched.insert(label.clone());
        }
        Action::RemoveLabel(label) => {
            if let Some(uids) = by_box.get(label) {
                expunge_from(s, caps, label, uids).await?;
            }
            touched.insert(label.clone());
        }
    }
    Ok(touched.into_iter().collect())
}

/// SELECT `from`, then move `uids` to `to`.
async fn move_from(
    s: &mut Session,
    caps: Caps,
    from: &str,
    uids: &[u32],
    to: &str,
) -> AppResult<()> {
    imap::select(s, from, false).await.map_err(imap_error)?;
    imap::move_uids(s, caps, &imap::uid_set(uids), to)
        .await
        .map_err(imap_error)
}

/// SELECT `from`, then delete `uids` there for good.
async fn expunge_from(s: &mut Session, caps: Caps, from: &str, uids: &[u32]) -> AppResult<()> {
    imap::select(s, from, false).await.map_err(imap_error)?;
    imap::expunge_uids(s, caps, &imap::uid_set(uids))
        .await
        .map_err(imap_error)
}

/// One copy into `label` per message not in it yet, from its first location.
async fn copy_to_label(
    s: &mut Session,
    locations: &[(String, String, i64)],
    label: &str,
) -> AppResult<()> {
    let mut copy: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let already: BTreeSet<&str> = locations
        .iter()
        .filter(|(_, n, _)| n == label)
        .map(|(m, _, _)| m.as_str())
        .collect();
    for (m, name, uid) in locations {
        if already.contains(m.as_str()) || !seen.insert(m.as_str()) {
            continue;
        }
        copy.entry(name.clone()).or_default().push(*uid as u32);
    }
    for (name, uids) in &copy {
        imap::select(s, name, false).await.map_err(imap_error)?;
        imap::copy_uids(s, &imap::uid_set(uids), label)
            .await
            .map_err(imap_error)?;
    }
    Ok(())
}

fn validate_label(name: &str) -> AppResult<String> {
    let n = name.trim();
    if n.is_empty()
        || n.chars().count() > 200
        || n.chars()
            .any(|c| c.is_control() || c == '*' || c == '%' || c == '"' || c == '\\')
        || n.starts_with('/')
        || n.ends_with('/')
    {
        return Err(AppError::invalid(
            "name",
            "must be 1 to 200 characters without control characters, * % \" \\ or a leading or trailing /",
        ));
    }
    Ok(n.to_owned())
}

/// Creates a mailbox on the account (the user's first when `account_id` is absent).
pub async fn create_label(
    state: &Context,
    user_id: &str,
    name: &str,
    account_id: Option<&str>,
) -> AppResult<Label> {
    let name = validate_label(name)?;
    let _ = user_key(state, user_id).await?;
    let account = super::accounts::pick(state, user_id, account_id).await?;
    let ctx = account_ctx(state, &account.id).await?;
    let (aid, key) = (ctx.account_id.clone(), ctx.dek.clone());
    let boxes = state
        .db(move |c| mailboxes::of_account(c, &key, &aid))
        .await?;
    if boxes.iter().any(|b| b.name.eq_ignore_ascii_case(&name)) {
        return Err(AppError::conflict(
            ErrorCode::LabelExists,
            "a label with this name exists",
        ));
    }
    let _guard = sync::account_lock(state, &ctx.account_id).await;
    let (mut s, _) = open_session(state, &ctx).await?;
    let created = imap::create_mailbox(&mut s, &name)
        .await
        .map_err(imap_error);
    let refreshed = match created {
        Ok(()) => sync::refresh_mailboxes(state, &ctx, &mut s)
            .await
            .map(|_| ()),
        Err(e) => {
            imap::logout(s).await;
            return Err(e);
        }
    };
    imap::logout(s).await;
    refreshed.map_err(AppError::from)?;
    Ok(Label {
        id: name.clone(),
        name,
        system: false,
        unread: 0,
        total: 0,
    })
}

/// 502 for a message cached `truncated`: it is larger than this server fetches, and its
/// cached list of files is incomplete.
pub(super) fn refuse_truncated(state: &Context, m: &threads::Message) -> AppResult<()> {
    if !m.body.truncated {
        return Ok(());
    }
    // Fetched whole it would pass the bounded reader's cap: not fetched at all.
    Err(too_large_to_fetch(state))
}

/// 502: larger than `[email] max_message_mb`, so not fetched.
pub(super) fn too_large_to_fetch(state: &Context) -> AppError {
    AppError::BadGateway {
        code: ErrorCode::MailActionFailed,
        message: format!(
            "the message is larger than this server fetches ([email] max_message_mb = {}); \
             only its first part is cached and its attachments are not downloaded",
            state.config.email.max_message_mb
        ),
    }
}

/// The whole RFC 5322 text of a cached message, fetched from one of its mailboxes (at
/// most `[email] max_message_mb`; a `truncated` message is refused, it is larger).
pub async fn fetch_raw(state: &Context, m: &threads::Message) -> AppResult<Vec<u8>> {
    refuse_truncated(state, m)?;
    let ctx = account_ctx(state, &m.account_id).await?;
    let (mid, key) = (m.id.clone(), ctx.dek.clone());
    let locations = state
        .db(move |c| mailboxes::locations(c, &key, &[mid]))
        .await?;
    let (_, mailbox, uid) = locations
        .into_iter()
        .next()
        .ok_or_else(|| AppError::not_found("message"))?;
    fetch_uid(state, &ctx, &mailbox, uid).await
}

/// The whole text of message `uid` in `mailbox` (bounded like [`fetch_raw`]).
pub(super) async fn fetch_uid(
    state: &Context,
    ctx: &AccountCtx,
    mailbox: &str,
    uid: i64,
) -> AppResult<Vec<u8>> {
    let (mut s, _) = open_session(state, ctx).await?;
    let max = state.config.email.max_message_bytes();
    let fetched = async {
        imap::select(&mut s, mailbox, false).await?;
        imap::fetch_messages(&mut s, &uid.to_string(), imap::Extent::Whole, max).await
    }
    .await;
    imap::logout(s).await;
    Ok(fetched
        .map_err(imap_error)?
        .into_iter()
        .next()
        .ok_or_else(|| AppError::not_found("message"))?
        .raw)
}
