//! Housekeeping: every [`EVERY`] (and once at start) the scheduler deletes rows that can
//! never be used again, so these tables do not only grow:
//! - sign-in codes created more than [`CODE_RETENTION_SECS`] ago (24 h: the per-address
//!   limits on codes and wrong codes look back at most that far, so younger rows stay even
//!   when expired or used);
//! - refresh tokens that are expired or revoked;
//! - personal API tokens revoked or expired more than 30 days ago (until then they are
//!   listed with `revokedAt` / `expiresAt`).

use std::time::Duration;

use crate::clock::unix_now;
use crate::error::AppResult;
use crate::services::tokens::ENDED_RETENTION_SECS;
use crate::services::Context;
use crate::store::{api_tokens, login_codes, refresh_tokens};

/// How often the purge runs.
pub const EVERY: Duration = Duration::from_secs(60 * 60);
/// Sign-in code rows younger than this are kept.
pub const CODE_RETENTION_SECS: i64 = 24 * 60 * 60;

/// Rows deleted by one purge.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub login_codes: usize,
    pub refresh_tokens: usize,
    pub api_tokens: usize,
}

/// One purge in one transaction.
pub fn purge(conn: &mut rusqlite::Connection, now: i64) -> AppResult<Purged> {
    let tx = conn.transaction()?;
    let purged = Purged {
        login_codes: login_codes::purge_before(&tx, now - CODE_RETENTION_SECS)?,
        refresh_tokens: refresh_tokens::purge_dead(&tx, now)?,
        api_tokens: api_tokens::purge_ended_before(&tx, now - ENDED_RETENTION_SECS)?,
    };
    tx.commit()?;
    Ok(purged)
}

/// [`purge`] on the store; logs what it removed (operators and tests read that line).
pub async fn run(state: &Context) -> AppResult<Purged> {
    let now = unix_now() as i64;
    let purged = state.store.run(move |c| purge(c, now)).await?;
    tracing::info!(
        login_codes = purged.login_codes,
        refresh_tokens = purged.refresh_tokens,
        api_tokens = purged.api_tokens,
        "purged expired sign-in codes and tokens"
    );
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use rusqlite::Connection;

    const DAY: i64 = 86_400;

    /// A refresh token of user `u` named `hash`, made at `made`, expiring at `expires_at`.
    fn session(conn: &Connection, hash: &str, expires_at: i64, made: i64) {
        refresh_tokens::insert(
            conn,
            &refresh_tokens::NewSession {
                token_hash: hash,
                user_id: "u",
                session_id: hash,
                matrix_device_id: None,
                matrix_access_token_enc: None,
                web: false,
                expires_at,
                now: made,
            },
        )
        .unwrap();
    }

    /// Codes: an expired one from 25 h ago (goes) and one from 23 h ago (stays). Refresh
    /// tokens: live (stays), expired and revoked (go). Personal tokens: revoked 31 days ago
    /// (goes), revoked yesterday (stays: still listed).
    fn rows_of_every_age(conn: &Connection, now: i64) {
        for created in [now - 25 * 3600, now - 23 * 3600] {
            login_codes::insert(conn, b"a", "sign_in", None, "h", created + 600, created).unwrap();
        }
        session(conn, "live", now + DAY, now - 10);
        session(conn, "expired", now - 1, now - 2 * DAY);
        session(conn, "revoked", now + DAY, now - 5);
        conn.execute(
            "UPDATE refresh_tokens SET revoked_at = ?1 WHERE token_hash = 'revoked'",
            [now - 1],
        )
        .unwrap();
        for (id, revoked) in [("old", now - 31 * DAY), ("recent", now - DAY)] {
            conn.execute(
                "INSERT INTO api_tokens (id, user_id, name, token_hash, last_four, allowlist_version, \
                 created_at, revoked_at) VALUES (?1, 'u', 'n', ?1, 'abcd', 1, 0, ?2)",
                rusqlite::params![id, revoked],
            )
            .unwrap();
        }
    }

    fn left(conn: &Connection, sql: &str) -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    #[test]
    fn only_rows_that_can_never_be_used_again_are_purged() {
        let (_dir, store) = Store::open_temp();
        let mut conn = store.conn().unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let now = 2_000_000_000;
        rows_of_every_age(&conn, now);

        let purged = purge(&mut conn, now).unwrap();
        assert_eq!(
            purged,
            Purged {
                login_codes: 1,
                refresh_tokens: 2,
                api_tokens: 1
            }
        );
        assert_eq!(
            left(&conn, "SELECT token_hash FROM refresh_tokens"),
            ["live"]
        );
        assert_eq!(left(&conn, "SELECT id FROM api_tokens"), ["recent"]);
        assert_eq!(
            left(&conn, "SELECT CAST(created_at AS TEXT) FROM login_codes"),
            [(now - 23 * 3600).to_string()]
        );
    }
}
