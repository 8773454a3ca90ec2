//! `api_tokens` table: personal API tokens, stored as SHA-256 of the secret.

use rusqlite::{params, Connection, OptionalExtension, Row};

#[derive(Debug, Clone)]
pub struct ApiTokenRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub token_hash: String,
    pub last_four: String,
    pub allowlist_version: u32,
    /// Allowlist version of the token's last explicit opt-in (0: never). Routes marked
    /// explicit in the allowlist (search) need it, whatever the token's creation date.
    pub opted_in_version: u32,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    /// Opted in to MCP tools that act (send, compose, create, change, delete).
    pub mcp_actions: bool,
}

const COLUMNS: &str = "id, user_id, name, token_hash, last_four, allowlist_version, created_at, \
    last_used_at, expires_at, revoked_at, opted_in_version, mcp_actions";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ApiTokenRow> {
    Ok(ApiTokenRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        name: r.get(2)?,
        token_hash: r.get(3)?,
        last_four: r.get(4)?,
        allowlist_version: r.get(5)?,
        created_at: r.get(6)?,
        last_used_at: r.get(7)?,
        expires_at: r.get(8)?,
        revoked_at: r.get(9)?,
        opted_in_version: r.get(10)?,
        mcp_actions: r.get(11)?,
    })
}

pub fn insert(conn: &Connection, t: &ApiTokenRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO api_tokens ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
        ),
        params![
            t.id,
            t.user_id,
            t.name,
            t.token_hash,
            t.last_four,
            t.allowlist_version,
            t.created_at,
            t.last_used_at,
            t.expires_at,
            t.revoked_at,
            t.opted_in_version,
            t.mcp_actions
        ],
    )?;
    Ok(())
}

pub fn find_by_hash(conn: &Connection, hash: &str) -> rusqlite::Result<Option<ApiTokenRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM api_tokens WHERE token_hash = ?1"
    ))?
    .query_row([hash], from_row)
    .optional()
}

pub fn find_for_user(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<ApiTokenRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM api_tokens WHERE id = ?1 AND user_id = ?2"),
        [id, user_id],
        from_row,
    )
    .optional()
}

pub fn list_for_user(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<ApiTokenRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM api_tokens WHERE user_id = ?1 ORDER BY created_at DESC, id"
    ))?;
    let rows = stmt.query_map([user_id], from_row)?;
    rows.collect()
}

pub fn revoke(conn: &Connection, user_id: &str, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?3) WHERE id = ?1 AND user_id = ?2",
        params![id, user_id, now],
    )
}

/// An explicit opt-in: the token may use the allowlist of `version`, explicit routes
/// included.
pub fn set_allowlist_version(
    conn: &Connection,
    user_id: &str,
    id: &str,
    version: u32,
) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE api_tokens SET allowlist_version = ?3, opted_in_version = ?3 \
         WHERE id = ?1 AND user_id = ?2",
        params![id, user_id, version],
    )
}

/// Switches the token's MCP acting tools on or off.
pub fn set_mcp_actions(
    conn: &Connection,
    user_id: &str,
    id: &str,
    on: bool,
) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE api_tokens SET mcp_actions = ?3 WHERE id = ?1 AND user_id = ?2",
        params![id, user_id, on],
    )
}

/// Whether the token (by id) may use MCP tools that act; false when unknown.
pub fn mcp_actions_enabled(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT mcp_actions FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL")?
        .query_row([id], |r| r.get::<_, bool>(0))
        .optional()?
        .unwrap_or(false))
}

pub fn touch(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1",
        params![id, now],
    )
}

/// Tokens of the user that still work: not revoked and not expired at `now`.
pub fn count_live(conn: &Connection, user_id: &str, now: i64) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT COUNT(*) FROM api_tokens WHERE user_id = ?1 AND revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > ?2)",
        params![user_id, now],
        |r| r.get(0),
    )
}

/// Housekeeping: forgets tokens revoked or expired before `before` (they are listed, with
/// `revokedAt` / `expiresAt`, until then).
pub fn purge_ended_before(conn: &Connection, before: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM api_tokens WHERE revoked_at < ?1 OR expires_at < ?1",
        [before],
    )
}
