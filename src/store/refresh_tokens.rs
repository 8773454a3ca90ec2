//! `refresh_tokens` table: SHA-256 of each refresh token, with expiry and revocation.

use rusqlite::{params, Connection, OptionalExtension};

/// Live refresh tokens kept per user: each sign-in and each account switch issues one, so
/// without a bound a client switching in a loop grows the table without end. Inserting
/// the 101st drops the oldest (its session must sign in again).
pub const MAX_LIVE_PER_USER: i64 = 100;

/// Stores a new refresh token and, in the same statement sequence, deletes the user's rows
/// beyond the [`MAX_LIVE_PER_USER`] newest live ones (revoked and expired rows go too).
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
    conn.execute(
        "DELETE FROM refresh_tokens WHERE user_id = ?1 AND rowid NOT IN ( \
             SELECT rowid FROM refresh_tokens WHERE user_id = ?1 AND revoked_at IS NULL \
             AND expires_at > ?2 ORDER BY created_at DESC, rowid DESC LIMIT ?3)",
        params![user_id, now, MAX_LIVE_PER_USER],
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

/// Housekeeping: deletes expired and revoked tokens (neither can ever be used again).
pub fn purge_dead(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM refresh_tokens WHERE expires_at <= ?1 OR revoked_at IS NOT NULL",
        [now],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StorageConfig;
    use crate::store::Store;

    #[test]
    fn a_user_keeps_at_most_the_newest_live_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&StorageConfig {
            data_dir: dir.path().to_path_buf(),
            ..StorageConfig::default()
        })
        .unwrap();
        let conn = store.conn().unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let now = 1_000;
        for i in 0..MAX_LIVE_PER_USER + 5 {
            insert(&conn, &format!("t{i}"), "u", now + 100, now).unwrap();
        }
        insert(&conn, "other", "v", now + 100, now).unwrap();
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
            valid_user(&conn, "t0", now).unwrap().is_none(),
            "oldest dropped"
        );
        let newest = format!("t{}", MAX_LIVE_PER_USER + 4);
        assert_eq!(
            valid_user(&conn, &newest, now).unwrap().as_deref(),
            Some("u")
        );
    }
}
