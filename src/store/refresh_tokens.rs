//! `refresh_tokens` table: one row per session (sign-in or account switch). SHA-256 of the
//! refresh token, expiry and revocation, the session id access tokens name, and the app's
//! Matrix device of the session (its token sealed).

use rusqlite::{params, Connection, OptionalExtension};

/// Live refresh tokens kept per user: each sign-in and each account switch issues one, so
/// without a bound a client switching in a loop grows the table without end. Inserting
/// the 101st drops the oldest (its session must sign in again; its Matrix device is queued
/// for logout on the homeserver).
pub const MAX_LIVE_PER_USER: i64 = 100;

/// A session about to be stored.
pub struct NewSession<'a> {
    pub token_hash: &'a str,
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub matrix_device_id: Option<&'a str>,
    pub matrix_access_token_enc: Option<&'a [u8]>,
    /// A web session: it never gets a Matrix device.
    pub web: bool,
    pub expires_at: i64,
    pub now: i64,
}

/// Stores a new session and, in the same statement sequence, drops the user's rows beyond
/// the [`MAX_LIVE_PER_USER`] newest live ones (revoked and expired rows go too), queueing
/// their Matrix devices for logout first.
pub fn insert(conn: &Connection, s: &NewSession<'_>) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO refresh_tokens (token_hash, user_id, session_id, matrix_device_id, \
         matrix_access_token_enc, expires_at, created_at, web) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            s.token_hash,
            s.user_id,
            s.session_id,
            s.matrix_device_id,
            s.matrix_access_token_enc,
            s.expires_at,
            s.now,
            s.web
        ],
    )?;
    let beyond_cap = "user_id = ?1 AND rowid NOT IN ( \
             SELECT rowid FROM refresh_tokens WHERE user_id = ?1 AND revoked_at IS NULL \
             AND expires_at > ?2 ORDER BY created_at DESC, rowid DESC LIMIT ?3)";
    conn.execute(
        &format!(
            "INSERT OR IGNORE INTO matrix_logouts (user_id, device_id, next_attempt_at, created_at) \
             SELECT user_id, matrix_device_id, ?2, ?2 FROM refresh_tokens \
             WHERE matrix_device_id IS NOT NULL AND {beyond_cap}"
        ),
        params![s.user_id, s.now, MAX_LIVE_PER_USER],
    )?;
    conn.execute(
        &format!("DELETE FROM refresh_tokens WHERE {beyond_cap}"),
        params![s.user_id, s.now, MAX_LIVE_PER_USER],
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
    /// A web session, which never gets a device.
    pub web: bool,
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
        "SELECT matrix_device_id, matrix_access_token_enc, web FROM refresh_tokens \
         WHERE session_id = ?1 AND user_id = ?2 AND revoked_at IS NULL AND expires_at > ?3",
        params![session_id, user_id, now],
        |r| {
            Ok(SessionDevice {
                device_id: r.get(0)?,
                access_token_enc: r.get(1)?,
                web: r.get(2)?,
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

/// Housekeeping: deletes expired and revoked tokens (neither can ever be used again),
/// after queueing the Matrix devices they still name for logout.
pub fn purge_dead(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    super::matrix_logouts::queue_ended_sessions(conn, now)?;
    conn.execute(
        "DELETE FROM refresh_tokens WHERE expires_at <= ?1 OR revoked_at IS NOT NULL",
        [now],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_user_keeps_at_most_the_newest_live_tokens() {
        let (_dir, store) = Store::open_temp();
        let conn = store.conn().unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let now = 1_000;
        let add = |hash: &str, user: &str, device: Option<&str>| {
            let session = format!("s-{hash}");
            insert(
                &conn,
                &NewSession {
                    token_hash: hash,
                    user_id: user,
                    session_id: &session,
                    matrix_device_id: device,
                    matrix_access_token_enc: None,
                    web: false,
                    expires_at: now + 100,
                    now,
                },
            )
            .unwrap();
        };
        add("t0", "u", Some("DEVICE0"));
        for i in 1..MAX_LIVE_PER_USER + 5 {
            add(&format!("t{i}"), "u", None);
        }
        add("other", "v", None);
        let count = |user: &str| -> i64 {
            conn.query_row(
                "SELECT COUNT(*) FROM refresh_tokens WHERE user_id = ?1",
                [user],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(count("u"), MAX_LIVE_PER_USER);
        assert_eq!(count("v"), 1, "other users are not touched");
        assert!(
            valid_session(&conn, "t0", now).unwrap().is_none(),
            "oldest dropped"
        );
        let queued: Vec<String> = crate::store::matrix_logouts::queued(&conn, "u", None)
            .unwrap()
            .into_iter()
            .map(|(device, _)| device)
            .collect();
        assert_eq!(
            queued,
            ["DEVICE0"],
            "the dropped session's device is logged out"
        );
        let newest = format!("t{}", MAX_LIVE_PER_USER + 4);
        assert_eq!(
            valid_session(&conn, &newest, now)
                .unwrap()
                .map(|(u, _)| u)
                .as_deref(),
            Some("u")
        );
    }
}
