//! The conversation tables of migration 0025: others' read receipts (`room_receipts`), the
//! user's per-room marks and drafts (`room_marks`) and the privacy settings
//! (`presence_settings`). Drafts arrive sealed from the caller.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

/// Another member's latest public read receipt in a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRow {
    pub reader_id: String,
    pub event_id: String,
    /// Unix milliseconds (the homeserver's).
    pub ts: i64,
}

/// Stores `r` as the reader's receipt unless a later one is stored; returns whether it
/// was stored (a receipt that moved).
pub fn upsert_receipt(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    r: &ReceiptRow,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT INTO room_receipts (user_id, room_id, reader_id, event_id, ts) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (user_id, room_id, reader_id) DO UPDATE SET event_id = ?4, ts = ?5 \
             WHERE room_receipts.event_id != ?4 AND room_receipts.ts <= ?5",
        )?
        .execute(params![user_id, room_id, r.reader_id, r.event_id, r.ts])?;
    Ok(n == 1)
}

/// Every stored receipt of a room, oldest first.
pub fn receipts(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Vec<ReceiptRow>> {
    conn.prepare_cached(
        "SELECT reader_id, event_id, ts FROM room_receipts WHERE user_id = ?1 AND room_id = ?2 \
         ORDER BY ts, reader_id",
    )?
    .query_map([user_id, room_id], |r| {
        Ok(ReceiptRow {
            reader_id: r.get(0)?,
            event_id: r.get(1)?,
            ts: r.get(2)?,
        })
    })?
    .collect()
}

/// What room objects show of a room's marks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    pub marked_unread: bool,
    pub has_draft: bool,
}

/// The marks of the user's rooms that have any (rooms absent have none).
pub fn marks(conn: &Connection, user_id: &str) -> rusqlite::Result<HashMap<String, Marks>> {
    conn.prepare_cached(
        "SELECT room_id, marked_unread, draft_enc IS NOT NULL FROM room_marks \
         WHERE user_id = ?1 AND (marked_unread = 1 OR draft_enc IS NOT NULL)",
    )?
    .query_map([user_id], |r| {
        Ok((
            r.get(0)?,
            Marks {
                marked_unread: r.get(1)?,
                has_draft: r.get(2)?,
            },
        ))
    })?
    .collect()
}

/// Sets or clears `marked_unread`; returns whether it changed.
pub fn set_marked_unread(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    value: bool,
) -> rusqlite::Result<bool> {
    if is_marked_unread(conn, user_id, room_id)? == value {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO room_marks (user_id, room_id, marked_unread) VALUES (?1, ?2, ?3) \
         ON CONFLICT (user_id, room_id) DO UPDATE SET marked_unread = ?3",
    )?
    .execute(params![user_id, room_id, value])?;
    Ok(true)
}

/// Whether the room is marked unread.
pub fn is_marked_unread(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT marked_unread FROM room_marks WHERE user_id = ?1 AND room_id = ?2")?
        .query_row([user_id, room_id], |r| r.get(0))
        .optional()?
        .unwrap_or(false))
}

/// A stored draft: sealed content and when it was saved (Unix ms).
#[derive(Debug, Clone)]
pub struct DraftRow {
    pub content_enc: Vec<u8>,
    pub updated_at: i64,
}

pub fn put_draft(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    content_enc: &[u8],
    updated_at: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO room_marks (user_id, room_id, draft_enc, draft_updated_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (user_id, room_id) \
         DO UPDATE SET draft_enc = ?3, draft_updated_at = ?4",
    )?
    .execute(params![user_id, room_id, content_enc, updated_at])?;
    Ok(())
}

pub fn draft(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<DraftRow>> {
    conn.prepare_cached(
        "SELECT draft_enc, draft_updated_at FROM room_marks \
         WHERE user_id = ?1 AND room_id = ?2 AND draft_enc IS NOT NULL",
    )?
    .query_row([user_id, room_id], |r| {
        Ok(DraftRow {
            content_enc: r.get(0)?,
            updated_at: r.get::<_, Option<i64>>(1)?.unwrap_or(0),
        })
    })
    .optional()
}

/// Deletes the room's draft; returns whether there was one.
pub fn delete_draft(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE room_marks SET draft_enc = NULL, draft_updated_at = NULL \
             WHERE user_id = ?1 AND room_id = ?2 AND draft_enc IS NOT NULL",
        )?
        .execute([user_id, room_id])?;
    Ok(n == 1)
}

/// Deletes every draft of the user (their data key is being destroyed).
pub fn delete_all_drafts(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE room_marks SET draft_enc = NULL, draft_updated_at = NULL WHERE user_id = ?1",
    )?
    .execute([user_id])
}

/// The privacy settings; defaults (public receipts, typing on) when never set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresenceSettings {
    pub private_receipts: bool,
    pub typing: bool,
}

impl Default for PresenceSettings {
    fn default() -> Self {
        Self {
            private_receipts: false,
            typing: true,
        }
    }
}

pub fn presence_settings(conn: &Connection, user_id: &str) -> rusqlite::Result<PresenceSettings> {
    Ok(conn
        .prepare_cached("SELECT read_receipts, typing FROM presence_settings WHERE user_id = ?1")?
        .query_row([user_id], |r| {
            Ok(PresenceSettings {
                private_receipts: r.get::<_, String>(0)? == "private",
                typing: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

pub fn set_presence_settings(
    conn: &Connection,
    user_id: &str,
    s: PresenceSettings,
    now: i64,
) -> rusqlite::Result<()> {
    let receipts = if s.private_receipts {
        "private"
    } else {
        "public"
    };
    conn.prepare_cached(
        "INSERT INTO presence_settings (user_id, read_receipts, typing, updated_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (user_id) \
         DO UPDATE SET read_receipts = ?2, typing = ?3, updated_at = ?4",
    )?
    .execute(params![user_id, receipts, s.typing, now])?;
    Ok(())
}

/// (room id, muted, notify level) of the user's rooms, for the levels the push rules
/// mirror.
pub fn push_levels(
    conn: &Connection,
    user_id: &str,
) -> rusqlite::Result<Vec<(String, bool, String)>> {
    conn.prepare_cached("SELECT room_id, muted, notify_level FROM rooms WHERE user_id = ?1")?
        .query_map([user_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// Sets the level a room goes back to when unmuted (`all` or `mentions`).
pub fn set_notify_level(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    level: &str,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET notify_level = ?3, updated_at = ?4 WHERE user_id = ?1 AND room_id = ?2",
    )?
    .execute(rusqlite::params![user_id, room_id, level, now])
}
