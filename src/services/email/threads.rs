//! Reading the cache: threads, messages and labels. Nothing here waits on IMAP.

use std::collections::{BTreeSet, HashMap};

use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::messages::{self as mstore, MessageMeta, ThreadRow};

use super::mailboxes;
use super::thread_query::{check_query, encode_cursor, Query};
use super::{open_json, parse_id, user_key, AttachmentMeta, Body, Header, Person, T_MESSAGES};

#[derive(Debug, Clone)]
pub struct Thread {
    pub id: String,
    pub account_id: String,
    pub subject: String,
    pub snippet: String,
    pub participants: Vec<Person>,
    pub message_ids: Vec<String>,
    pub unread: bool,
    pub starred: bool,
    pub labels: Vec<String>,
    pub last_message_at: i64,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub id: String,
    pub thread_id: String,
    pub account_id: String,
    pub header: Header,
    pub date: i64,
    pub body: Body,
    pub labels: Vec<String>,
    pub unread: bool,
    pub starred: bool,
}

#[derive(Debug, Clone)]
pub struct Label {
    pub id: String,
    pub name: String,
    pub system: bool,
    pub unread: i64,
    pub total: i64,
}

pub struct ThreadPage {
    pub threads: Vec<Thread>,
    pub next_cursor: Option<String>,
}

fn header(dek: &DataKey, m: &MessageMeta) -> Header {
    open_json(dek, &m.header_enc, T_MESSAGES, "header", &m.id).unwrap_or_default()
}

/// Messages of threads and the names of their mailboxes.
type MessagesAndNames = (Vec<MessageMeta>, HashMap<String, String>);

/// The messages of these threads (oldest first) and the names of their mailboxes, opened.
fn messages_and_names(
    c: &rusqlite::Connection,
    dek: &DataKey,
    thread_ids: &[String],
) -> AppResult<MessagesAndNames> {
    let messages = mstore::messages_of_threads(c, thread_ids)?;
    let ids: Vec<String> = messages
        .iter()
        .flat_map(|m| m.mailbox_ids.iter().cloned())
        .collect();
    let names = mailboxes::names(c, dek, &ids)?;
    Ok((messages, names))
}

/// The label names of a message (its mailboxes' names).
fn labels_of<'a>(
    m: &'a MessageMeta,
    names: &'a HashMap<String, String>,
) -> impl Iterator<Item = String> + 'a {
    m.mailbox_ids.iter().filter_map(|id| names.get(id).cloned())
}

/// Builds threads from their rows and messages (oldest first).
fn assemble(
    dek: &DataKey,
    rows: Vec<ThreadRow>,
    (messages, names): MessagesAndNames,
) -> Vec<Thread> {
    rows.into_iter()
        .map(|t| {
            let mine: Vec<&MessageMeta> = messages.iter().filter(|m| m.thread_id == t.id).collect();
            let headers: Vec<Header> = mine.iter().map(|m| header(dek, m)).collect();
            let mut participants: Vec<Person> = Vec::new();
            for h in &headers {
                for p in h.from.iter().chain(h.to.iter()).chain(h.cc.iter()) {
                    if !participants
                        .iter()
                        .any(|q| q.email.eq_ignore_ascii_case(&p.email))
                    {
                        participants.push(p.clone());
                    }
                }
            }
            let labels: BTreeSet<String> = mine.iter().flat_map(|m| labels_of(m, &names)).collect();
            let snippet = mine
                .last()
                .and_then(|m| {
                    dek.open_string(&m.snippet_enc, &Aad::new(T_MESSAGES, "snippet", &m.id))
                        .ok()
                })
                .unwrap_or_default();
            Thread {
                subject: headers
                    .first()
                    .map(|h| h.subject.clone())
                    .unwrap_or_default(),
                snippet,
                participants,
                message_ids: mine.iter().map(|m| m.id.clone()).collect(),
                unread: mine.iter().any(|m| !m.seen),
                starred: mine.iter().any(|m| m.flagged),
                labels: labels.into_iter().collect(),
                last_message_at: t.last_message_at,
                account_id: t.account_id,
                id: t.id,
            }
        })
        .collect()
}

