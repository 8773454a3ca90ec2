//! `bridge_logins`: the local record of each user's bridge logins.

use rusqlite::{params, Connection, Row};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BridgeLoginRow {
    pub user_id: String,
    pub platform: String,
    pub login_id: String,
    pub remote_name_enc: Option<Vec<u8>>,
    pub remote_profile_enc: Option<Vec<u8>>,
    pub state_event: String,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub state_ts: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "user_id, platform, login_id, remote_name_enc, remote_profile_enc, \
    state_event, error_code, error, state_ts, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<BridgeLoginRow> {
    Ok(BridgeLoginRow {
        user_id: r.get(0)?,
        platform: r.get(1)?,
        login_id: r.get(2)?,
        remote_name_enc: r.get(3)?,
        remote_profile_enc: r.get(4)?,
        state_event: r.get(5)?,
        error_code: r.get(6)?,
        error: r.get(7)?,
        state_ts: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

/// Every login of the user, by platform then login id.
pub fn list_for_user(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<BridgeLoginRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM bridge_logins WHERE user_id = ?1 ORDER BY platform, login_id"
    ))?;
    let rows = stmt.query_map(params![user_id], from_row)?;
    rows.collect()
}

/// The user's logins on one platform, by login id.
pub fn list(
    conn: &Connection,
    user_id: &str,
    platform: &str,
) -> rusqlite::Result<Vec<BridgeLoginRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM bridge_logins WHERE user_id = ?1 AND platform = ?2 ORDER BY login_id"
    ))?;
    let rows = stmt.query_map(params![user_id, platform], from_row)?;
    rows.collect()
}

/// Inserts or replaces a login (keeping its `created_at`).
pub fn upsert(conn: &Connection, r: &BridgeLoginRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO bridge_logins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
             ON CONFLICT (user_id, platform, login_id) DO UPDATE SET \
             remote_name_enc = excluded.remote_name_enc, remote_profile_enc = excluded.remote_profile_enc, \
             state_event = excluded.state_event, error_code = excluded.error_code, error = excluded.error, \
             state_ts = excluded.state_ts, updated_at = excluded.updated_at"
        ),
        params![
            r.user_id,
            r.platform,
            r.login_id,
            r.remote_name_enc,
            r.remote_profile_enc,
            r.state_event,
            r.error_code,
            r.error,
            r.state_ts,
            r.created_at,
            r.updated_at,
        ],
    )?;
    Ok(())
}

/// Removes one login; returns whether it existed.
pub fn delete(
    conn: &Connection,
    user_id: &str,
    platform: &str,
    login_id: &str,
) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "DELETE FROM bridge_logins WHERE user_id = ?1 AND platform = ?2 AND login_id = ?3",
        params![user_id, platform, login_id],
    )?;
    Ok(n > 0)
}

/// Removes every login of the user on the platform; returns how many there were.
pub fn delete_all(conn: &Connection, user_id: &str, platform: &str) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM bridge_logins WHERE user_id = ?1 AND platform = ?2",
        params![user_id, platform],
    )
}
