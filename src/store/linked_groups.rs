//! `linked_groups` and `linked_group_rooms`: a user's groups of rooms that are the same
//! conversation on different platforms. A room is in at most one group of its user
//! (`UNIQUE (user_id, room_id)`).

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

#[derive(Debug, Clone, Default)]
pub struct GroupRow {
    pub id: String,
    pub user_id: String,
    /// Readable name, sealed under the user's data key, AAD ("linked_groups", "name", id).
    pub name_enc: Option<Vec<u8>>,
    /// Native clients' own encrypted name (base64, opaque).
    pub encrypted_name: Option<String>,
    pub nonce: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A member room of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRoom {
    pub room_id: String,
    pub added_at: i64,
}

const COLUMNS: &str = "id, user_id, name_enc, encrypted_name, nonce, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<GroupRow> {
    Ok(GroupRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        name_enc: r.get(2)?,
        encrypted_name: r.get(3)?,
        nonce: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

/// Every column of `GroupRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike.
fn bind(g: &GroupRow) -> [&dyn ToSql; 7] {
    [
        &g.id,
        &g.user_id,
        &g.name_enc,
        &g.encrypted_name,
        &g.nonce,
        &g.created_at,
        &g.updated_at,
    ]
}

pub fn insert(conn: &Connection, g: &GroupRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO linked_groups ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))?
    .execute(&bind(g)[..])?;
    Ok(())
}

/// The group `id` if it belongs to `user_id`.
pub fn find(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<GroupRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM linked_groups WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], from_row)
    .optional()
}

/// Every group of a user, oldest first.
pub fn list(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<GroupRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM linked_groups WHERE user_id = ?1 ORDER BY created_at, id"
    ))?;
    let rows = stmt.query_map([user_id], from_row)?;
    rows.collect()
}

/// Writes name, encrypted name, nonce and `updated_at`.
pub fn update(conn: &Connection, g: &GroupRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE linked_groups SET name_enc = ?3, encrypted_name = ?4, nonce = ?5, updated_at = ?7 \
         WHERE id = ?1 AND user_id = ?2",
    )?
    .execute(&bind(g)[..])
}

pub fn touch(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE linked_groups SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])
}

/// Deletes a group of the user (its room links go with it).
pub fn delete(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM linked_groups WHERE id = ?1 AND user_id = ?2")?
        .execute([id, user_id])
}

/// Member rooms of a group, in the order they were added.
pub fn rooms(conn: &Connection, group_id: &str) -> rusqlite::Result<Vec<GroupRoom>> {
    let mut stmt = conn.prepare_cached(
        "SELECT room_id, added_at FROM linked_group_rooms WHERE group_id = ?1 \
         ORDER BY added_at, rowid",
    )?;
    let rows = stmt.query_map([group_id], |r| {
        Ok(GroupRoom {
            room_id: r.get(0)?,
            added_at: r.get(1)?,
        })
    })?;
    rows.collect()
}

/// Adds a room to a group. Fails with a constraint violation when the room is already in
/// a group of the user.
pub fn add_room(
    conn: &Connection,
    group_id: &str,
    user_id: &str,
    room_id: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO linked_group_rooms (group_id, user_id, room_id, added_at) \
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![group_id, user_id, room_id, now])?;
    Ok(())
}

pub fn remove_room(conn: &Connection, group_id: &str, room_id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM linked_group_rooms WHERE group_id = ?1 AND room_id = ?2")?
        .execute([group_id, room_id])
}

/// The group a room of the user is in.
pub fn group_of_room(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT group_id FROM linked_group_rooms WHERE user_id = ?1 AND room_id = ?2",
    )?
    .query_row([user_id, room_id], |r| r.get(0))
    .optional()
}

pub fn room_count(conn: &Connection, group_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COUNT(*) FROM linked_group_rooms WHERE group_id = ?1")?
        .query_row([group_id], |r| r.get(0))
}
