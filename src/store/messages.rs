//! `messages`: each user's copy of room messages, content sealed under its data key.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

mod scores;

pub use scores::{set_ai_score, stats, unread_after, unread_of_latest, MessageStats};

#[derive(Debug, Clone, Default)]
pub struct MessageRow {
    pub id: String,
    pub user_id: String,
    pub room_id: String,
    pub event_id: String,
    pub sender_id: String,
    pub ts: i64,
    pub msgtype: String,
    /// Sealed JSON `{"body": <text>, "content": <event content>}`, AAD
    /// ("messages", "content", id).
    pub content_enc: Vec<u8>,
    pub is_mine: bool,
    pub importance: f64,
    pub category: String,
    pub is_question: bool,
    pub edited: bool,
    pub redacted: bool,
    pub created_at: i64,
    /// Origin time (ms) of the last edit applied; `None` when never edited.
    pub edited_at: Option<i64>,
    /// The sender's profile when the message was stored, sealed JSON `{"name", "avatar"}`
    /// (AAD: "messages", "sender", id); `None` for messages stored before it was kept.
    pub sender_enc: Option<Vec<u8>>,
}

pub const COLUMNS: &str = "id, user_id, room_id, event_id, sender_id, ts, msgtype, content_enc, \
    is_mine, importance, category, is_question, edited, created_at, redacted, edited_at, sender_enc";

pub fn from_row(r: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        room_id: r.get(2)?,
        event_id: r.get(3)?,
        sender_id: r.get(4)?,
        ts: r.get(5)?,
        msgtype: r.get(6)?,
        content_enc: r.get(7)?,
        is_mine: r.get(8)?,
        importance: r.get(9)?,
        category: r.get(10)?,
        is_question: r.get(11)?,
        edited: r.get(12)?,
        created_at: r.get(13)?,
        redacted: r.get(14)?,
        edited_at: r.get(15)?,
        sender_enc: r.get(16)?,
    })
}

/// Every column of `MessageRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike (the UPDATE binds them up to `edited_at`, the last it names).
fn bind(m: &MessageRow) -> [&dyn ToSql; 17] {
    [
        &m.id,
        &m.user_id,
        &m.room_id,
        &m.event_id,
        &m.sender_id,
        &m.ts,
        &m.msgtype,
        &m.content_enc,
        &m.is_mine,
        &m.importance,
        &m.category,
        &m.is_question,
        &m.edited,
        &m.created_at,
        &m.redacted,
        &m.edited_at,
        &m.sender_enc,
    ]
}

/// Inserts a message unless this user already has its event; returns whether it was new.
pub fn insert_if_new(conn: &Connection, m: &MessageRow) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(&format!(
            "INSERT OR IGNORE INTO messages ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        ))?
        .execute(&bind(m)[..])?;
    Ok(n == 1)
}

pub fn find_by_event(
    conn: &Connection,
    user_id: &str,
    event_id: &str,
) -> rusqlite::Result<Option<MessageRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM messages WHERE user_id = ?1 AND event_id = ?2"
    ))?
    .query_row([user_id, event_id], from_row)
    .optional()
}

/// The user's messages stored as undecryptable (`msgtype`), optionally of one room,
/// oldest first, at most `limit`.
pub fn with_msgtype(
    conn: &Connection,
    user_id: &str,
    msgtype: &str,
    room_id: Option<&str>,
    limit: i64,
) -> rusqlite::Result<Vec<MessageRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM messages WHERE user_id = ?1 AND msgtype = ?2 \
         AND redacted = 0 AND (?3 IS NULL OR room_id = ?3) ORDER BY ts LIMIT ?4"
    ))?
    .query_map(params![user_id, msgtype, room_id, limit], from_row)?
    .collect()
}

/// Replaces the sealed content and flags of an existing message (edits, redactions).
pub fn update_content(conn: &Connection, m: &MessageRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE messages SET content_enc = ?8, msgtype = ?7, edited = ?13, redacted = ?15, edited_at = ?16, \
         importance = ?10, category = ?11, is_question = ?12 WHERE id = ?1",
    )?
    // Up to `edited_at`: the sender as it was when the message was stored never changes.
    .execute(&bind(m)[..16])
}

// ---- History pages, deletion and statistics (`/api/messages`) ----

/// Where a newest-first page starts: rows strictly after (`ts`, `event_id`) in the order
/// `ts DESC, event_id ASC`, which is the order of the `messages_room_ts` index, so a page
/// is one index range scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageStart {
    pub ts: i64,
    pub event_id: String,
}

impl PageStart {
    /// From the newest message on.
    pub fn newest() -> Self {
        Self {
            ts: i64::MAX,
            event_id: String::new(),
        }
    }

    /// Messages strictly older than `ts_ms` (event ids are never empty).
    pub fn before(ts_ms: i64) -> Self {
        Self {
            ts: ts_ms.saturating_sub(1),
            event_id: String::new(),
        }
    }

    /// Messages after the row (`ts`, `event_id`) of a previous page.
    pub fn after(ts: i64, event_id: &str) -> Self {
        Self {
            ts,
            event_id: event_id.to_owned(),
        }
    }
}

