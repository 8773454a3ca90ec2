//! `rooms` and `room_members`: each user's view of its Matrix rooms.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

#[derive(Debug, Clone, Default)]
pub struct RoomRow {
    pub user_id: String,
    pub room_id: String,
    pub name_enc: Option<Vec<u8>>,
    pub avatar_enc: Option<Vec<u8>>,
    pub topic_enc: Option<Vec<u8>>,
    pub client_name: Option<String>,
    pub client_avatar: Option<String>,
    pub client_nonce: Option<String>,
    pub is_direct: bool,
    pub recipient_id: Option<String>,
    pub platform: Option<String>,
    pub member_count: i64,
    pub unread_count: i64,
    pub highlight_count: i64,
    pub last_read_event_id: Option<String>,
    pub last_message_ts: Option<i64>,
    pub importance: f64,
    pub archived: bool,
    pub archived_at: Option<i64>,
    pub muted: bool,
    pub favorite: bool,
    pub pinned: bool,
    pub membership: String,
    /// Who invited the user, while `membership` is `invite`.
    pub invited_by: Option<String>,
    /// End-to-end encrypted (`m.room.encryption` state seen).
    pub encrypted: bool,
    /// The direct partner's display name, sealed (`sealedMeta.recipientName`).
    pub recipient_name_enc: Option<Vec<u8>>,
    /// Notification level when not muted: `all` or `mentions` (empty reads as `all`);
    /// `muted` is the level `off`.
    pub notify_level: String,
    /// Nothing is pushed for the room before this time (Unix ms).
    pub snooze_until: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub const COLUMNS: &str = "user_id, room_id, name_enc, avatar_enc, topic_enc, client_name, \
    client_avatar, client_nonce, is_direct, recipient_id, platform, member_count, unread_count, \
    highlight_count, last_read_event_id, last_message_ts, importance, archived, archived_at, \
    muted, favorite, pinned, membership, created_at, updated_at, encrypted, invited_by, \
    recipient_name_enc, notify_level, snooze_until";

pub fn from_row(r: &Row<'_>) -> rusqlite::Result<RoomRow> {
    Ok(RoomRow {
        user_id: r.get(0)?,
        room_id: r.get(1)?,
        name_enc: r.get(2)?,
        avatar_enc: r.get(3)?,
        topic_enc: r.get(4)?,
        client_name: r.get(5)?,
        client_avatar: r.get(6)?,
        client_nonce: r.get(7)?,
        is_direct: r.get(8)?,
        recipient_id: r.get(9)?,
        platform: r.get(10)?,
        member_count: r.get(11)?,
        unread_count: r.get(12)?,
        highlight_count: r.get(13)?,
        last_read_event_id: r.get(14)?,
        last_message_ts: r.get(15)?,
        importance: r.get(16)?,
        archived: r.get(17)?,
        archived_at: r.get(18)?,
        muted: r.get(19)?,
        favorite: r.get(20)?,
        pinned: r.get(21)?,
        membership: r.get(22)?,
        created_at: r.get(23)?,
        updated_at: r.get(24)?,
        encrypted: r.get(25)?,
        invited_by: r.get(26)?,
        recipient_name_enc: r.get(27)?,
        notify_level: r.get(28)?,
        snooze_until: r.get(29)?,
    })
}

/// Every column of `RoomRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike (the UPDATE binds them all too, so it names the last one).
fn bind(r: &RoomRow) -> [&dyn ToSql; 30] {
    [
        &r.user_id,
        &r.room_id,
        &r.name_enc,
        &r.avatar_enc,
        &r.topic_enc,
        &r.client_name,
        &r.client_avatar,
        &r.client_nonce,
        &r.is_direct,
        &r.recipient_id,
        &r.platform,
        &r.member_count,
        &r.unread_count,
        &r.highlight_count,
        &r.last_read_event_id,
        &r.last_message_ts,
        &r.importance,
        &r.archived,
        &r.archived_at,
        &r.muted,
        &r.favorite,
        &r.pinned,
        &r.membership,
        &r.created_at,
        &r.updated_at,
        &r.encrypted,
        &r.invited_by,
        &r.recipient_name_enc,
        &r.notify_level,
        &r.snooze_until,
    ]
}

pub fn find(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<Option<RoomRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM rooms WHERE user_id = ?1 AND room_id = ?2"
    ))?
    .query_row([user_id, room_id], from_row)
    .optional()
}

/// Inserts or replaces the whole row.
pub fn upsert(conn: &Connection, r: &RoomRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO rooms ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
         ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)"
    ))?
    .execute(&bind(r)[..])?;
    Ok(())
}

