//! `email_signatures`: the user's own signatures (name and text sealed by the service).

use rusqlite::{params, Connection, OptionalExtension, Row};

#[derive(Debug, Clone, Default)]
pub struct SignatureRow {
    pub id: String,
    pub user_id: String,
    pub name_enc: Vec<u8>,
    pub text_enc: Vec<u8>,
    pub is_default: bool,
    pub created_at: i64,
}

fn row(r: &Row<'_>) -> rusqlite::Result<SignatureRow> {
    Ok(SignatureRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        name_enc: r.get(2)?,
        text_enc: r.get(3)?,
        is_default: r.get(4)?,
        created_at: r.get(5)?,
    })
}

const COLUMNS: &str = "id, user_id, name_enc, text_enc, is_default, created_at";

pub fn list(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<SignatureRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM email_signatures WHERE user_id = ?1 ORDER BY created_at, id"
    ))?
    .query_map([user_id], row)?
    .collect()
}

pub fn count(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COUNT(*) FROM email_signatures WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
}

pub fn find(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<SignatureRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM email_signatures WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], row)
    .optional()
}

pub fn find_default(conn: &Connection, user_id: &str) -> rusqlite::Result<Option<SignatureRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM email_signatures WHERE user_id = ?1 AND is_default = 1"
    ))?
    .query_row([user_id], row)
    .optional()
}

/// Inserts or rewrites the row; a default signature makes the others non-default.
pub fn save(conn: &Connection, s: &SignatureRow) -> rusqlite::Result<()> {
    if s.is_default {
        conn.prepare_cached("UPDATE email_signatures SET is_default = 0 WHERE user_id = ?1")?
            .execute([&s.user_id])?;
    }
    conn.prepare_cached(&format!(
        "INSERT INTO email_signatures ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (id) DO UPDATE SET name_enc = excluded.name_enc, \
           text_enc = excluded.text_enc, is_default = excluded.is_default"
    ))?
    .execute(params![
        s.id,
        s.user_id,
        s.name_enc,
        s.text_enc,
        s.is_default,
        s.created_at
    ])?;
    Ok(())
}

pub fn delete(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM email_signatures WHERE id = ?1 AND user_id = ?2")?
        .execute([id, user_id])
}