/// Back-fills one page may wait for before it answers short (with a `nextCursor`).
const MAX_BACKFILLS_PER_PAGE: u32 = 3;

fn matches(t: &Thread, q: &str) -> bool {
    let q = q.to_lowercase();
    t.subject.to_lowercase().contains(&q)
        || t.snippet.to_lowercase().contains(&q)
        || t.participants.iter().any(|p| {
            p.email.to_lowercase().contains(&q)
                || p.name
                    .as_deref()
                    .is_some_and(|n| n.to_lowercase().contains(&q))
        })
}

/// Threads one `q` request opens and matches at most (as `GET /api/search` scans).
pub const MAX_Q_SCAN: usize = crate::services::indexing::MAX_SCAN;

pub async fn list(
    state: &Context,
    user_id: &str,
    label: Option<&str>,
    q: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> AppResult<ThreadPage> {
    let Query {
        limit,
        mut after,
        label,
        q,
    } = check_query(label, q, cursor, limit)?;
    let dek = user_key(state, user_id).await?;
    // The label is compared by its keyed hash (the names are sealed).
    let label = label.map(|l| mailboxes::name_hash(&dek, &l));
    // With `q` the sealed fields are searched after opening them: read in larger pages
    // until `limit` matches are found.
    let batch = if q.is_some() { 200 } else { limit + 1 };
    let mut out: Vec<Thread> = Vec::new();
    let (mut backfills, mut more_on_server) = (0, false);
    let mut scanned = 0usize;
    loop {
        let page = (label.clone(), after.clone(), batch);
        let (rows, messages) = read_page(state, &dek, user_id, page).await?;
        let exhausted = (rows.len() as i64) < batch;
        scanned += rows.len();
        if let Some(r) = rows.last() {
            after = Some((r.last_message_at, r.id.clone()));
        }
        let threads = assemble(&dek, rows, messages);
        out.extend(
            threads
                .into_iter()
                .filter(|t| q.as_deref().is_none_or(|q| matches(t, q))),
        );
        if out.len() as i64 > limit {
            break;
        }
        // Past the oldest cached thread: older mail may still be on the server (the first
        // sync is bounded). A search only covers what is cached.
        if exhausted && q.is_none() && backfills < MAX_BACKFILLS_PER_PAGE {
            backfills += 1;
            let o = super::backfill::more(state, user_id, label.as_deref()).await?;
            more_on_server = o.more;
            if o.fetched {
                continue;
            }
        }
        if exhausted {
            break;
        }
        if q.is_some() && scanned >= MAX_Q_SCAN {
            // Like search: one request opens a bounded number of threads; the cursor
            // goes on from the last one looked at.
            more_on_server = true;
            break;
        }
    }
    let next_cursor = next_cursor(&mut out, limit, more_on_server, after.as_ref());
    Ok(ThreadPage {
        threads: out,
        next_cursor,
    })
}

/// One page of thread rows `(label hash, after, how many)` and their messages.
async fn read_page(
    state: &Context,
    dek: &DataKey,
    user_id: &str,
    (label, after, batch): (Option<String>, Option<(i64, String)>, i64),
) -> AppResult<(Vec<ThreadRow>, MessagesAndNames)> {
    let (uid, key) = (user_id.to_owned(), dek.clone());
    state
        .db(move |c| {
            let rows = mstore::thread_page(
                c,
                &uid,
                label.as_deref(),
                after.as_ref().map(|(a, i)| (*a, i.as_str())),
                batch,
            )?;
            let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
            let messages = messages_and_names(c, &key, &ids)?;
            Ok((rows, messages))
        })
        .await
}

/// The cursor of the next page: after the last thread shown when there are more than
/// `limit` (cut to `limit`), or after the last one looked at when the server holds more.
fn next_cursor(
    out: &mut Vec<Thread>,
    limit: i64,
    more_on_server: bool,
    after: Option<&(i64, String)>,
) -> Option<String> {
    if out.len() as i64 > limit {
        out.truncate(limit as usize);
        return out.last().map(|t| encode_cursor(t.last_message_at, &t.id));
    }
    // A short page while the server holds more: the client pages on from here.
    more_on_server.then(|| match after {
        Some((at, id)) => encode_cursor(*at, id),
        None => encode_cursor(i64::MAX, ""),
    })
}

pub async fn get(state: &Context, user_id: &str, id: &str) -> AppResult<Thread> {
    let id = parse_id("thread", id)?;
    let dek = user_key(state, user_id).await?;
    load(state, &dek, user_id, &id).await
}

/// One thread of the user from the cache (404 when it is not theirs or is gone).
pub async fn load(state: &Context, dek: &DataKey, user_id: &str, id: &str) -> AppResult<Thread> {
    let (uid, tid, key) = (user_id.to_owned(), id.to_owned(), dek.clone());
    let (row, messages) = state
        .db(move |c| {
            let row =
                mstore::find_thread(c, &uid, &tid)?.ok_or_else(|| AppError::not_found("thread"))?;
            let messages = messages_and_names(c, &key, std::slice::from_ref(&row.id))?;
            Ok((row, messages))
        })
        .await?;
    Ok(assemble(dek, vec![row], messages).remove(0))
}

pub async fn message(state: &Context, user_id: &str, id: &str) -> AppResult<Message> {
    let id = parse_id("message", id)?;
    let dek = user_key(state, user_id).await?;
    let (uid, key) = (user_id.to_owned(), dek.clone());
    let (meta, body_enc, names) = state
        .db(move |c| {
            let (meta, body) = mstore::find_message(c, &uid, &id)?
                .ok_or_else(|| AppError::not_found("message"))?;
            let names = mailboxes::names(c, &key, &meta.mailbox_ids)?;
            Ok((meta, body, names))
        })
        .await?;
    let mut body: Body = open_json(&dek, &body_enc, T_MESSAGES, "body", &meta.id)?;
    body.html = body.html.as_deref().map(super::html::sanitize);
    let mut labels: Vec<String> = labels_of(&meta, &names).collect();
    labels.sort();
    Ok(Message {
        header: header(&dek, &meta),
        id: meta.id,
        thread_id: meta.thread_id,
        account_id: meta.account_id,
        date: meta.date,
        body,
        labels,
        unread: !meta.seen,
        starred: meta.flagged,
    })
}

/// The attachment list of a cached message (for the download route).
pub async fn attachment_meta(
    state: &Context,
    user_id: &str,
    id: &str,
    index: u32,
) -> AppResult<(Message, AttachmentMeta)> {
    let m = message(state, user_id, id).await?;
    let a = m
        .body
        .attachments
        .iter()
        .find(|a| a.index == index)
        .cloned()
        .ok_or_else(|| AppError::not_found("attachment"))?;
    Ok((m, a))
}

/// The user's labels by name: the mailboxes of one name (one keyed hash) over every
/// account are one label; its `id` is the name, opened here.
pub async fn labels(state: &Context, user_id: &str) -> AppResult<Vec<Label>> {
    let dek = user_key(state, user_id).await?;
    let uid = user_id.to_owned();
    let (rows, names) = state
        .db(move |c| {
            let rows = mstore::label_counts(c, &uid)?;
            let ids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
            let names = mailboxes::names(c, &dek, &ids)?;
            Ok((rows, names))
        })
        .await?;
    let mut out: Vec<Label> = rows
        .into_iter()
        .filter_map(|(id, special, unread, total)| {
            let name = names.get(&id)?.clone();
            Some(Label {
                id: name.clone(),
                name,
                system: special.is_some(),
                unread,
                total,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
