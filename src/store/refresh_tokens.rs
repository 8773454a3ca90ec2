//! `refresh_tokens` table: one row per session (sign-in or account switch). SHA-256 of the
//! refresh token, expiry and revocation, the session id access tokens name, and the app's
//! Matrix device of the session (its token sealed).

use rusqlite::{params, Connection, OptionalExtension};

/// A session about to be stored.
pub struct NewSession<'a> {
    pub token_hash: &'a str,
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub matrix_device_id: Option<&'a str>,
    pub matrix_access_token_enc: Option<&'a [u8]>,
    pub expires_at: i64,
    pub now: i64,
}

pub fn insert(conn: &Connection, s: &NewSession<'_>) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO refresh_tokens (token_hash, user_id, session_id, matrix_device_id, \
         matrix_access_token_enc, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            s.token_hash,
            s.user_id,
            s.session_id,
            s.matrix_device_id,
            s.matrix_access_token_enc,
            s.expires_at,
            s.now
        ],
    )?;
    Ok(())
}

/// The user and session id of a refresh token that is neither expired nor revoked.
pub fn valid_session(
    conn: &Connection,
    hash: &str,
    now: i64,
) -> rusqlite::Result<Option<(String, Option<String>)>> {
    conn.query_row(
        "SELECT user_id, session_id FROM refresh_tokens \
         WHERE token_hash = ?1 AND revoked_at IS NULL AND expires_at > ?2",
        params![hash, now],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// The app's Matrix device of a live session of `user_id`.
#[derive(Debug, Clone)]
pub struct SessionDevice {
    pub device_id: Option<String>,
    pub access_token_enc: Option<Vec<u8>>,
}

/// The device of session `session_id` when it is `user_id`'s and neither expired nor
/// revoked; `None` otherwise.
pub fn live_session_device(
    conn: &Connection,
    user_id: &str,
    session_id: &str,
    now: i64,
) -> rusqlite::Result<Option<SessionDevice>> {
    conn.query_row(
        "SELECT matrix_device_id, matrix_access_token_enc FROM refresh_tokens \
         WHERE session_id = ?1 AND user_id = ?2 AND revoked_at IS NULL AND expires_at > ?3",
        params![session_id, user_id, now],
        |r| {
            Ok(SessionDevice {
                device_id: r.get(0)?,
                access_token_enc: r.get(1)?,
            })
        },
    )
    .optional()
}

/// Gives a live session that has no device this one. False when it has one meanwhile or
/// has ended (the caller then logs the new device out again).
pub fn set_device(
    conn: &Connection,
    session_id: &str,
    device_id: &str,
    access_token_enc: &[u8],
    now: i64,
) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "UPDATE refresh_tokens SET matrix_device_id = ?2, matrix_access_token_enc = ?3 \
         WHERE session_id = ?1 AND matrix_device_id IS NULL AND revoked_at IS NULL \
         AND expires_at > ?4",
        params![session_id, device_id, access_token_enc, now],
    )?;
    Ok(n == 1)
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
