//! `member_profiles`: each room member's display name and avatar as the user's sync last
//! saw them (sealed; the service layer opens them).

use rusqlite::{params, Connection, OptionalExtension};

/// The sealed profile of `member_id` in the room, if one was stored.
pub fn find(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    member_id: &str,
) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached(
        "SELECT profile_enc FROM member_profiles WHERE user_id = ?1 AND room_id = ?2 AND member_id = ?3",
    )?
    .query_row([user_id, room_id, member_id], |r| r.get(0))
    .optional()
}

/// Stores (or replaces) a member's sealed profile. The room row must exist.
pub fn upsert(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    member_id: &str,
    profile_enc: &[u8],
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO member_profiles (user_id, room_id, member_id, profile_enc) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (user_id, room_id, member_id) DO UPDATE SET profile_enc = excluded.profile_enc",
    )?
    .execute(params![user_id, room_id, member_id, profile_enc])?;
    Ok(())
}
