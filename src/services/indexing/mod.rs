//! Writing the encrypted search index: every word of an item stored only as HMAC terms
//! under the user's search key ([`terms`]), replaced whenever the item is stored or
//! rewritten. The sync ingest and the mailbox sync call it; reading the index (queries,
//! decrypting candidates, reindexing) is [`crate::services::search`], which sits above
//! the messages and mail it opens. Kept apart so that storing mail does not depend on
//! searching it.

use rusqlite::Connection;

use crate::crypto::DataKey;
use crate::store::messages::MessageRow;
use crate::store::search_index::{self, DocMeta};

pub mod terms;

pub use terms::SearchKey;

/// The most candidates one query decrypts and checks (search, and a thread list's `q`).
pub const MAX_SCAN: usize = 2_000;

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
