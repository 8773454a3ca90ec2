//! `user_keys` table: each user's registered X25519 public key and recovery material.

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

const COLUMNS: &str = "user_id, public_key, encrypted_master_key_enc, salt, key_version, created_at, updated_at";

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
    conn.query_row(&format!("SELECT {COLUMNS} FROM user_keys WHERE user_id = ?1"), [user_id], from_row)
        .optional()
}

/// Inserts or replaces the key record of `k.user_id`.
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
    Ok(())
}

pub fn delete(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM user_keys WHERE user_id = ?1", [user_id])
}
