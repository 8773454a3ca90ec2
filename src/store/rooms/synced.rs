//! The columns that follow Matrix and the scorer (state, counters, membership, invitations,
//! importance): written by the sync worker, the importance scorer and the acceptance of an
//! invitation, never the user's own settings of a room.

use super::*;

/// Writes the columns the sync worker owns (Matrix state, counters, importance), leaving
/// the user's own settings (client name, archive, mute, favorite, pin) untouched.
pub fn update_synced(conn: &Connection, r: &RoomRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET name_enc = ?3, avatar_enc = ?4, topic_enc = ?5, is_direct = ?9, \
         recipient_id = ?10, platform = ?11, member_count = ?12, unread_count = ?13, \
         highlight_count = ?14, last_read_event_id = ?15, last_message_ts = ?16, \
         importance = ?17, membership = ?23, updated_at = ?25, encrypted = ?26, invited_by = ?27, \
         recipient_name_enc = ?28 WHERE user_id = ?1 AND room_id = ?2",
    )?
    // The notification columns (29, 30) are the user's: not bound, not written.
    .execute(&bind(r)[..28])
}

/// Marks a room direct with `partner` as recipient (from the `m.direct` account data),
/// raising its importance to at least `min_importance`; returns whether anything changed.
pub fn mark_direct(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    partner: &str,
    min_importance: f64,
    now: i64,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE rooms SET is_direct = 1, recipient_id = ?3, importance = MAX(importance, ?4), \
             recipient_name_enc = CASE WHEN recipient_id IS ?3 THEN recipient_name_enc END, \
             updated_at = ?5 WHERE user_id = ?1 AND room_id = ?2 \
             AND (is_direct = 0 OR recipient_id IS NOT ?3)",
        )?
        .execute(params![user_id, room_id, partner, min_importance, now])?;
    Ok(n > 0)
}

/// The rooms a user is invited to, with who invited them (when known).
pub fn invites(
    conn: &Connection,
    user_id: &str,
) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT room_id, invited_by FROM rooms WHERE user_id = ?1 AND membership = 'invite' \
         ORDER BY room_id",
    )?;
    let rows = stmt.query_map([user_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Records that the user joined a room (an accepted invitation); returns whether a row
/// changed.
pub fn set_joined(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE rooms SET membership = 'join', invited_by = NULL, updated_at = ?3 \
             WHERE user_id = ?1 AND room_id = ?2",
        )?
        .execute(params![user_id, room_id, now])?;
    Ok(n > 0)
}

/// Sets a room's importance (recomputed after its messages were rescored); returns
/// whether it changed.
pub fn set_importance(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    importance: f64,
    now: i64,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE rooms SET importance = ?3, updated_at = ?4 \
             WHERE user_id = ?1 AND room_id = ?2 AND importance IS NOT ?3",
        )?
        .execute(params![user_id, room_id, importance, now])?;
    Ok(n > 0)
}

/// Every room (of every user) with unread messages, for re-aging their importance.
pub fn with_unread(conn: &Connection) -> rusqlite::Result<Vec<RoomRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM rooms WHERE unread_count > 0 AND membership = 'join'"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}
