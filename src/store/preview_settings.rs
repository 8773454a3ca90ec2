//! `preview_settings` (migration 0026): whether the user wants link previews. No row is
//! the default, on.

use rusqlite::{params, Connection, OptionalExtension};

/// Whether link previews are on for the user (true when never set).
pub fn enabled(conn: &Connection, user_id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT enabled FROM preview_settings WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
        .optional()?
        .unwrap_or(true))
}

pub fn set_enabled(conn: &Connection, user_id: &str, on: bool, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO preview_settings (user_id, enabled, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (user_id) DO UPDATE SET enabled = ?2, updated_at = ?3",
    )?
    .execute(params![user_id, on, now])?;
    Ok(())
}
