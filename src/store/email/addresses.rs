//! `email_addresses`: addresses for completion (sealed by the service, keyed by hash).

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone, Default)]
pub struct AddressRow {
    pub id: String,
    pub address_enc: Vec<u8>,
    pub name_enc: Option<Vec<u8>>,
    pub uses: i64,
    pub last_used_at: i64,
}

/// The row of `addr_hash`: `(id, has a name)`.
pub fn find(
    conn: &Connection,
    user_id: &str,
    addr_hash: &str,
) -> rusqlite::Result<Option<(String, bool)>> {
    conn.prepare_cached(
        "SELECT id, name_enc IS NOT NULL FROM email_addresses WHERE user_id = ?1 AND addr_hash = ?2",
    )?
    .query_row([user_id, addr_hash], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

pub fn insert(
    conn: &Connection,
    user_id: &str,
    addr_hash: &str,
    row: &AddressRow,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_addresses (id, user_id, addr_hash, address_enc, name_enc, uses, \
           last_used_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        row.id,
        user_id,
        addr_hash,
        row.address_enc,
        row.name_enc,
        row.uses,
        row.last_used_at
    ])?;
    Ok(())
}

/// One more use at `at`; a name is set when the row has none yet.
pub fn bump(
    conn: &Connection,
    id: &str,
    weight: i64,
    at: i64,
    name_enc: Option<&[u8]>,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE email_addresses SET uses = uses + ?2, last_used_at = MAX(last_used_at, ?3), \
           name_enc = COALESCE(name_enc, ?4) WHERE id = ?1",
    )?
    .execute(params![id, weight, at, name_enc])?;
    Ok(())
}

pub fn count(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COUNT(*) FROM email_addresses WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
}

/// The user's addresses, most used first.
pub fn ranked(conn: &Connection, user_id: &str, max: i64) -> rusqlite::Result<Vec<AddressRow>> {
    conn.prepare_cached(
        "SELECT id, address_enc, name_enc, uses, last_used_at FROM email_addresses \
         WHERE user_id = ?1 ORDER BY uses DESC, last_used_at DESC, id LIMIT ?2",
    )?
    .query_map(params![user_id, max], |r| {
        Ok(AddressRow {
            id: r.get(0)?,
            address_enc: r.get(1)?,
            name_enc: r.get(2)?,
            uses: r.get(3)?,
            last_used_at: r.get(4)?,
        })
    })?
    .collect()
}
