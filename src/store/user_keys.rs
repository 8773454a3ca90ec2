//! `user_keys` table: each user's registered X25519 public key and recovery material, and
//! `user_key_versions`: the highest key version ever issued to each user (it outlives the
//! key record, so versions never repeat after `DELETE /api/keys`).

use rusqlite::{params, Connection, OptionalExtension, Row};

#[derive(Debug, Clone)]
pub struct UserKeyRow {
    pub user_id: String,
    pub public_key: String,
    pub encrypted_master_key_enc: Option<Vec<u8>>,
    pub salt: Option<String>,
    pub key_version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str =
    "user_id, public_key, encrypted_master_key_enc, salt, key_version, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<UserKeyRow> {
    Ok(UserKeyRow {
        user_id: r.get(0)?,
        public_key: r.get(1)?,
        encrypted_master_key_enc: r.get(2)?,
        salt: r.get(3)?,
        key_version: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

pub fn find(conn: &Connection, user_id: &str) -> rusqlite::Result<Option<UserKeyRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM user_keys WHERE user_id = ?1"),
        [user_id],
        from_row,
    )
    .optional()
}

/// The key record of the user whose id, or whose Matrix user id, is `who`.
pub fn find_by_user_or_matrix_id(
    conn: &Connection,
    who: &str,
) -> rusqlite::Result<Option<UserKeyRow>> {
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("k.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    conn.query_row(
        &format!(
            "SELECT {columns} FROM user_keys k JOIN users u ON u.id = k.user_id \
             WHERE u.id = ?1 OR u.matrix_user_id = ?1 LIMIT 1"
        ),
        [who],
        from_row,
    )
    .optional()
}

/// Inserts or replaces the key record of `k.user_id` (keeping the original `created_at`),
/// and raises the user's highest issued version to `k.key_version`. Call it inside a
/// transaction so both writes land together.
pub fn upsert(conn: &Connection, k: &UserKeyRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO user_keys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT(user_id) DO UPDATE SET public_key = excluded.public_key, \
             encrypted_master_key_enc = excluded.encrypted_master_key_enc, salt = excluded.salt, \
             key_version = excluded.key_version, updated_at = excluded.updated_at"
        ),
        params![
            k.user_id,
            k.public_key,
            k.encrypted_master_key_enc,
            k.salt,
            k.key_version,
            k.created_at,
            k.updated_at
        ],
    )?;
    conn.execute(
        "INSERT INTO user_key_versions (user_id, last_version) VALUES (?1, ?2) \
         ON CONFLICT(user_id) DO UPDATE SET last_version = max(last_version, excluded.last_version)",
        params![k.user_id, k.key_version],
    )?;
    Ok(())
}

/// The highest key version ever issued to the user (0 when none), including versions of
/// deleted key records.
pub fn last_version(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    let recorded: Option<i64> = conn
        .query_row(
            "SELECT last_version FROM user_key_versions WHERE user_id = ?1",
            [user_id],
            |r| r.get(0),
        )
        .optional()?;
    let current: Option<i64> = conn
        .query_row(
            "SELECT key_version FROM user_keys WHERE user_id = ?1",
            [user_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(recorded.unwrap_or(0).max(current.unwrap_or(0)))
}

/// Deletes the key record; the version counter stays.
pub fn delete(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM user_keys WHERE user_id = ?1", [user_id])
}