/// Columns a history page needs (`user_id`, `room_id`, `category`, `is_question` and
/// `created_at` are left out: known from the query, or not shown).
const PAGE_COLUMNS: &str =
    "id, event_id, sender_id, ts, msgtype, content_enc, is_mine, importance, \
    edited, redacted, edited_at, sender_enc";

/// Up to `limit` messages of one room from `start`, newest first, with the
/// [`PAGE_COLUMNS`] only (`user_id`, `room_id` and `category` are empty).
///
/// No SQL `LIMIT`: with a bound `LIMIT ?` SQLite marks the statement for re-preparation on
/// every new binding (it plans with the value), which costs more than the query; the scan
/// follows the index order, so stopping after `limit` rows reads exactly those rows.
pub fn room_page(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    start: &PageStart,
    limit: i64,
) -> rusqlite::Result<Vec<MessageRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PAGE_COLUMNS} FROM messages WHERE user_id = ?1 AND room_id = ?2 \
         AND ts <= ?3 AND (ts < ?3 OR event_id > ?4) ORDER BY ts DESC, event_id ASC"
    ))?;
    let rows = stmt.query_map(params![user_id, room_id, start.ts, start.event_id], |r| {
        Ok(MessageRow {
            id: r.get(0)?,
            event_id: r.get(1)?,
            sender_id: r.get(2)?,
            ts: r.get(3)?,
            msgtype: r.get(4)?,
            content_enc: r.get(5)?,
            is_mine: r.get(6)?,
            importance: r.get(7)?,
            edited: r.get(8)?,
            redacted: r.get(9)?,
            edited_at: r.get(10)?,
            sender_enc: r.get(11)?,
            ..MessageRow::default()
        })
    })?;
    rows.take(limit.max(0) as usize).collect()
}

/// The platform of one of the user's rooms: `None` when the user has no such room.
pub fn room_platform(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<Option<String>>> {
    conn.prepare_cached("SELECT platform FROM rooms WHERE user_id = ?1 AND room_id = ?2")?
        .query_row([user_id, room_id], |r| r.get(0))
        .optional()
}

/// Up to `limit` messages of every room the user has (a room row exists), newest first,
/// each with its room's platform.
pub fn user_page(
    conn: &Connection,
    user_id: &str,
    start: &PageStart,
    limit: i64,
) -> rusqlite::Result<Vec<(MessageRow, Option<String>)>> {
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("m.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {columns}, r.platform FROM messages m \
         JOIN rooms r ON r.user_id = m.user_id AND r.room_id = m.room_id \
         WHERE m.user_id = ?1 AND m.ts <= ?2 AND (m.ts < ?2 OR m.event_id > ?3) \
         ORDER BY m.ts DESC, m.event_id ASC LIMIT {}",
        limit.max(0)
    ))?;
    let rows = stmt.query_map(params![user_id, start.ts, start.event_id], |r| {
        Ok((from_row(r)?, r.get(17)?))
    })?;
    rows.collect()
}

/// The first room id of the user that is `>= from` (`> from` unless `inclusive`), in
/// room id order; walks a user's conversations one by one.
pub fn room_from(
    conn: &Connection,
    user_id: &str,
    from: &str,
    inclusive: bool,
) -> rusqlite::Result<Option<String>> {
    let op = if inclusive { ">=" } else { ">" };
    conn.prepare_cached(&format!(
        "SELECT room_id FROM rooms WHERE user_id = ?1 AND room_id {op} ?2 ORDER BY room_id LIMIT 1"
    ))?
    .query_row([user_id, from], |r| r.get(0))
    .optional()
}

/// Matrix IDs of every account of an account group (the primary `group_id` and the
/// accounts added to it): the user's linked identities, for message direction.
pub fn group_matrix_ids(conn: &Connection, group_id: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT matrix_user_id FROM users WHERE (id = ?1 OR primary_user_id = ?1) \
         AND matrix_user_id IS NOT NULL",
    )?;
    let rows = stmt.query_map([group_id], |r| r.get(0))?;
    rows.collect()
}

/// Deletes the user's messages, optionally only in `room_id` and only older than
/// `before_ms`; returns the room id of every deleted row.
pub fn delete_matching(
    conn: &Connection,
    user_id: &str,
    room_id: Option<&str>,
    before_ms: Option<i64>,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "DELETE FROM messages WHERE user_id = ?1 AND (?2 IS NULL OR room_id = ?2) \
         AND (?3 IS NULL OR ts < ?3) RETURNING room_id",
    )?;
    let rows = stmt.query_map(params![user_id, room_id, before_ms], |r| r.get(0))?;
    rows.collect()
}

/// Deletes one message of the user; returns its room id, `None` when it has no such message.
pub fn delete_one(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("DELETE FROM messages WHERE id = ?1 AND user_id = ?2 RETURNING room_id")?
        .query_row([id, user_id], |r| r.get(0))
        .optional()
}

/// `origin_server_ts` of a stored event of the user, if it is a stored message.
pub fn ts_of_event(
    conn: &Connection,
    user_id: &str,
    event_id: &str,
) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT ts FROM messages WHERE user_id = ?1 AND event_id = ?2")?
        .query_row([user_id, event_id], |r| r.get(0))
        .optional()
}
