//! Cached messages, their locations (mailbox, UID) and threads.

use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};

#[derive(Debug, Clone, Default)]
pub struct MessageRow {
    pub id: String,
    pub account_id: String,
    pub thread_id: String,
    pub key_hash: String,
    pub date: i64,
    pub seen: bool,
    pub flagged: bool,
    pub size: i64,
    pub header_enc: Vec<u8>,
    pub snippet_enc: Vec<u8>,
    pub body_enc: Vec<u8>,
}

/// A message as lists show it: no body, plus the ids of the mailboxes holding it (their
/// names are sealed: the service opens them).
#[derive(Debug, Clone, Default)]
pub struct MessageMeta {
    pub id: String,
    pub account_id: String,
    pub thread_id: String,
    pub date: i64,
    pub seen: bool,
    pub flagged: bool,
    pub header_enc: Vec<u8>,
    pub snippet_enc: Vec<u8>,
    pub mailbox_ids: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadRow {
    pub id: String,
    pub account_id: String,
    pub last_message_at: i64,
}

/// The message of the account with this key (Message-ID hash): `(id, thread_id)`.
pub fn find_by_key(
    conn: &Connection,
    account_id: &str,
    key_hash: &str,
) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached(
        "SELECT id, thread_id FROM email_messages WHERE account_id = ?1 AND key_hash = ?2",
    )?
    .query_row([account_id, key_hash], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

pub fn insert(conn: &Connection, m: &MessageRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_messages (id, account_id, thread_id, key_hash, date, seen, flagged, \
           size, header_enc, snippet_enc, body_enc) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        m.id,
        m.account_id,
        m.thread_id,
        m.key_hash,
        m.date,
        m.seen,
        m.flagged,
        m.size,
        m.header_enc,
        m.snippet_enc,
        m.body_enc
    ])?;
    conn.prepare_cached(
        "UPDATE email_threads SET last_message_at = MAX(last_message_at, ?2) WHERE id = ?1",
    )?
    .execute(params![m.thread_id, m.date])?;
    Ok(())
}

pub fn add_location(
    conn: &Connection,
    mailbox_id: &str,
    uid: i64,
    message_id: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO email_locations (mailbox_id, uid, message_id) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![mailbox_id, uid, message_id])?;
    Ok(())
}

