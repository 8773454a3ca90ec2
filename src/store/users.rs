//! `users` table. Rows carry sealed columns as opaque bytes; sealing and opening happen in
//! the services, which own the keys.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

#[derive(Debug, Clone)]
pub struct UserRow {
    pub id: String,
    pub email_index: Vec<u8>,
    pub email_enc: Vec<u8>,
    pub dek_wrapped: Vec<u8>,
    pub display_name: Option<String>,
    pub username: Option<String>,
    pub avatar_url: Option<String>,
    pub is_admin: bool,
    pub onboarding_completed: bool,
    pub subscription_active: bool,
    pub subscription_until: Option<i64>,
    pub matrix_user_id: Option<String>,
    pub matrix_device_id: Option<String>,
    pub matrix_access_token_enc: Option<Vec<u8>>,
    pub primary_user_id: Option<String>,
    pub keys_shredded: bool,
    pub last_key_deletion_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl UserRow {
    /// Whether personal tokens of this user may be used at `now` (Unix seconds).
    pub fn subscription_is_active(&self, now: i64) -> bool {
        subscription_is_active(self.subscription_active, self.subscription_until, now)
    }

    /// The id of the account group this user belongs to (its primary account).
    pub fn group_id(&self) -> &str {
        self.primary_user_id.as_deref().unwrap_or(&self.id)
    }
}

/// Whether a subscription with these stored values is active at `now` (Unix seconds).
pub fn subscription_is_active(active: bool, until: Option<i64>, now: i64) -> bool {
    active && until.is_none_or(|until| until > now)
}

const COLUMNS: &str =
    "id, email_index, email_enc, dek_wrapped, display_name, username, avatar_url, \
    is_admin, onboarding_completed, subscription_active, subscription_until, matrix_user_id, \
    matrix_device_id, matrix_access_token_enc, primary_user_id, keys_shredded, \
    last_key_deletion_at, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<UserRow> {
    Ok(UserRow {
        id: r.get(0)?,
        email_index: r.get(1)?,
        email_enc: r.get(2)?,
        dek_wrapped: r.get(3)?,
        display_name: r.get(4)?,
        username: r.get(5)?,
        avatar_url: r.get(6)?,
        is_admin: r.get(7)?,
        onboarding_completed: r.get(8)?,
        subscription_active: r.get(9)?,
        subscription_until: r.get(10)?,
        matrix_user_id: r.get(11)?,
        matrix_device_id: r.get(12)?,
        matrix_access_token_enc: r.get(13)?,
        primary_user_id: r.get(14)?,
        keys_shredded: r.get(15)?,
        last_key_deletion_at: r.get(16)?,
        created_at: r.get(17)?,
        updated_at: r.get(18)?,
    })
}

/// Every column of `UserRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike.
fn bind(u: &UserRow) -> [&dyn ToSql; 19] {
    [
        &u.id,
        &u.email_index,
        &u.email_enc,
        &u.dek_wrapped,
        &u.display_name,
        &u.username,
        &u.avatar_url,
        &u.is_admin,
        &u.onboarding_completed,
        &u.subscription_active,
        &u.subscription_until,
        &u.matrix_user_id,
        &u.matrix_device_id,
        &u.matrix_access_token_enc,
        &u.primary_user_id,
        &u.keys_shredded,
        &u.last_key_deletion_at,
        &u.created_at,
        &u.updated_at,
    ]
}

pub fn insert(conn: &Connection, u: &UserRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!("INSERT INTO users ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"),
        &bind(u)[..],
    )?;
    Ok(())
}

pub fn find(conn: &Connection, id: &str) -> rusqlite::Result<Option<UserRow>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM users WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

pub fn find_by_email_index(conn: &Connection, index: &[u8]) -> rusqlite::Result<Option<UserRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM users WHERE email_index = ?1"),
        [index],
        from_row,
    )
    .optional()
}

pub fn find_by_username(conn: &Connection, username: &str) -> rusqlite::Result<Option<UserRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM users WHERE username = ?1"),
        [username],
        from_row,
    )
    .optional()
}

pub fn list(conn: &Connection, limit: i64, offset: i64) -> rusqlite::Result<Vec<UserRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM users ORDER BY created_at, id LIMIT ?1 OFFSET ?2"
    ))?;
    let rows = stmt.query_map([limit, offset], from_row)?;
    rows.collect()
}

pub fn count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))
}

/// Every user's id in id order (`switchboard reindex` without `--user`).
pub fn all_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM users ORDER BY id")?;
    let ids = stmt.query_map([], |r| r.get(0))?;
    ids.collect()
}

/// Every account of a group: the primary first, then added accounts by age.
pub fn list_group(conn: &Connection, group_id: &str) -> rusqlite::Result<Vec<UserRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM users WHERE id = ?1 OR primary_user_id = ?1 \
         ORDER BY primary_user_id IS NOT NULL, created_at, id"
    ))?;
    let rows = stmt.query_map([group_id], from_row)?;
    rows.collect()
}

/// Writes back every mutable column of `u` (and bumps nothing by itself: callers set
/// `updated_at`).
pub fn update(conn: &Connection, u: &UserRow) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE users SET email_enc = ?3, dek_wrapped = ?4, display_name = ?5, username = ?6, \
         avatar_url = ?7, is_admin = ?8, onboarding_completed = ?9, subscription_active = ?10, \
         subscription_until = ?11, matrix_user_id = ?12, matrix_device_id = ?13, \
         matrix_access_token_enc = ?14, primary_user_id = ?15, keys_shredded = ?16, \
         last_key_deletion_at = ?17, updated_at = ?19 WHERE id = ?1",
        &bind(u)[..],
    )
}

/// Records the user's Matrix account, leaving every other column as it is (the account is
/// registered over the network, while other requests may change the row).
pub fn set_matrix_account(conn: &Connection, u: &UserRow) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE users SET matrix_user_id = ?2, matrix_device_id = ?3, \
         matrix_access_token_enc = ?4, updated_at = ?5 WHERE id = ?1",
        params![
            u.id,
            u.matrix_user_id,
            u.matrix_device_id,
            u.matrix_access_token_enc,
            u.updated_at,
        ],
    )
}

pub fn delete(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM users WHERE id = ?1", [id])
}
