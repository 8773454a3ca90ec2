//! `reactions`: the `m.reaction` annotations on each user's stored messages (one row per
//! reaction event; a redacted reaction is deleted). The key is sealed by the caller.

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReactionRow {
    pub user_id: String,
    /// The `m.reaction` event.
    pub event_id: String,
    pub room_id: String,
    /// The message it annotates.
    pub target_event_id: String,
    pub sender_id: String,
    /// Sealed annotation key, AAD ("reactions", "key", "{user_id}/{event_id}").
    pub key_enc: Vec<u8>,
    /// Origin time, ms.
    pub ts: i64,
}

const COLUMNS: &str = "user_id, event_id, room_id, target_event_id, sender_id, key_enc, ts";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReactionRow> {
    Ok(ReactionRow {
        user_id: r.get(0)?,
        event_id: r.get(1)?,
        room_id: r.get(2)?,
        target_event_id: r.get(3)?,
        sender_id: r.get(4)?,
        key_enc: r.get(5)?,
        ts: r.get(6)?,
    })
}

/// Stores a reaction unless this user has its event already; returns whether it was new.
pub fn insert_if_new(conn: &Connection, r: &ReactionRow) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(&format!(
            "INSERT OR IGNORE INTO reactions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ))?
        .execute(params![
            r.user_id,
            r.event_id,
            r.room_id,
            r.target_event_id,
            r.sender_id,
            r.key_enc,
            r.ts
        ])?;
    Ok(n == 1)
}

/// Removes a reaction (its event was redacted); returns it when it was stored.
pub fn delete(
    conn: &Connection,
    user_id: &str,
    event_id: &str,
) -> rusqlite::Result<Option<ReactionRow>> {
    conn.prepare_cached(&format!(
        "DELETE FROM reactions WHERE user_id = ?1 AND event_id = ?2 RETURNING {COLUMNS}"
    ))?
    .query_row([user_id, event_id], from_row)
    .optional()
}

/// The reactions on one message, oldest first.
pub fn of_target(
    conn: &Connection,
    user_id: &str,
    target_event_id: &str,
) -> rusqlite::Result<Vec<ReactionRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM reactions WHERE user_id = ?1 AND target_event_id = ?2 \
         ORDER BY ts, event_id"
    ))?
    .query_map([user_id, target_event_id], from_row)?
    .collect()
}
