//! E-mail cache tables (migration 0010): accounts and mailboxes here, messages and threads
//! in [`messages`], signatures in [`signatures`]. Sealed columns are sealed by the service.

use rusqlite::{params, Connection, OptionalExtension, Row};

pub mod messages;
pub mod signatures;

#[derive(Debug, Clone, Default)]
pub struct AccountRow {
    pub id: String,
    pub user_id: String,
    pub email_enc: Vec<u8>,
    pub display_name_enc: Option<Vec<u8>>,
    pub settings_enc: Vec<u8>,
    pub status: String,
    /// Legacy plaintext failure (version 1 rows; emptied when they are rehashed).
    pub error: Option<String>,
    /// The last failure, sealed.
    pub error_enc: Option<Vec<u8>>,
    pub last_sync_at: Option<i64>,
    pub created_at: i64,
}

const ACCOUNT_COLUMNS: &str = "id, user_id, email_enc, display_name_enc, settings_enc, status, \
    error, last_sync_at, created_at, error_enc";

fn account(r: &Row<'_>) -> rusqlite::Result<AccountRow> {
    Ok(AccountRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        email_enc: r.get(2)?,
        display_name_enc: r.get(3)?,
        settings_enc: r.get(4)?,
        status: r.get(5)?,
        error: r.get(6)?,
        last_sync_at: r.get(7)?,
        created_at: r.get(8)?,
        error_enc: r.get(9)?,
    })
}

pub fn insert_account(conn: &Connection, a: &AccountRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO email_accounts ({ACCOUNT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    ))?
    .execute(params![
        a.id,
        a.user_id,
        a.email_enc,
        a.display_name_enc,
        a.settings_enc,
        a.status,
        a.error,
        a.last_sync_at,
        a.created_at,
        a.error_enc
    ])?;
    Ok(())
}

pub fn accounts_of(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<AccountRow>> {
    conn.prepare_cached(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM email_accounts WHERE user_id = ?1 ORDER BY created_at, id"
    ))?
    .query_map([user_id], account)?
    .collect()
}

/// The account `id` if it belongs to `user_id`.
pub fn find_account(
    conn: &Connection,
    user_id: &str,
    id: &str,
) -> rusqlite::Result<Option<AccountRow>> {
    conn.prepare_cached(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM email_accounts WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], account)
    .optional()
}

pub fn account_by_id(conn: &Connection, id: &str) -> rusqlite::Result<Option<AccountRow>> {
    conn.prepare_cached(&format!(
        "SELECT {ACCOUNT_COLUMNS} FROM email_accounts WHERE id = ?1"
    ))?
    .query_row([id], account)
    .optional()
}

/// Every account id (the sync supervisor starts one task per account).
pub fn all_account_ids(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT id FROM email_accounts")?
        .query_map([], |r| r.get(0))?
        .collect()
}

/// Drops every mailbox account (with its cached mail) and signature of a user.
pub fn drop_user_mail(conn: &Connection, user_id: &str) -> rusqlite::Result<usize> {
    let n = conn.execute("DELETE FROM email_accounts WHERE user_id = ?1", [user_id])?;
    conn.execute("DELETE FROM email_signatures WHERE user_id = ?1", [user_id])?;
    Ok(n)
}

pub fn delete_account(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM email_accounts WHERE id = ?1 AND user_id = ?2")?
        .execute([id, user_id])
}

/// Records the sync status; `synced_at` is kept when `None`.
pub fn set_status(
    conn: &Connection,
    id: &str,
    status: &str,
    error_enc: Option<&[u8]>,
    synced_at: Option<i64>,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE email_accounts SET status = ?2, error = NULL, error_enc = ?3, \
         last_sync_at = COALESCE(?4, last_sync_at) WHERE id = ?1",
    )?
    .execute(params![id, status, error_enc, synced_at])
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailboxRow {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub special_use: Option<String>,
    pub uid_validity: Option<i64>,
    pub last_uid: i64,
    pub highest_modseq: Option<i64>,
}

fn mailbox(r: &Row<'_>) -> rusqlite::Result<MailboxRow> {
    Ok(MailboxRow {
        id: r.get(0)?,
        account_id: r.get(1)?,
        name: r.get(2)?,
        special_use: r.get(3)?,
        uid_validity: r.get(4)?,
        last_uid: r.get(5)?,
        highest_modseq: r.get(6)?,
    })
}

const MAILBOX_COLUMNS: &str =
    "id, account_id, name, special_use, uid_validity, last_uid, highest_modseq";

pub fn mailboxes(conn: &Connection, account_id: &str) -> rusqlite::Result<Vec<MailboxRow>> {
    conn.prepare_cached(&format!(
        "SELECT {MAILBOX_COLUMNS} FROM email_mailboxes WHERE account_id = ?1 ORDER BY name"
    ))?
    .query_map([account_id], mailbox)?
    .collect()
}

/// Makes the account's mailboxes exactly `found` (name, special use), keeping the ids and
/// bookkeeping of those that stay. Mailboxes gone from the server go with their locations.
pub fn replace_mailboxes(
    conn: &Connection,
    account_id: &str,
    found: &[(String, Option<&str>)],
) -> rusqlite::Result<()> {
    for (name, special) in found {
        conn.prepare_cached(
            "INSERT INTO email_mailboxes (id, account_id, name, special_use) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (account_id, name) DO UPDATE SET special_use = excluded.special_use",
        )?
        .execute(params![
            uuid::Uuid::new_v4().to_string(),
            account_id,
            name,
            special
        ])?;
    }
    for existing in mailboxes(conn, account_id)? {
        if !found.iter().any(|(n, _)| *n == existing.name) {
            conn.execute("DELETE FROM email_mailboxes WHERE id = ?1", [&existing.id])?;
        }
    }
    Ok(())
}

/// Stores a mailbox's sync position.
pub fn set_position(
    conn: &Connection,
    id: &str,
    uid_validity: i64,
    last_uid: i64,
    highest_modseq: Option<i64>,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE email_mailboxes SET uid_validity = ?2, last_uid = ?3, highest_modseq = ?4 \
         WHERE id = ?1",
    )?
    .execute(params![id, uid_validity, last_uid, highest_modseq])?;
    Ok(())
}

/// Forgets every location in a mailbox (its UIDVALIDITY changed: the UIDs mean nothing now).
pub fn reset_mailbox(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM email_locations WHERE mailbox_id = ?1", [id])?;
    conn.execute(
        "UPDATE email_mailboxes SET uid_validity = NULL, last_uid = 0, highest_modseq = NULL \
         WHERE id = ?1",
        [id],
    )?;
    Ok(())
}