/// Replaces the joined members of a room.
pub fn set_members(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    members: &[String],
) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM room_members WHERE user_id = ?1 AND room_id = ?2",
        [user_id, room_id],
    )?;
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO room_members (user_id, room_id, member_id) VALUES (?1, ?2, ?3)",
    )?;
    for m in members {
        insert.execute([user_id, room_id, m])?;
    }
    Ok(())
}

pub fn members(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT member_id FROM room_members WHERE user_id = ?1 AND room_id = ?2 ORDER BY member_id",
    )?;
    let rows = stmt.query_map([user_id, room_id], |r| r.get(0))?;
    rows.collect()
}

pub fn delete(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM rooms WHERE user_id = ?1 AND room_id = ?2",
        [user_id, room_id],
    )
}

mod direct;
mod lists;
mod synced;
pub use direct::*;
pub use lists::*;
pub use synced::*;

// ---- Flags and read state (services::rooms) ----

/// A per-user flag of a room that the user sets (never the sync worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomFlag {
    Archived,
    Muted,
    Favorite,
    Pinned,
}

/// Sets one flag (archiving also records `archived_at`, unarchiving clears it). Returns the
/// number of rows changed (0: no such room).
pub fn set_flag(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    flag: RoomFlag,
    value: bool,
    now: i64,
) -> rusqlite::Result<usize> {
    let sql = match flag {
        RoomFlag::Archived => {
            "UPDATE rooms SET archived = ?3, archived_at = CASE WHEN ?3 THEN ?4 ELSE NULL END, \
             updated_at = ?4 WHERE user_id = ?1 AND room_id = ?2"
        }
        RoomFlag::Muted => {
            "UPDATE rooms SET muted = ?3, updated_at = ?4 WHERE user_id = ?1 AND room_id = ?2"
        }
        RoomFlag::Favorite => {
            "UPDATE rooms SET favorite = ?3, updated_at = ?4 WHERE user_id = ?1 AND room_id = ?2"
        }
        RoomFlag::Pinned => {
            "UPDATE rooms SET pinned = ?3, updated_at = ?4 WHERE user_id = ?1 AND room_id = ?2"
        }
    };
    conn.prepare_cached(sql)?
        .execute(params![user_id, room_id, value, now])
}

/// Replaces the native clients' own encrypted name, avatar and nonce.
pub fn set_client_fields(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    name: Option<&str>,
    avatar: Option<&str>,
    nonce: Option<&str>,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET client_name = ?3, client_avatar = ?4, client_nonce = ?5, updated_at = ?6 \
         WHERE user_id = ?1 AND room_id = ?2",
    )?
    .execute(params![user_id, room_id, name, avatar, nonce, now])
}

/// Stores what the single-room read resolved: direct flag, recipient and member count.
pub fn set_direct_info(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    is_direct: bool,
    recipient_id: Option<&str>,
    member_count: i64,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET is_direct = ?3, recipient_id = ?4, member_count = ?5, updated_at = ?6 \
         WHERE user_id = ?1 AND room_id = ?2",
    )?
    .execute(params![
        user_id,
        room_id,
        is_direct,
        recipient_id,
        member_count,
        now
    ])
}

/// Marks a room read here: no unread messages or highlights; the read marker moves to
/// `event_id` when given.
pub fn mark_read(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    event_id: Option<&str>,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET unread_count = 0, highlight_count = 0, \
         last_read_event_id = COALESCE(?3, last_read_event_id), updated_at = ?4 \
         WHERE user_id = ?1 AND room_id = ?2",
    )?
    .execute(params![user_id, room_id, event_id, now])
}

/// Event id of the newest stored message of a room.
pub fn latest_event_id(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT event_id FROM messages WHERE user_id = ?1 AND room_id = ?2 \
         ORDER BY ts DESC, event_id DESC LIMIT 1",
    )?
    .query_row([user_id, room_id], |r| r.get(0))
    .optional()
}

/// Deletes every stored message of a room (this user's copies); returns how many.
pub fn delete_messages(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM messages WHERE user_id = ?1 AND room_id = ?2")?
        .execute([user_id, room_id])
}

/// Platforms of the given rooms of a user (`None` for plain Matrix rooms); rooms the user
/// does not have are absent from the map.
pub fn platforms_of(
    conn: &Connection,
    user_id: &str,
    room_ids: &[String],
) -> rusqlite::Result<std::collections::HashMap<String, Option<String>>> {
    let mut stmt =
        conn.prepare_cached("SELECT platform FROM rooms WHERE user_id = ?1 AND room_id = ?2")?;
    let mut out = std::collections::HashMap::new();
    for id in room_ids {
        if let Some(p) = stmt
            .query_row([user_id, id.as_str()], |r| r.get::<_, Option<String>>(0))
            .optional()?
        {
            out.insert(id.clone(), p);
        }
    }
    Ok(out)
}
