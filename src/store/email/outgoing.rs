//! `email_uploads`, `email_outbox`, `email_drafts`: outgoing mail's own rows (the sealed
//! columns are sealed and opened by the services).

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone, Default)]
pub struct UploadRow {
    pub id: String,
    pub user_id: String,
    pub name_enc: Vec<u8>,
    pub mimetype_enc: Vec<u8>,
    pub size: i64,
    pub created_at: i64,
}

pub fn insert_upload(conn: &Connection, u: &UploadRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_uploads (id, user_id, name_enc, mimetype_enc, size, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        u.id,
        u.user_id,
        u.name_enc,
        u.mimetype_enc,
        u.size,
        u.created_at
    ])?;
    Ok(())
}

pub fn find_upload(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<UploadRow>> {
    conn.prepare_cached(
        "SELECT id, user_id, name_enc, mimetype_enc, size, created_at FROM email_uploads \
         WHERE id = ?1 AND user_id = ?2",
    )?
    .query_row([id, user_id], |r| {
        Ok(UploadRow {
            id: r.get(0)?,
            user_id: r.get(1)?,
            name_enc: r.get(2)?,
            mimetype_enc: r.get(3)?,
            size: r.get(4)?,
            created_at: r.get(5)?,
        })
    })
    .optional()
}

/// Bytes and count of the user's spooled uploads.
pub fn upload_usage(conn: &Connection, user_id: &str) -> rusqlite::Result<(i64, i64)> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(size), 0), COUNT(*) FROM email_uploads WHERE user_id = ?1",
    )?
    .query_row([user_id], |r| Ok((r.get(0)?, r.get(1)?)))
}

pub fn delete_uploads(conn: &Connection, ids: &[String]) -> rusqlite::Result<usize> {
    let mut n = 0;
    for id in ids {
        n += conn
            .prepare_cached("DELETE FROM email_uploads WHERE id = ?1")?
            .execute([id])?;
    }
    Ok(n)
}

/// Ids of uploads created before `before` (the service keeps those a held message needs).
pub fn uploads_before(conn: &Connection, before: i64) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached("SELECT id, user_id FROM email_uploads WHERE created_at < ?1 LIMIT 1000")?
        .query_map([before], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

/// Every upload id (the spool directory's sweep keeps only files with a row).
pub fn all_upload_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT id FROM email_uploads")?
        .query_map([], |r| r.get(0))?
        .collect()
}

#[derive(Debug, Clone, Default)]
pub struct OutboxRow {
    pub id: String,
    pub user_id: String,
    pub request_enc: Vec<u8>,
    pub upload_ids: String,
    pub send_at: i64,
    pub status: String,
    pub created_at: i64,
}

pub fn insert_outbox(conn: &Connection, o: &OutboxRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_outbox (id, user_id, request_enc, upload_ids, send_at, status, \
           created_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)",
    )?
    .execute(params![
        o.id,
        o.user_id,
        o.request_enc,
        o.upload_ids,
        o.send_at,
        o.created_at
    ])?;
    Ok(())
}

pub fn outbox_status(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT status FROM email_outbox WHERE id = ?1 AND user_id = ?2")?
        .query_row([id, user_id], |r| r.get(0))
        .optional()
}

/// Cancels a pending message: true when it was pending (and is cancelled now).
pub fn cancel_outbox(
    conn: &Connection,
    user_id: &str,
    id: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE email_outbox SET status = 'cancelled', finished_at = ?3 \
             WHERE id = ?1 AND user_id = ?2 AND status = 'pending'",
        )?
        .execute(params![id, user_id, now])?
        == 1)
}

/// Claims due pending messages in one statement (`pending` → `sending`): a message is
/// claimed once, so it is sent at most once.
pub fn claim_due(conn: &Connection, now: i64, max: i64) -> rusqlite::Result<Vec<OutboxRow>> {
    conn.prepare_cached(
        "UPDATE email_outbox SET status = 'sending' WHERE id IN \
           (SELECT id FROM email_outbox WHERE status = 'pending' AND send_at <= ?1 \
            ORDER BY send_at LIMIT ?2) \
         RETURNING id, user_id, request_enc, upload_ids, send_at, status, created_at",
    )?
    .query_map(params![now, max], |r| {
        Ok(OutboxRow {
            id: r.get(0)?,
            user_id: r.get(1)?,
            request_enc: r.get(2)?,
            upload_ids: r.get(3)?,
            send_at: r.get(4)?,
            status: r.get(5)?,
            created_at: r.get(6)?,
        })
    })?
    .collect()
}

pub fn finish_outbox(
    conn: &Connection,
    id: &str,
    status: &str,
    error_enc: Option<&[u8]>,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE email_outbox SET status = ?2, error_enc = ?3, finished_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, status, error_enc, now])?;
    Ok(())
}

/// Messages left in `sending` by a stop mid-send: `(id, user_id)`.
pub fn interrupted(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached("SELECT id, user_id FROM email_outbox WHERE status = 'sending'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

pub fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT MIN(send_at) FROM email_outbox WHERE status = 'pending'")?
        .query_row([], |r| r.get(0))
}

/// Upload ids that held messages still need (they stay spooled past 24 h).
pub fn held_upload_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let lists: Vec<String> = conn
        .prepare_cached(
            "SELECT upload_ids FROM email_outbox WHERE status IN ('pending', 'sending')",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(lists
        .iter()
        .flat_map(|l| l.split_whitespace().map(str::to_owned))
        .collect())
}

/// `(status, send_at, sealed failure)` of an outbox message.
pub type OutboxState = (String, i64, Option<Vec<u8>>);

/// Status and sealed failure of the user's outbox message.
pub fn outbox_state(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<OutboxState>> {
    conn.prepare_cached(
        "SELECT status, send_at, error_enc FROM email_outbox WHERE id = ?1 AND user_id = ?2",
    )?
    .query_row([id, user_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .optional()
}

/// Finished outbox rows older than `before` are dropped (their answer is no longer asked).
pub fn purge_outbox(conn: &Connection, before: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM email_outbox WHERE status IN ('sent', 'failed', 'cancelled') \
         AND finished_at < ?1",
    )?
    .execute([before])
}

/// The draft id for `(account, mid_hash)`, created when new.
pub fn draft_id(
    conn: &Connection,
    user_id: &str,
    account_id: &str,
    mid_hash: &str,
    now: i64,
) -> rusqlite::Result<String> {
    let found: Option<String> = conn
        .prepare_cached("SELECT id FROM email_drafts WHERE account_id = ?1 AND mid_hash = ?2")?
        .query_row([account_id, mid_hash], |r| r.get(0))
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    conn.prepare_cached(
        "INSERT INTO email_drafts (id, user_id, account_id, mid_hash, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, user_id, account_id, mid_hash, now])?;
    Ok(id)
}

/// `(account_id, mid_hash)` of the user's draft `id`.
pub fn find_draft(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached(
        "SELECT account_id, mid_hash FROM email_drafts WHERE id = ?1 AND user_id = ?2",
    )?
    .query_row([id, user_id], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

pub fn set_draft_hash(
    conn: &Connection,
    id: &str,
    mid_hash: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE email_drafts SET mid_hash = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, mid_hash, now])?;
    Ok(())
}

pub fn delete_draft(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM email_drafts WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}
