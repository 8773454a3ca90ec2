//! `e2ee_trust`: per user, what the trusted sync device needs beyond its crypto store
//! (sealed cross-signing keys and backup key, the backup version, the recovery-key flag).
//! Sealed columns are opened by `services::e2ee_trust`.

use rusqlite::{params, Connection, OptionalExtension, Row};

#[derive(Debug, Clone, Default)]
pub struct TrustRow {
    pub user_id: String,
    pub cross_signing_enc: Option<Vec<u8>>,
    pub cross_signing_ours: bool,
    pub backup_version: Option<String>,
    pub backup_key_enc: Option<Vec<u8>>,
    pub backup_delete_version: Option<String>,
    pub recovery_key_shown: bool,
    pub last_error: Option<String>,
    pub updated_at: i64,
}

const COLUMNS: &str = "user_id, cross_signing_enc, cross_signing_ours, backup_version, \
     backup_key_enc, backup_delete_version, recovery_key_shown, last_error, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<TrustRow> {
    Ok(TrustRow {
        user_id: r.get(0)?,
        cross_signing_enc: r.get(1)?,
        cross_signing_ours: r.get(2)?,
        backup_version: r.get(3)?,
        backup_key_enc: r.get(4)?,
        backup_delete_version: r.get(5)?,
        recovery_key_shown: r.get(6)?,
        last_error: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

/// The user's row, or an empty one (not stored yet).
pub fn find(conn: &Connection, user_id: &str) -> rusqlite::Result<TrustRow> {
    let row = conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM e2ee_trust WHERE user_id = ?1"),
            [user_id],
            from_row,
        )
        .optional()?;
    Ok(row.unwrap_or_else(|| TrustRow {
        user_id: user_id.to_owned(),
        ..TrustRow::default()
    }))
}

pub fn save(conn: &Connection, row: &TrustRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO e2ee_trust ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT(user_id) DO UPDATE SET cross_signing_enc = excluded.cross_signing_enc,
               cross_signing_ours = excluded.cross_signing_ours,
               backup_version = excluded.backup_version, backup_key_enc = excluded.backup_key_enc,
               backup_delete_version = excluded.backup_delete_version,
               recovery_key_shown = excluded.recovery_key_shown,
               last_error = excluded.last_error, updated_at = excluded.updated_at"
        ),
        params![
            row.user_id,
            row.cross_signing_enc,
            row.cross_signing_ours,
            row.backup_version,
            row.backup_key_enc,
            row.backup_delete_version,
            row.recovery_key_shown,
            row.last_error,
            row.updated_at,
        ],
    )?;
    Ok(())
}

/// Records the last bootstrap or backup failure (`None` clears it).
pub fn set_error(
    conn: &Connection,
    user_id: &str,
    error: Option<&str>,
    now: i64,
) -> rusqlite::Result<()> {
    let mut row = find(conn, user_id)?;
    row.last_error = error.map(str::to_owned);
    row.updated_at = now;
    save(conn, &row)
}
