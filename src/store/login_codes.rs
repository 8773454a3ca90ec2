//! `login_codes` table: e-mailed 6-digit codes, stored as argon2 hashes.

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone)]
pub struct LoginCodeRow {
    pub id: i64,
    pub code_hash: String,
    pub attempts: i64,
    pub expires_at: i64,
    pub requested_by: Option<String>,
}

pub fn insert(
    conn: &Connection,
    email_index: &[u8],
    purpose: &str,
    requested_by: Option<&str>,
    code_hash: &str,
    expires_at: i64,
    now: i64,
) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO login_codes (email_index, purpose, requested_by, code_hash, expires_at, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![email_index, purpose, requested_by, code_hash, expires_at, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Creation times of the codes sent to this address since `since`, oldest first.
pub fn sent_since(conn: &Connection, email_index: &[u8], since: i64) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare(
        "SELECT created_at FROM login_codes WHERE email_index = ?1 AND created_at > ?2 ORDER BY created_at",
    )?;
    let rows = stmt.query_map(params![email_index, since], |r| r.get(0))?;
    rows.collect()
}

/// The newest code for this address and purpose, if it can still be used. Only the
/// newest code ever counts: requesting a new code kills every older one, used or not.
pub fn newest_usable(
    conn: &Connection,
    email_index: &[u8],
    purpose: &str,
    now: i64,
) -> rusqlite::Result<Option<LoginCodeRow>> {
    conn.query_row(
        "SELECT id, code_hash, attempts, expires_at, requested_by, consumed_at FROM login_codes \
         WHERE email_index = ?1 AND purpose = ?2 \
         ORDER BY created_at DESC, id DESC LIMIT 1",
        params![email_index, purpose],
        |r| {
            let consumed: Option<i64> = r.get(5)?;
            Ok((
                LoginCodeRow {
                    id: r.get(0)?,
                    code_hash: r.get(1)?,
                    attempts: r.get(2)?,
                    expires_at: r.get(3)?,
                    requested_by: r.get(4)?,
                },
                consumed,
            ))
        },
    )
    .optional()
    .map(|row| {
        row.filter(|(c, consumed)| consumed.is_none() && c.expires_at > now)
            .map(|(c, _)| c)
    })
}

/// Takes one of the code's `max_attempts` tries, atomically: concurrent checks of one code
/// cannot together use more. `None` when none is left (or the code was consumed).
pub fn take_attempt(
    conn: &Connection,
    id: i64,
    max_attempts: i64,
) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "UPDATE login_codes SET attempts = attempts + 1 \
         WHERE id = ?1 AND attempts < ?2 AND consumed_at IS NULL RETURNING attempts",
        params![id, max_attempts],
        |r| r.get(0),
    )
    .optional()
}

/// Wrong codes entered for this address since `since`: (count, oldest time).
pub fn failures_since(
    conn: &Connection,
    email_index: &[u8],
    since: i64,
) -> rusqlite::Result<(i64, Option<i64>)> {
    conn.query_row(
        "SELECT COUNT(*), MIN(failed_at) FROM code_failures WHERE email_index = ?1 AND failed_at > ?2",
        params![email_index, since],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Counts a check as failed until [`forget_failure`] says it was right.
pub fn record_failure(conn: &Connection, email_index: &[u8], now: i64) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO code_failures (email_index, failed_at) VALUES (?1, ?2)",
        params![email_index, now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn forget_failure(conn: &Connection, failure_id: i64) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM code_failures WHERE id = ?1", [failure_id])
}

/// Marks the code used; false when another request consumed it first.
pub fn consume(conn: &Connection, id: i64, now: i64) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "UPDATE login_codes SET consumed_at = ?2 WHERE id = ?1 AND consumed_at IS NULL",
        params![id, now],
    )?;
    Ok(n == 1)
}

/// Gives a consumed code back (the sign-in failed after it was checked, e.g. the
/// homeserver was down), so the user can retry with the same code.
pub fn release(conn: &Connection, id: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE login_codes SET consumed_at = NULL WHERE id = ?1",
        [id],
    )
}

pub fn delete(conn: &Connection, id: i64) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM login_codes WHERE id = ?1", [id])
}

/// Housekeeping: forget codes and wrong-code records older than `before`.
pub fn purge_before(conn: &Connection, before: i64) -> rusqlite::Result<usize> {
    let codes = conn.execute("DELETE FROM login_codes WHERE created_at < ?1", [before])?;
    let failures = conn.execute("DELETE FROM code_failures WHERE failed_at < ?1", [before])?;
    Ok(codes + failures)
}
