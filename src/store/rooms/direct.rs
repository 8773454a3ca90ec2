//! Direct chats by partner (services::contacts): who the user already talks to, and in
//! which room.

use super::*;

/// The user's joined direct rooms with a known recipient, newest first.
pub fn joined_direct(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<RoomRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM rooms WHERE user_id = ?1 AND is_direct = 1 \
         AND membership = 'join' AND recipient_id IS NOT NULL \
         ORDER BY COALESCE(last_message_ts, created_at * 1000) DESC, room_id"
    ))?
    .query_map([user_id], from_row)?
    .collect()
}
