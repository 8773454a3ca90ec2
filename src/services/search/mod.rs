//! Encrypted full-text search (`GET /api/search`, the MCP `search` tool, keyword half of
//! `POST /api/ai/search`).
//!
//! - **Index**: a keyed blind index ([`terms`]): every word of an item is stored only as
//!   HMAC terms under the user's search key, which derives from the user's data key. No
//!   plaintext index exists (no FTS5), and `DELETE /api/keys` both makes the terms
//!   unmatchable (new data key, new search key) and deletes them.
//! - **Indexing** happens when an item is stored: chat messages in the sync ingest (new
//!   messages, edits, redactions, late decryption, back-filled history all pass through
//!   [`index_message`]); the mailbox sync indexes each cached mail ([`index_email`]);
//!   deletions of either remove their entries by trigger. `switchboard reindex` rebuilds
//!   both from what is stored ([`reindex`]).
//! - **Search** looks up one term per query word, takes the documents holding all of
//!   them newest first, then decrypts each candidate and checks it against the query
//!   ([`query`]) before it is returned: prefix and collision false positives never show,
//!   and quoted phrases match exactly.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::conversations;
use crate::services::email::{open_json, Body, Header, T_MESSAGES};
use crate::services::messages::cache::KeyTag;
use crate::store::search_index::{self, Candidate, EmailDoc};

pub mod query;
pub mod run;

pub use crate::services::indexing::{
    index_email, index_item, index_message, remove_item, terms, SearchKey, KIND_EMAIL, KIND_MESSAGE,
};
pub use query::{Highlight, Query};
pub use run::{search, SearchHit, SearchPage, SearchParams, SenderText, SnippetText};

/// A cached mail's header and the text it is indexed by (and summarized from): the body's
/// text part, or the snippet of a mail without one. `None` when it does not open.
pub fn open_email_doc(dek: &DataKey, doc: &EmailDoc) -> Option<(Header, String)> {
    let header: Header = open_json(dek, &doc.header_enc, T_MESSAGES, "header", &doc.id).ok()?;
    let body: Body = open_json(dek, &doc.body_enc, T_MESSAGES, "body", &doc.id).ok()?;
    let text = match body.text {
        Some(t) => t,
        None => dek
            .open_string(&doc.snippet_enc, &Aad::new(T_MESSAGES, "snippet", &doc.id))
            .ok()?,
    };
    Some((header, text))
}

/// A cached mail's subject and text as indexed, if it is the user's and readable.
fn open_email(
    conn: &Connection,
    dek: &DataKey,
    user_id: &str,
    id: &str,
) -> AppResult<Option<String>> {
    let Some(doc) = search_index::email_by_id(conn, user_id, id)? else {
        return Ok(None);
    };
    Ok(open_email_doc(dek, &doc).map(|(h, text)| format!("{}\n{text}", h.subject)))
}

/// The readable text of a candidate, or `None` when it is gone or unreadable.
/// Opened messages go through the history's content cache (`tag` names the data key), so
/// a result read again is not decrypted again.
pub(crate) fn open_item(
    conn: &Connection,
    dek: &DataKey,
    tag: KeyTag,
    user_id: &str,
    c: &Candidate,
) -> AppResult<Option<String>> {
    match c.kind.as_str() {
        KIND_MESSAGE => {
            let Some(row) = search_index::message_by_id(conn, user_id, &c.item_id)? else {
                return Ok(None);
            };
            if row.redacted {
                return Ok(None);
            }
            let cache = crate::services::messages::cache::cache();
            if let Some(content) = cache.get(&row.id, tag, &row.content_enc) {
                return Ok(Some(content.body.clone()));
            }
            let Ok(content) = conversations::open_message(dek, &row.id, &row.content_enc) else {
                return Ok(None);
            };
            let body = content.body.clone();
            cache.put(&row.id, tag, &row.content_enc, std::sync::Arc::new(content));
            Ok(Some(body))
        }
        KIND_EMAIL => open_email(conn, dek, user_id, &c.item_id),
        _ => Ok(None),
    }
}

