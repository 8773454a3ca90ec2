//! `search_docs` / `search_terms`: the keyed blind index of full-text search, and
//! `search_vectors`: sealed embeddings of AI search. Terms arrive here already blinded
//! (HMAC under the user's search key, `services::indexing::terms`); nothing in these tables
//! is a word in plaintext.

use rusqlite::{params, Connection, OptionalExtension};

/// What a document is filed under: the metadata the filters need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMeta<'a> {
    pub user_id: &'a str,
    /// `message` or `email`.
    pub kind: &'a str,
    pub item_id: &'a str,
    /// Room id (messages) or thread id (e-mail).
    pub scope: &'a str,
    pub sender: Option<&'a str>,
    /// Milliseconds.
    pub ts: i64,
}

/// (Re)indexes one document with its blinded terms, replacing what it had.
pub fn replace(conn: &Connection, doc: &DocMeta<'_>, terms: &[[u8; 16]]) -> rusqlite::Result<()> {
    remove(conn, doc.kind, doc.item_id)?;
    if terms.is_empty() {
        return Ok(());
    }
    let id: i64 = conn
        .prepare_cached(
            "INSERT INTO search_docs (user_id, kind, item_id, scope, sender, ts) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        )?
        .query_row(
            params![
                doc.user_id,
                doc.kind,
                doc.item_id,
                doc.scope,
                doc.sender,
                doc.ts
            ],
            |r| r.get(0),
        )?;
    let mut insert = conn
        .prepare_cached("INSERT OR IGNORE INTO search_terms (term, ts, doc) VALUES (?1, ?2, ?3)")?;
    for term in terms {
        insert.execute(params![&term[..], doc.ts, id])?;
    }
    Ok(())
}

/// Drops one document from the index (its terms go by cascade).
pub fn remove(conn: &Connection, kind: &str, item_id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM search_docs WHERE kind = ?1 AND item_id = ?2")?
        .execute([kind, item_id])
}

/// Drops every document and vector of a user (key deletion, reindex).
pub fn remove_user(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM search_vectors WHERE user_id = ?1", [user_id])?;
    conn.execute("DELETE FROM search_docs WHERE user_id = ?1", [user_id])
}

/// Filters of one search, in index terms.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub scope: Option<String>,
    pub sender: Option<String>,
    /// `whatsapp`, `telegram`, `discord`, or `matrix` (rooms without a bridge).
    pub platform: Option<String>,
    /// Exclusive bounds, milliseconds.
    pub after: Option<i64>,
    pub before: Option<i64>,
}

/// A candidate: a document holding every term, before its text is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub doc: i64,
    pub kind: String,
    pub item_id: String,
    pub scope: String,
    pub sender: Option<String>,
    pub ts: i64,
}

/// Reads a [`Candidate`] from a row whose first six columns are a document's id, kind,
/// item id, scope, sender and time, in that order.
fn candidate(r: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
    Ok(Candidate {
        doc: r.get(0)?,
        kind: r.get(1)?,
        item_id: r.get(2)?,
        scope: r.get(3)?,
        sender: r.get(4)?,
        ts: r.get(5)?,
    })
}

/// Up to `limit` documents of `user_id` holding every one of `terms` (at least one),
/// newest first, strictly after the position `(ts, doc)` in that order.
pub fn candidates(
    conn: &Connection,
    user_id: &str,
    terms: &[[u8; 16]],
    filters: &Filters,
    from: Option<(i64, i64)>,
    limit: i64,
) -> rusqlite::Result<Vec<Candidate>> {
    let Some((first, rest)) = terms.split_first() else {
        return Ok(Vec::new());
    };
    // One EXISTS per further term: each is a primary-key lookup on (term, ts, doc).
    let mut sql = String::from(
        "SELECT d.id, d.kind, d.item_id, d.scope, d.sender, t.ts \
         FROM search_terms t JOIN search_docs d ON d.id = t.doc \
         WHERE t.term = ?1 AND d.user_id = ?2 AND (t.ts, t.doc) < (?3, ?4) \
         AND (?5 IS NULL OR d.scope = ?5) AND (?6 IS NULL OR d.sender = ?6) \
         AND (?7 IS NULL OR t.ts > ?7) AND (?8 IS NULL OR t.ts < ?8) \
         AND (?9 IS NULL OR EXISTS (SELECT 1 FROM rooms r WHERE r.user_id = d.user_id \
              AND r.room_id = d.scope AND COALESCE(r.platform, 'matrix') = ?9))",
    );
    for i in 0..rest.len() {
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM search_terms x WHERE x.term = ?{} AND x.ts = t.ts \
             AND x.doc = t.doc)",
            i + 11
        ));
    }
    sql.push_str(" ORDER BY t.ts DESC, t.doc DESC LIMIT ?10");
    let (from_ts, from_doc) = from.unwrap_or((i64::MAX, i64::MAX));
    let mut values: Vec<rusqlite::types::Value> = vec![
        first.to_vec().into(),
        user_id.to_owned().into(),
        from_ts.into(),
        from_doc.into(),
        filters.scope.clone().into(),
        filters.sender.clone().into(),
        filters.after.into(),
        filters.before.into(),
        filters.platform.clone().into(),
        limit.into(),
    ];
    values.extend(rest.iter().map(|t| t.to_vec().into()));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(values), candidate)?;
    rows.collect()
}

