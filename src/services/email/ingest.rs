//! Caching one fetched message: parsing, the Message-ID match (a message moved between
//! mailboxes keeps its id, but only when its content is the same), threading by
//! references, sealing and indexing.

use super::parse::{parse, thread_subject, Parsed};
use super::AccountCtx;
use super::{now_ms, open_json, ref_hash, seal_json, Body, Header, T_MESSAGES};
use crate::clients::mail::imap::Fetched;
use crate::crypto::{Aad, DataKey};
use crate::error::AppResult;
use crate::store::email::messages as mstore;

/// Whether cached message `id` says what `parsed` says (header, bodies, files): the same mail
/// seen in another mailbox, not a second mail reusing its Message-ID.
fn same_content(
    tx: &rusqlite::Connection,
    dek: &DataKey,
    id: &str,
    parsed: &Parsed,
) -> AppResult<bool> {
    let Some((header_enc, body_enc)) = mstore::sealed_docs(tx, id)? else {
        return Ok(false);
    };
    let header: Header = open_json(dek, &header_enc, T_MESSAGES, "header", id)?;
    let body: Body = open_json(dek, &body_enc, T_MESSAGES, "body", id)?;
    let same_header =
        serde_json::to_value(&header).ok() == serde_json::to_value(&parsed.header).ok();
    // The files count too: a draft saved again with a file added keeps its Message-ID, text
    // and header, and must not be taken for the version without the file.
    let same_files = serde_json::to_value(&body.attachments).ok()
        == serde_json::to_value(&parsed.body.attachments).ok();
    Ok(same_header && same_files && body.text == parsed.body.text && body.html == parsed.body.html)
}

/// A message read from the server, ready to cache: fetched whole (or, over `[email]
/// max_message_mb`, partially) and parsed, or read from its structure
/// ([`super::outline`]).
pub(super) struct Incoming {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
    /// The bytes it takes on the server (what the quota counts).
    pub size: u64,
    pub parsed: Parsed,
}

impl Incoming {
    /// A message fetched as RFC 5322 text, parsed.
    pub fn parse(f: Fetched) -> Self {
        let mut parsed = parse(&f.raw).unwrap_or_default();
        parsed.body.truncated = f.truncated;
        Self {
            uid: f.uid,
            seen: f.seen,
            flagged: f.flagged,
            size: f.raw.len() as u64,
            parsed,
        }
    }
}

/// Caches one message at `(mailbox, uid)`; returns its thread id.
pub(super) fn ingest(
    tx: &rusqlite::Connection,
    ctx: &AccountCtx,
    mailbox_id: &str,
    validity: i64,
    f: Incoming,
) -> AppResult<String> {
    let dek = &ctx.dek;
    let parsed = &f.parsed;
    let h = &parsed.header;
    let location_key = || ref_hash(dek, "loc", &format!("{mailbox_id}/{validity}/{}", f.uid));
    let mut key = match &h.message_id {
        Some(mid) => ref_hash(dek, "mid", mid),
        None => location_key(),
    };
    if let Some((id, thread)) = mstore::find_by_key(tx, &ctx.account_id, &key)? {
        if same_content(tx, dek, &id, parsed)? {
            mstore::add_location(tx, mailbox_id, i64::from(f.uid), &id)?;
            mstore::set_flags(tx, &id, f.seen, f.flagged)?;
            return Ok(thread);
        }
        // Another mail under a Message-ID already cached (anyone can write any
        // Message-ID): it is cached on its own, never merged into the first one.
        key = location_key();
    }
    let date = if parsed.date > 0 {
        parsed.date
    } else {
        now_ms()
    };
    let thread = thread_of(tx, ctx, h, &key, date)?;
    if parsed.body.truncated {
        tracing::debug!(account = %ctx.account_id, size = f.size, "mail over max_message_mb cached partially");
    }
    let id = insert(tx, ctx, &f, (key, &thread, date))?;
    mstore::add_location(tx, mailbox_id, i64::from(f.uid), &id)?;
    // The people of this mail, for address completion (sealed, counted once per mail).
    let people: Vec<super::Person> = h
        .from
        .iter()
        .chain(h.to.iter())
        .chain(h.cc.iter())
        .cloned()
        .collect();
    super::addresses::remember_in(tx, dek, &ctx.user_id, &people, 1, date)?;
    Ok(thread)
}

/// The thread of a new message (created when none fits), found by its own id and every id
/// it refers to, or by its subject for a reply whose references are unknown here; those
/// references now point to the thread.
fn thread_of(
    tx: &rusqlite::Connection,
    ctx: &AccountCtx,
    h: &Header,
    key: &str,
    date: i64,
) -> AppResult<String> {
    let dek = &ctx.dek;
    let mut refs: Vec<String> = h
        .in_reply_to
        .iter()
        .chain(h.references.iter())
        .map(|r| ref_hash(dek, "mid", r))
        .collect();
    let is_reply =
        !refs.is_empty() || thread_subject(&h.subject) != h.subject.trim().to_lowercase();
    let subject_key = ref_hash(dek, "subject", &thread_subject(&h.subject));
    // Its own id too: a reply cached before it (newest mail comes first) has put it there.
    refs.push(key.to_owned());
    let mut thread = mstore::thread_by_refs(tx, &ctx.account_id, &refs)?;
    if thread.is_none() && is_reply && !thread_subject(&h.subject).is_empty() {
        thread = mstore::thread_by_refs(tx, &ctx.account_id, std::slice::from_ref(&subject_key))?;
    }
    let thread = match thread {
        Some(t) => t,
        None => {
            let t = uuid::Uuid::new_v4().to_string();
            mstore::create_thread(tx, &t, &ctx.account_id, &ctx.user_id, date)?;
            t
        }
    };
    if !thread_subject(&h.subject).is_empty() {
        refs.push(subject_key);
    }
    mstore::add_refs(tx, &ctx.account_id, &refs, &thread)?;
    Ok(thread)
}

/// The message row, sealed, and its search index entry; returns its id.
fn insert(
    tx: &rusqlite::Connection,
    ctx: &AccountCtx,
    f: &Incoming,
    (key, thread, date): (String, &str, i64),
) -> AppResult<String> {
    let dek = &ctx.dek;
    let parsed = &f.parsed;
    let id = uuid::Uuid::new_v4().to_string();
    let row = mstore::MessageRow {
        header_enc: seal_json(dek, &parsed.header, T_MESSAGES, "header", &id),
        snippet_enc: dek.seal_str(&parsed.snippet, &Aad::new(T_MESSAGES, "snippet", &id)),
        body_enc: seal_json(dek, &parsed.body, T_MESSAGES, "body", &id),
        id,
        account_id: ctx.account_id.clone(),
        thread_id: thread.to_owned(),
        key_hash: key,
        date,
        seen: f.seen,
        flagged: f.flagged,
        size: f.size as i64,
    };
    mstore::insert(tx, &row)?;
    crate::services::indexing::index_email(
        tx,
        dek,
        &ctx.user_id,
        &row.id,
        thread,
        date,
        &parsed.header.subject,
        parsed.body.text.as_deref().unwrap_or(&parsed.snippet),
    )?;
    Ok(row.id)
}
