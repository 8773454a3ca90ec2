//! `sync_state`: each user's position in the homeserver's `/sync` stream and the health of
//! its sync worker.

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncStateRow {
    pub user_id: String,
    /// `next_batch` of the last ingested `/sync` response; `None` before the first sync.
    pub since: Option<String>,
    /// Unix seconds of the last successful ingest.
    pub last_ok_at: Option<i64>,
    /// The last homeserver or ingest error, cleared by the next success.
    pub last_error: Option<String>,
    pub updated_at: i64,
}

pub fn find(conn: &Connection, user_id: &str) -> rusqlite::Result<Option<SyncStateRow>> {
    conn.query_row(
        "SELECT user_id, since, last_ok_at, last_error, updated_at FROM sync_state WHERE user_id = ?1",
        [user_id],
        |r| {
            Ok(SyncStateRow {
                user_id: r.get(0)?,
                since: r.get(1)?,
                last_ok_at: r.get(2)?,
                last_error: r.get(3)?,
                updated_at: r.get(4)?,
            })
        },
    )
    .optional()
}

/// Records a successful ingest up to `since` (call inside the ingest transaction).
pub fn save_since(conn: &Connection, user_id: &str, since: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO sync_state (user_id, since, last_ok_at, last_error, updated_at) \
         VALUES (?1, ?2, ?3, NULL, ?3) \
         ON CONFLICT (user_id) DO UPDATE SET since = excluded.since, \
         last_ok_at = excluded.last_ok_at, last_error = NULL, updated_at = excluded.updated_at",
    )?
    .execute(params![user_id, since, now])?;
    Ok(())
}

/// Records a failed sync attempt; the position is kept.
pub fn record_error(
    conn: &Connection,
    user_id: &str,
    error: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO sync_state (user_id, since, last_ok_at, last_error, updated_at) \
         VALUES (?1, NULL, NULL, ?2, ?3) \
         ON CONFLICT (user_id) DO UPDATE SET last_error = excluded.last_error, \
         updated_at = excluded.updated_at",
        params![user_id, error, now],
    )?;
    Ok(())
}

/// Ids of the users that have a Matrix account (and so need a sync worker).
pub fn syncable_user_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT id FROM users WHERE matrix_access_token_enc IS NOT NULL \
         AND matrix_user_id IS NOT NULL ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}
