//! Importance over a user's messages: the stats aggregate, the unread importance of a room
//! (which orders the inbox) and the AI service's scores.

use rusqlite::{params, Connection};

/// Aggregates over all messages of a user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageStats {
    pub total_messages: i64,
    pub total_rooms: i64,
    pub avg_importance: f64,
    pub high_importance_count: i64,
    pub questions_count: i64,
    /// Distinct categories, sorted.
    pub categories: Vec<String>,
}

/// [`MessageStats`] of the user; "high importance" is `importance >= high_threshold`.
pub fn stats(
    conn: &Connection,
    user_id: &str,
    high_threshold: f64,
) -> rusqlite::Result<MessageStats> {
    let mut stats = conn
        .prepare_cached(
            "SELECT COUNT(*), COUNT(DISTINCT room_id), COALESCE(AVG(importance), 0.0), \
             COALESCE(SUM(importance >= ?2), 0), COALESCE(SUM(is_question <> 0), 0) \
             FROM messages WHERE user_id = ?1",
        )?
        .query_row(params![user_id, high_threshold], |r| {
            Ok(MessageStats {
                total_messages: r.get(0)?,
                total_rooms: r.get(1)?,
                avg_importance: r.get(2)?,
                high_importance_count: r.get(3)?,
                questions_count: r.get(4)?,
                categories: Vec::new(),
            })
        })?;
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT category FROM messages WHERE user_id = ?1 ORDER BY category",
    )?;
    let rows = stmt.query_map([user_id], |r| r.get(0))?;
    stats.categories = rows.collect::<rusqlite::Result<_>>()?;
    Ok(stats)
}

/// Highest importance and oldest timestamp (ms) among others' unredacted messages of a
/// room newer than `after_ts`; `None` when there are none.
pub fn unread_after(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    after_ts: i64,
) -> rusqlite::Result<Option<(f64, i64)>> {
    conn.prepare_cached(
        "SELECT MAX(importance), MIN(ts) FROM messages WHERE user_id = ?1 AND room_id = ?2 \
         AND ts > ?3 AND is_mine = 0 AND redacted = 0",
    )?
    .query_row(params![user_id, room_id, after_ts], max_and_oldest)
}

/// Highest importance and oldest timestamp (ms) among the `last` newest of others'
/// unredacted messages of a room; `None` when there are none.
pub fn unread_of_latest(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    last: i64,
) -> rusqlite::Result<Option<(f64, i64)>> {
    conn.prepare_cached(
        "SELECT MAX(importance), MIN(ts) FROM (SELECT importance, ts FROM messages \
         WHERE user_id = ?1 AND room_id = ?2 AND is_mine = 0 AND redacted = 0 \
         ORDER BY ts DESC LIMIT ?3)",
    )?
    .query_row(params![user_id, room_id, last], max_and_oldest)
}

fn max_and_oldest(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<(f64, i64)>> {
    let max: Option<f64> = r.get(0)?;
    let oldest: Option<i64> = r.get(1)?;
    Ok(max.zip(oldest))
}

// ---- AI scoring (`crate::clients::ai`) ----

/// Replaces a message's importance, category and question flag with the AI service's,
/// only while its sealed content is still `content_enc` and it is not redacted (an edit
/// or redaction meanwhile rescored it from the new content; that score stays). Returns
/// whether the row was updated.
pub fn set_ai_score(
    conn: &Connection,
    id: &str,
    content_enc: &[u8],
    importance: f64,
    category: &str,
    is_question: bool,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE messages SET importance = ?3, category = ?4, is_question = ?5 \
             WHERE id = ?1 AND content_enc = ?2 AND redacted = 0",
        )?
        .execute(params![id, content_enc, importance, category, is_question])?;
    Ok(n == 1)
}
