//! `devices` table: APNs device tokens (sealed, found by blind index) and their metadata.
//! Times are Unix milliseconds.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceRow {
    /// The `tokenId` (UUID).
    pub id: String,
    pub user_id: String,
    pub token_index: Vec<u8>,
    pub token_enc: Vec<u8>,
    pub device_name: Option<String>,
    pub device_model: Option<String>,
    pub os_version: Option<String>,
    pub app_version: Option<String>,
    /// `production` or `development`.
    pub environment: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_used_at: Option<i64>,
}

const COLUMNS: &str = "id, user_id, token_index, token_enc, device_name, device_model, \
    os_version, app_version, environment, created_at, last_used_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<DeviceRow> {
    Ok(DeviceRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        token_index: r.get(2)?,
        token_enc: r.get(3)?,
        device_name: r.get(4)?,
        device_model: r.get(5)?,
        os_version: r.get(6)?,
        app_version: r.get(7)?,
        environment: r.get(8)?,
        created_at: r.get(9)?,
        last_used_at: r.get(10)?,
        updated_at: r.get(11)?,
    })
}

/// Every column of `DeviceRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike (the UPDATE binds them all too, so it names the last one).
fn bind(d: &DeviceRow) -> [&dyn ToSql; 12] {
    [
        &d.id,
        &d.user_id,
        &d.token_index,
        &d.token_enc,
        &d.device_name,
        &d.device_model,
        &d.os_version,
        &d.app_version,
        &d.environment,
        &d.created_at,
        &d.last_used_at,
        &d.updated_at,
    ]
}

pub fn insert(conn: &Connection, d: &DeviceRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO devices ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
    ))?
    .execute(&bind(d)[..])?;
    Ok(())
}

/// Writes the sealed token and the metadata of an existing device.
pub fn update(conn: &Connection, d: &DeviceRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE devices SET token_enc = ?4, device_name = ?5, device_model = ?6, os_version = ?7, \
           app_version = ?8, environment = ?9, updated_at = ?12 WHERE id = ?1",
    )?
    .execute(&bind(d)[..])
}

/// The device with this token, whoever registered it.
pub fn find_by_index(conn: &Connection, index: &[u8]) -> rusqlite::Result<Option<DeviceRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM devices WHERE token_index = ?1"
    ))?
    .query_row([index], from_row)
    .optional()
}

pub fn find(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<DeviceRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM devices WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], from_row)
    .optional()
}

/// The user's devices, oldest first.
pub fn list(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<DeviceRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM devices WHERE user_id = ?1 ORDER BY created_at, id"
    ))?;
    let rows = stmt.query_map([user_id], from_row)?;
    rows.collect()
}

pub fn delete(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM devices WHERE id = ?1 AND user_id = ?2")?
        .execute([id, user_id])
}

/// Deletes a device by id only if its token is still `index` (it was not re-registered
/// in the meantime).
pub fn delete_if_token(conn: &Connection, id: &str, index: &[u8]) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM devices WHERE id = ?1 AND token_index = ?2")?
        .execute(params![id, index])
}

pub fn touch(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE devices SET last_used_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])
}

pub fn count_for_user(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COUNT(*) FROM devices WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
}