/// `(uid, message id, seen, flagged)` of every cached location in a mailbox.
pub fn locations(
    conn: &Connection,
    mailbox_id: &str,
) -> rusqlite::Result<Vec<(i64, String, bool, bool)>> {
    conn.prepare_cached(
        "SELECT l.uid, m.id, m.seen, m.flagged FROM email_locations l \
         JOIN email_messages m ON m.id = l.message_id WHERE l.mailbox_id = ?1",
    )?
    .query_map([mailbox_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?
    .collect()
}

pub fn remove_location(conn: &Connection, mailbox_id: &str, uid: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM email_locations WHERE mailbox_id = ?1 AND uid = ?2")?
        .execute(params![mailbox_id, uid])?;
    Ok(())
}

/// Returns the thread id when the flags changed.
pub fn set_flags(
    conn: &Connection,
    message_id: &str,
    seen: bool,
    flagged: bool,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "UPDATE email_messages SET seen = ?2, flagged = ?3 \
         WHERE id = ?1 AND (seen != ?2 OR flagged != ?3) RETURNING thread_id",
    )?
    .query_row(params![message_id, seen, flagged], |r| r.get(0))
    .optional()
}

/// Deletes the account's messages no mailbox holds any more, then threads left without
/// messages; refreshes `last_message_at` of the threads that lost some. Returns the
/// affected thread ids.
pub fn drop_orphans(conn: &Connection, account_id: &str) -> rusqlite::Result<Vec<String>> {
    let threads: Vec<String> = conn
        .prepare_cached(
            "DELETE FROM email_messages WHERE account_id = ?1 AND NOT EXISTS \
             (SELECT 1 FROM email_locations l WHERE l.message_id = email_messages.id) \
             RETURNING thread_id",
        )?
        .query_map([account_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for t in &threads {
        conn.prepare_cached(
            "UPDATE email_threads SET last_message_at = \
             (SELECT MAX(date) FROM email_messages WHERE thread_id = ?1) WHERE id = ?1 \
             AND EXISTS (SELECT 1 FROM email_messages WHERE thread_id = ?1)",
        )?
        .execute([t])?;
        conn.prepare_cached(
            "DELETE FROM email_threads WHERE id = ?1 AND NOT EXISTS \
             (SELECT 1 FROM email_messages WHERE thread_id = ?1)",
        )?
        .execute([t])?;
    }
    let mut threads = threads;
    threads.sort();
    threads.dedup();
    Ok(threads)
}

/// The thread one of `ref_hashes` belongs to, in this account.
pub fn thread_by_refs(
    conn: &Connection,
    account_id: &str,
    ref_hashes: &[String],
) -> rusqlite::Result<Option<String>> {
    for h in ref_hashes {
        let found = conn
            .prepare_cached(
                "SELECT thread_id FROM email_thread_refs WHERE account_id = ?1 AND ref_hash = ?2",
            )?
            .query_row([account_id, h], |r| r.get(0))
            .optional()?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

pub fn create_thread(
    conn: &Connection,
    id: &str,
    account_id: &str,
    user_id: &str,
    at: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_threads (id, account_id, user_id, last_message_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, account_id, user_id, at])?;
    Ok(())
}

/// Records that `ref_hashes` lead to `thread_id` (first come keeps a hash).
pub fn add_refs(
    conn: &Connection,
    account_id: &str,
    ref_hashes: &[String],
    thread_id: &str,
) -> rusqlite::Result<()> {
    for h in ref_hashes {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO email_thread_refs (account_id, ref_hash, thread_id) \
             VALUES (?1, ?2, ?3)",
        )?
        .execute(params![account_id, h, thread_id])?;
    }
    Ok(())
}

const LABEL_FILTER: &str = "EXISTS (SELECT 1 FROM email_messages m \
    JOIN email_locations l ON l.message_id = m.id \
    JOIN email_mailboxes b ON b.id = l.mailbox_id WHERE m.thread_id = t.id AND b.name_hash = ?2)";

/// A page of the user's threads, newest first, after the `(last_message_at, id)` cursor;
/// `label_hash`: only threads with a message in a mailbox whose name has this keyed hash.
pub fn thread_page(
    conn: &Connection,
    user_id: &str,
    label_hash: Option<&str>,
    after: Option<(i64, &str)>,
    limit: i64,
) -> rusqlite::Result<Vec<ThreadRow>> {
    let sql = format!(
        "SELECT t.id, t.account_id, t.last_message_at FROM email_threads t \
         WHERE t.user_id = ?1 AND (?2 IS NULL OR {LABEL_FILTER}) \
           AND (?3 IS NULL OR t.last_message_at < ?3 OR (t.last_message_at = ?3 AND t.id > ?4)) \
         ORDER BY t.last_message_at DESC, t.id LIMIT ?5"
    );
    conn.prepare_cached(&sql)?
        .query_map(
            params![
                user_id,
                label_hash,
                after.map(|a| a.0),
                after.map(|a| a.1),
                limit
            ],
            |r| {
                Ok(ThreadRow {
                    id: r.get(0)?,
                    account_id: r.get(1)?,
                    last_message_at: r.get(2)?,
                })
            },
        )?
        .collect()
}

pub fn find_thread(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<ThreadRow>> {
    conn.prepare_cached(
        "SELECT id, account_id, last_message_at FROM email_threads WHERE id = ?1 AND user_id = ?2",
    )?
    .query_row([id, user_id], |r| {
        Ok(ThreadRow {
            id: r.get(0)?,
            account_id: r.get(1)?,
            last_message_at: r.get(2)?,
        })
    })
    .optional()
}

fn meta(r: &Row<'_>) -> rusqlite::Result<MessageMeta> {
    let boxes: Option<String> = r.get(8)?;
    Ok(MessageMeta {
        id: r.get(0)?,
        account_id: r.get(1)?,
        thread_id: r.get(2)?,
        date: r.get(3)?,
        seen: r.get(4)?,
        flagged: r.get(5)?,
        header_enc: r.get(6)?,
        snippet_enc: r.get(7)?,
        mailbox_ids: boxes
            .map(|b| b.split('\u{1f}').map(str::to_owned).collect())
            .unwrap_or_default(),
    })
}

/// The messages of these threads, oldest first, with their mailbox ids.
pub fn messages_of_threads(
    conn: &Connection,
    thread_ids: &[String],
) -> rusqlite::Result<Vec<MessageMeta>> {
    if thread_ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; thread_ids.len()].join(",");
    let sql = format!(
        "SELECT m.id, m.account_id, m.thread_id, m.date, m.seen, m.flagged, m.header_enc, \
           m.snippet_enc, (SELECT group_concat(l.mailbox_id, char(31)) FROM email_locations l \
             WHERE l.message_id = m.id) \
         FROM email_messages m WHERE m.thread_id IN ({marks}) ORDER BY m.date, m.id"
    );
    conn.prepare(&sql)?
        .query_map(params_from_iter(thread_ids), meta)?
        .collect()
}

/// One message of the user (through its account), with its body.
pub fn find_message(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<(MessageMeta, Vec<u8>)>> {
    conn.prepare_cached(
        "SELECT m.id, m.account_id, m.thread_id, m.date, m.seen, m.flagged, m.header_enc, \
           m.snippet_enc, (SELECT group_concat(l.mailbox_id, char(31)) FROM email_locations l \
             WHERE l.message_id = m.id), m.body_enc \
         FROM email_messages m JOIN email_accounts a ON a.id = m.account_id \
         WHERE m.id = ?1 AND a.user_id = ?2",
    )?
    .query_row([id, user_id], |r| Ok((meta(r)?, r.get(9)?)))
    .optional()
}

/// `(message id, mailbox id, uid)` of every location of these messages.
pub fn locations_of(
    conn: &Connection,
    message_ids: &[String],
) -> rusqlite::Result<Vec<(String, String, i64)>> {
    if message_ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; message_ids.len()].join(",");
    conn.prepare(&format!(
        "SELECT l.message_id, l.mailbox_id, l.uid FROM email_locations l \
         WHERE l.message_id IN ({marks}) ORDER BY l.mailbox_id, l.uid"
    ))?
    .query_map(params_from_iter(message_ids), |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?
    .collect()
}

/// A label: the user's mailboxes of one name (one keyed hash) over every account, as
/// `(one of those mailboxes' id, special use, unread, total)`. The service opens the name
/// from that mailbox. A mailbox not sealed yet is a label of its own.
pub type LabelCount = (String, Option<String>, i64, i64);

pub fn label_counts(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<LabelCount>> {
    conn.prepare_cached(
        "SELECT MIN(b.id), MAX(b.special_use), \
           COUNT(DISTINCT CASE WHEN m.seen = 0 THEN m.id END), COUNT(DISTINCT m.id) \
         FROM email_mailboxes b JOIN email_accounts a ON a.id = b.account_id \
         LEFT JOIN email_locations l ON l.mailbox_id = b.id \
         LEFT JOIN email_messages m ON m.id = l.message_id \
         WHERE a.user_id = ?1 GROUP BY COALESCE(b.name_hash, b.id)",
    )?
    .query_map([user_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?
    .collect()
}

/// Messages cached for the account.
pub fn count_of_account(conn: &Connection, account_id: &str) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT COUNT(*) FROM email_messages WHERE account_id = ?1")?
        .query_row([account_id], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
}

/// Bytes of mail cached for the user over every account (the quota's measure).
pub fn bytes_of_user(conn: &Connection, user_id: &str) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(m.size), 0) FROM email_messages m \
         JOIN email_accounts a ON a.id = m.account_id WHERE a.user_id = ?1",
    )?
    .query_row([user_id], |r| r.get::<_, i64>(0))
    .map(|n| n.max(0) as u64)
}

/// The sealed header and body of a cached message.
pub fn sealed_docs(conn: &Connection, id: &str) -> rusqlite::Result<Option<(Vec<u8>, Vec<u8>)>> {
    conn.prepare_cached("SELECT header_enc, body_enc FROM email_messages WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}
