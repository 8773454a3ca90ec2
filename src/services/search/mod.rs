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
//!   the chat messages' part ([`reindex`]).
//! - **Search** looks up one term per query word, takes the documents holding all of
//!   them newest first, then decrypts each candidate and checks it against the query
//!   ([`query`]) before it is returned: prefix and collision false positives never show,
//!   and quoted phrases match exactly.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::crypto::DataKey;
use crate::error::{AppError, AppResult};
use crate::services::conversations;
use crate::services::messages::cache::KeyTag;
use crate::store::messages::MessageRow;
use crate::store::search_index::{self, Candidate, DocMeta};

pub mod query;
pub mod run;
pub mod terms;

pub use query::{Highlight, Query};
pub use run::{search, SearchHit, SearchPage, SearchParams, SnippetText};
pub use terms::SearchKey;

pub const KIND_MESSAGE: &str = "message";
pub const KIND_EMAIL: &str = "email";
/// msgtype of a message kept undecryptable: its stored text is a placeholder, not content.
const UNDECRYPTABLE: &str = "m.room.encrypted";

/// Indexes one item's text under its metadata, replacing what it had (an empty text
/// removes it). The extension point for every kind: e-mail ingest calls it with
/// `kind: "email"`, `scope`: the thread id, `sender: None`.
pub fn index_item(
    conn: &Connection,
    key: &SearchKey,
    doc: &DocMeta<'_>,
    text: &str,
) -> rusqlite::Result<()> {
    let terms = key.document_terms(&terms::words(text));
    search_index::replace(conn, doc, &terms)
}

/// Removes one item from the index (e-mail deletion; messages go by trigger).
pub fn remove_item(conn: &Connection, kind: &str, item_id: &str) -> rusqlite::Result<()> {
    search_index::remove(conn, kind, item_id).map(|_| ())
}

/// Indexes a stored chat message with its readable text: called by the ingest for every
/// message it stores or rewrites. Redacted and undecryptable messages are not indexed.
pub fn index_message(
    conn: &Connection,
    dek: &DataKey,
    row: &MessageRow,
    body: &str,
) -> rusqlite::Result<()> {
    let text = if row.redacted || row.msgtype == UNDECRYPTABLE {
        ""
    } else {
        body
    };
    let doc = DocMeta {
        user_id: &row.user_id,
        kind: KIND_MESSAGE,
        item_id: &row.id,
        scope: &row.room_id,
        sender: Some(&row.sender_id),
        ts: row.ts,
    };
    index_item(conn, &SearchKey::of(dek), &doc, text)
}

/// Indexes a cached e-mail (subject and text) under its thread: called by the mailbox
/// sync for every mail it stores. The sender is sealed with the mail, so it is not filed
/// (the `sender` filter applies to chat messages).
#[allow(clippy::too_many_arguments)]
pub fn index_email(
    conn: &Connection,
    dek: &DataKey,
    user_id: &str,
    message_id: &str,
    thread_id: &str,
    date_ms: i64,
    subject: &str,
    text: &str,
) -> rusqlite::Result<()> {
    let doc = DocMeta {
        user_id,
        kind: KIND_EMAIL,
        item_id: message_id,
        scope: thread_id,
        sender: None,
        ts: date_ms,
    };
    index_item(
        conn,
        &SearchKey::of(dek),
        &doc,
        &format!("{subject}\n{text}"),
    )
}

/// A cached mail's subject and text, if it is the user's and readable.
fn open_email(
    conn: &Connection,
    dek: &DataKey,
    user_id: &str,
    id: &str,
) -> AppResult<Option<String>> {
    use crate::services::email::{open_json, Body, Header, T_MESSAGES};
    use rusqlite::OptionalExtension;
    let row: Option<(Vec<u8>, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT m.header_enc, m.body_enc FROM email_messages m \
             JOIN email_accounts a ON a.id = m.account_id WHERE m.id = ?1 AND a.user_id = ?2",
        )?
        .query_row([id, user_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((header, body)) = row else {
        return Ok(None);
    };
    let header: Option<Header> = open_json(dek, &header, T_MESSAGES, "header", id).ok();
    let body: Option<Body> = open_json(dek, &body, T_MESSAGES, "body", id).ok();
    let (Some(header), Some(body)) = (header, body) else {
        return Ok(None);
    };
    Ok(Some(format!(
        "{}\n{}",
        header.subject,
        body.text.unwrap_or_default()
    )))
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
    pub unreadable: usize,
}

/// Rebuilds one user's index from the stored messages (in batches, each its own
/// transaction, so a serving process is not blocked for long).
pub fn reindex(
    conn: &mut Connection,
    master: &crate::crypto::MasterKey,
    user_id: &str,
) -> AppResult<Reindexed> {
    let user =
        crate::store::users::find(conn, user_id)?.ok_or_else(|| AppError::not_found("user"))?;
    let dek = crate::services::users::data_key(master, &user)?;
    {
        let tx = conn.transaction()?;
        tx.execute(
            "DELETE FROM search_docs WHERE user_id = ?1 AND kind = ?2",
            [user_id, KIND_MESSAGE],
        )?;
        tx.commit()?;
    }
    let mut out = Reindexed::default();
    let mut after = String::new();
    loop {
        let rows = search_index::messages_after(conn, user_id, &after, 500)?;
        let Some(last) = rows.last() else { break };
        after = last.id.clone();
        let tx = conn.transaction()?;
        for row in &rows {
            match conversations::open_message(&dek, &row.id, &row.content_enc) {
                Ok(content) => {
                    index_message(&tx, &dek, row, &content.body)?;
                    out.messages += 1;
                }
                Err(_) => out.unreadable += 1,
            }
        }
        tx.commit()?;
    }
    Ok(out)
}