/// How many documents and postings a user has (reindex report, tests).
pub fn counts(conn: &Connection, user_id: &str) -> rusqlite::Result<(i64, i64)> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM search_docs WHERE user_id = ?1), \
         (SELECT COUNT(*) FROM search_terms t JOIN search_docs d ON d.id = t.doc \
          WHERE d.user_id = ?1)",
        [user_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// One sealed embedding.
#[derive(Debug, Clone)]
pub struct VectorRow {
    pub kind: String,
    pub item_id: String,
    pub model: String,
    pub vector_enc: Vec<u8>,
}

pub fn put_vector(
    conn: &Connection,
    user_id: &str,
    v: &VectorRow,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO search_vectors (user_id, kind, item_id, model, vector_enc, \
         created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        user_id,
        v.kind,
        v.item_id,
        v.model,
        v.vector_enc,
        now
    ])?;
    Ok(())
}

/// A stored message of the user by id (the candidates' text).
pub fn message_by_id(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<super::messages::MessageRow>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM messages WHERE id = ?1 AND user_id = ?2",
        super::messages::COLUMNS
    ))?
    .query_row([id, user_id], super::messages::from_row)
    .optional()
}

/// How many stored messages and cached mails a reindex of the user reads (its progress total).
pub fn indexable(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM messages WHERE user_id = ?1) + \
         (SELECT COUNT(*) FROM email_messages m JOIN email_accounts a ON a.id = m.account_id \
          WHERE a.user_id = ?1)",
        [user_id],
        |r| r.get(0),
    )
}

/// The user's messages in id order after `after_id` (reindex batches).
pub fn messages_after(
    conn: &Connection,
    user_id: &str,
    after_id: &str,
    limit: i64,
) -> rusqlite::Result<Vec<super::messages::MessageRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM messages WHERE user_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
        super::messages::COLUMNS
    ))?;
    let rows = stmt.query_map(params![user_id, after_id, limit], super::messages::from_row)?;
    rows.collect()
}

/// A cached mail's sealed parts, as reindexing, summaries and AI search read them.
#[derive(Debug, Clone)]
pub struct EmailDoc {
    pub id: String,
    pub account_id: String,
    pub thread_id: String,
    /// Milliseconds.
    pub date: i64,
    pub header_enc: Vec<u8>,
    pub snippet_enc: Vec<u8>,
    pub body_enc: Vec<u8>,
}

const EMAIL_DOC: &str = "SELECT m.id, m.account_id, m.thread_id, m.date, m.header_enc, \
     m.snippet_enc, m.body_enc FROM email_messages m";

fn email_doc(r: &rusqlite::Row<'_>) -> rusqlite::Result<EmailDoc> {
    Ok(EmailDoc {
        id: r.get(0)?,
        account_id: r.get(1)?,
        thread_id: r.get(2)?,
        date: r.get(3)?,
        header_enc: r.get(4)?,
        snippet_enc: r.get(5)?,
        body_enc: r.get(6)?,
    })
}

/// The user's cached mails in id order after `after_id` (reindex batches).
pub fn emails_after(
    conn: &Connection,
    user_id: &str,
    after_id: &str,
    limit: i64,
) -> rusqlite::Result<Vec<EmailDoc>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{EMAIL_DOC} JOIN email_accounts a ON a.id = m.account_id \
         WHERE a.user_id = ?1 AND m.id > ?2 ORDER BY m.id LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![user_id, after_id, limit], email_doc)?;
    rows.collect()
}

/// The newest `limit` mails of a thread dated after `since` (ms), newest first.
pub fn thread_emails(
    conn: &Connection,
    thread_id: &str,
    since: Option<i64>,
    limit: i64,
) -> rusqlite::Result<Vec<EmailDoc>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{EMAIL_DOC} WHERE m.thread_id = ?1 AND m.date > ?2 ORDER BY m.date DESC, m.id DESC \
         LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![thread_id, since.unwrap_or(i64::MIN), limit],
        email_doc,
    )?;
    rows.collect()
}

/// One cached mail of the user (through its account).
pub fn email_by_id(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<EmailDoc>> {
    conn.prepare_cached(&format!(
        "{EMAIL_DOC} JOIN email_accounts a ON a.id = m.account_id \
         WHERE m.id = ?1 AND a.user_id = ?2"
    ))?
    .query_row([id, user_id], email_doc)
    .optional()
}

/// The user's newest `limit` indexed items (messages and mails, by time), each with its
/// sealed vector of `model` if it has one: the window AI search compares by meaning.
/// Without `read_vectors` a present vector is an empty blob (not read from disk).
pub fn newest_with_vectors(
    conn: &Connection,
    user_id: &str,
    model: &str,
    limit: i64,
    read_vectors: bool,
) -> rusqlite::Result<Vec<(Candidate, Option<Vec<u8>>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.id, d.kind, d.item_id, d.scope, d.sender, d.ts, \
           CASE WHEN v.item_id IS NULL THEN NULL WHEN ?4 THEN v.vector_enc ELSE x'' END \
         FROM search_docs d LEFT JOIN search_vectors v ON v.kind = d.kind \
           AND v.item_id = d.item_id AND v.model = ?2 \
         WHERE d.user_id = ?1 ORDER BY d.ts DESC, d.id DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![user_id, model, limit, read_vectors], |r| {
        Ok((candidate(r)?, r.get(6)?))
    })?;
    rows.collect()
}

/// Deletes the user's vectors whose item left the index (a deleted mail, whose index
/// entry goes by trigger; a redacted message): nothing derived from gone text stays.
pub fn drop_orphan_vectors(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM search_vectors WHERE user_id = ?1 AND NOT EXISTS (SELECT 1 FROM \
         search_docs d WHERE d.kind = search_vectors.kind AND d.item_id = search_vectors.item_id)",
    )?
    .execute([user_id])
}
