//! `refresh_tokens` table: SHA-256 of each refresh token, with expiry and revocation.

use rusqlite::{params, Connection, OptionalExtension};

pub fn insert(
    conn: &Connection,
    hash: &str,
    user_id: &str,
    expires_at: i64,
    now: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO refresh_tokens (token_hash, user_id, expires_at, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![hash, user_id, expires_at, now],
    )?;
    Ok(())
}

/// The user of a refresh token that is neither expired nor revoked.
pub fn valid_user(conn: &Connection, hash: &str, now: i64) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT user_id FROM refresh_tokens WHERE token_hash = ?1 AND revoked_at IS NULL AND expires_at > ?2",
        params![hash, now],
        |r| r.get(0),
    )
    .optional()
}

pub fn revoke_all(conn: &Connection, user_id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE refresh_tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
        params![user_id, now],
    )
}

pub fn purge_expired(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM refresh_tokens WHERE expires_at <= ?1", [now])
}
