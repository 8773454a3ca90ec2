//! `matrix_logouts` table: app Matrix devices still to be logged out on the homeserver.
//!
//! A session's device moves here in the same transaction that ends the session (logout,
//! account removal, key deletion, expiry), so a crash or a homeserver outage cannot lose
//! it; the row goes once the homeserver confirmed the logout.

use rusqlite::{params, Connection};

/// Moves the devices of `user_id`'s sessions (every session, ended or not) to the queue
/// and clears them from the sessions. Returns how many were queued.
pub fn queue_user_devices(conn: &Connection, user_id: &str, now: i64) -> rusqlite::Result<usize> {
    let n = conn.execute(
        "INSERT OR IGNORE INTO matrix_logouts (user_id, device_id, next_attempt_at, created_at) \
         SELECT user_id, matrix_device_id, ?2, ?2 FROM refresh_tokens \
         WHERE user_id = ?1 AND matrix_device_id IS NOT NULL",
        params![user_id, now],
    )?;
    conn.execute(
        "UPDATE refresh_tokens SET matrix_device_id = NULL, matrix_access_token_enc = NULL \
         WHERE user_id = ?1 AND (matrix_device_id IS NOT NULL OR matrix_access_token_enc IS NOT NULL)",
        [user_id],
    )?;
    Ok(n)
}

/// Moves the devices of every ended session (expired or revoked) to the queue.
pub fn queue_ended_sessions(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    let ended = "(revoked_at IS NOT NULL OR expires_at <= ?1)";
    let n = conn.execute(
        &format!(
            "INSERT OR IGNORE INTO matrix_logouts (user_id, device_id, next_attempt_at, created_at) \
             SELECT user_id, matrix_device_id, ?1, ?1 FROM refresh_tokens \
             WHERE matrix_device_id IS NOT NULL AND {ended}"
        ),
        [now],
    )?;
    conn.execute(
        &format!(
            "UPDATE refresh_tokens SET matrix_device_id = NULL, matrix_access_token_enc = NULL \
             WHERE matrix_device_id IS NOT NULL AND {ended}"
        ),
        [now],
    )?;
    Ok(n)
}

/// Queues one device (one that never made it into a session).
pub fn queue(conn: &Connection, user_id: &str, device_id: &str, now: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO matrix_logouts (user_id, device_id, next_attempt_at, created_at) \
         VALUES (?1, ?2, ?3, ?3)",
        params![user_id, device_id, now],
    )?;
    Ok(())
}

/// A user's queued devices: all of them (`due_by` = `None`) or those due by then.
pub fn queued(
    conn: &Connection,
    user_id: &str,
    due_by: Option<i64>,
) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT device_id, attempts FROM matrix_logouts \
         WHERE user_id = ?1 AND (?2 IS NULL OR next_attempt_at <= ?2) ORDER BY device_id",
    )?;
    let rows = stmt.query_map(params![user_id, due_by], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Users with devices due by `now`.
pub fn users_due(conn: &Connection, now: i64, limit: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT DISTINCT user_id FROM matrix_logouts WHERE next_attempt_at <= ?1 LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![now, limit], |r| r.get(0))?;
    rows.collect()
}

/// The homeserver confirmed these logouts.
pub fn remove(conn: &Connection, user_id: &str, device_ids: &[String]) -> rusqlite::Result<()> {
    let mut stmt =
        conn.prepare("DELETE FROM matrix_logouts WHERE user_id = ?1 AND device_id = ?2")?;
    for d in device_ids {
        stmt.execute(params![user_id, d])?;
    }
    Ok(())
}

/// Records a failed attempt; the device is tried again at `next_attempt_at`.
pub fn record_failure(
    conn: &Connection,
    user_id: &str,
    device_ids: &[String],
    next_attempt_at: i64,
    error: &str,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(
        "UPDATE matrix_logouts SET attempts = attempts + 1, next_attempt_at = ?3, last_error = ?4 \
         WHERE user_id = ?1 AND device_id = ?2",
    )?;
    for d in device_ids {
        stmt.execute(params![user_id, d, next_attempt_at, error])?;
    }
    Ok(())
}