/// Position after the last item looked at; sent as base64url JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    v: u8,
    t: i64,
    d: i64,
}

impl Cursor {
    pub fn at(ts: i64, doc: i64) -> Self {
        Self {
            v: 1,
            t: ts,
            d: doc,
        }
    }

    pub fn position(self) -> (i64, i64) {
        (self.t, self.d)
    }

    pub fn encode(self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&self).unwrap_or_default())
    }

    pub fn decode(raw: &str) -> AppResult<Self> {
        let bad = || AppError::invalid("cursor", "not a cursor this service issued");
        if raw.len() > 256 {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw.trim()).map_err(|_| bad())?;
        let c: Self = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if c.v != 1 {
            return Err(bad());
        }
        Ok(c)
    }
}

/// What `switchboard reindex` did for one user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reindexed {
    pub messages: usize,
    pub emails: usize,
    pub unreadable: usize,
}

/// Rebuilds one user's index from the stored chat messages and cached mails (in batches,
/// each its own transaction, so a serving process is not blocked for long).
pub fn reindex(
    conn: &mut Connection,
    master: &crate::crypto::MasterKey,
    user_id: &str,
    on_batch: &mut dyn FnMut(&Reindexed),
) -> AppResult<Reindexed> {
    let user = crate::services::users::load_row(conn, user_id)?;
    let dek = crate::services::users::data_key(master, &user)?;
    {
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM search_docs WHERE user_id = ?1", [user_id])?;
        tx.commit()?;
    }
    let mut out = Reindexed::default();
    reindex_messages(conn, &dek, user_id, &mut out, on_batch)?;
    reindex_emails(conn, &dek, user_id, &mut out, on_batch)?;
    // Vectors of items that are no longer indexed go too.
    search_index::drop_orphan_vectors(conn, user_id)?;
    Ok(out)
}

/// Indexes every stored chat message again, in id order.
fn reindex_messages(
    conn: &mut Connection,
    dek: &DataKey,
    user_id: &str,
    out: &mut Reindexed,
    on_batch: &mut dyn FnMut(&Reindexed),
) -> AppResult<()> {
    let mut after = String::new();
    loop {
        let rows = search_index::messages_after(conn, user_id, &after, 500)?;
        let Some(last) = rows.last() else { break };
        after = last.id.clone();
        let tx = conn.transaction()?;
        for row in &rows {
            match conversations::open_message(dek, &row.id, &row.content_enc) {
                Ok(content) => {
                    index_message(&tx, dek, row, &content.body)?;
                    out.messages += 1;
                }
                Err(_) => out.unreadable += 1,
            }
        }
        tx.commit()?;
        on_batch(out);
    }
    Ok(())
}

/// Indexes every cached mail again under its thread, with the text the mailbox sync
/// indexes it by.
fn reindex_emails(
    conn: &mut Connection,
    dek: &DataKey,
    user_id: &str,
    out: &mut Reindexed,
    on_batch: &mut dyn FnMut(&Reindexed),
) -> AppResult<()> {
    let mut after = String::new();
    loop {
        let docs = search_index::emails_after(conn, user_id, &after, 500)?;
        let Some(last) = docs.last() else { break };
        after = last.id.clone();
        let tx = conn.transaction()?;
        for doc in &docs {
            match open_email_doc(dek, doc) {
                Some((header, text)) => {
                    index_email(
                        &tx,
                        dek,
                        user_id,
                        &doc.id,
                        &doc.thread_id,
                        doc.date,
                        &header.subject,
                        &text,
                    )?;
                    out.emails += 1;
                }
                None => out.unreadable += 1,
            }
        }
        tx.commit()?;
        on_batch(out);
    }
    Ok(())
}
