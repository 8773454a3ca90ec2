//! E-mail cache tables (migration 0010): accounts and mailboxes here, messages and threads
//! in [`messages`], signatures in [`signatures`]. Sealed columns are sealed by the service;
//! mailbox names are compared by their keyed hash (`name_hash`, migration 0020), never in clear.

use rusqlite::{params, Connection, OptionalExtension, Row};

pub mod addresses;
pub mod messages;
pub mod outgoing;
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

/// A mailbox row. Its IMAP name is private (issue #21, migration 0020): stored sealed
/// (`name_enc`) and as a keyed hash (`name_hash`, what SQL compares); the service opens it
/// (services::email::mailboxes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailboxRow {
    pub id: String,
    pub account_id: String,
    /// The sealed IMAP name; `None` only on a row from before migration 0020 not sealed yet.
    pub name_enc: Option<Vec<u8>>,
    /// The name's keyed hash (per user); `None` on a row not sealed yet.
    pub name_hash: Option<String>,
    /// The old `name` column: the plain name on a row not sealed yet, the row's own id after.
    pub legacy_name: String,
    pub special_use: Option<String>,
    pub uid_validity: Option<i64>,
    pub last_uid: i64,
    pub highest_modseq: Option<i64>,
}

fn mailbox(r: &Row<'_>) -> rusqlite::Result<MailboxRow> {
    Ok(MailboxRow {
        id: r.get(0)?,
        account_id: r.get(1)?,
        legacy_name: r.get(2)?,
        special_use: r.get(3)?,
        uid_validity: r.get(4)?,
        last_uid: r.get(5)?,
        highest_modseq: r.get(6)?,
        name_enc: r.get(7)?,
        name_hash: r.get(8)?,
    })
}

const MAILBOX_COLUMNS: &str =
    "id, account_id, name, special_use, uid_validity, last_uid, highest_modseq, name_enc, name_hash";

/// The account's mailboxes (in no meaningful order: the names are sealed).
pub fn mailboxes(conn: &Connection, account_id: &str) -> rusqlite::Result<Vec<MailboxRow>> {
    conn.prepare_cached(&format!(
        "SELECT {MAILBOX_COLUMNS} FROM email_mailboxes WHERE account_id = ?1 ORDER BY id"
    ))?
    .query_map([account_id], mailbox)?
    .collect()
}

/// The mailboxes with these ids (those that exist).
pub fn mailboxes_by_ids(conn: &Connection, ids: &[String]) -> rusqlite::Result<Vec<MailboxRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; ids.len()].join(",");
    conn.prepare(&format!(
        "SELECT {MAILBOX_COLUMNS} FROM email_mailboxes WHERE id IN ({marks})"
    ))?
    .query_map(rusqlite::params_from_iter(ids), mailbox)?
    .collect()
}

/// A mailbox the server listed, ready to store: `id` is used (with `name_enc` sealed for
/// it) only when no mailbox of the account has `name_hash` yet.
#[derive(Debug, Clone)]
pub struct ListedMailbox<'a> {
    pub id: String,
    pub name_hash: String,
    pub name_enc: Vec<u8>,
    pub special: Option<&'a str>,
}

/// Makes the account's mailboxes exactly `found`, keeping the ids and bookkeeping of those
/// that stay (matched by name hash). Mailboxes gone from the server go with their locations.
pub fn replace_mailboxes(
    conn: &Connection,
    account_id: &str,
    found: &[ListedMailbox<'_>],
) -> rusqlite::Result<()> {
    for m in found {
        // `name` (the pre-0020 column, NOT NULL and unique per account) gets the row's id.
        conn.prepare_cached(
            "INSERT INTO email_mailboxes (id, account_id, name, special_use, name_enc, name_hash) \
             VALUES (?1, ?2, ?1, ?3, ?4, ?5) \
             ON CONFLICT (account_id, name_hash) DO UPDATE SET special_use = excluded.special_use",
        )?
        .execute(params![
            m.id,
            account_id,
            m.special,
            m.name_enc,
            m.name_hash
        ])?;
    }
    for existing in mailboxes(conn, account_id)? {
        let listed = existing
            .name_hash
            .as_deref()
            .is_some_and(|h| found.iter().any(|m| m.name_hash == h));
        if !listed {
            conn.execute("DELETE FROM email_mailboxes WHERE id = ?1", [&existing.id])?;
        }
    }
    Ok(())
}

/// Mailboxes of the account still holding a plain name (rows from before migration 0020).
pub fn unsealed_mailboxes(
    conn: &Connection,
    account_id: &str,
) -> rusqlite::Result<Vec<MailboxRow>> {
    conn.prepare_cached(&format!(
        "SELECT {MAILBOX_COLUMNS} FROM email_mailboxes WHERE account_id = ?1 AND name_hash IS NULL"
    ))?
    .query_map([account_id], mailbox)?
    .collect()
}

/// `(account id, user id)` of every account with a mailbox not sealed yet.
pub fn accounts_with_unsealed_mailboxes(
    conn: &Connection,
) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare(
        "SELECT DISTINCT a.id, a.user_id FROM email_accounts a \
         JOIN email_mailboxes b ON b.account_id = a.id WHERE b.name_hash IS NULL",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// Replaces a mailbox's plain name by its sealed form and hash (the plain column gets the
/// row's id).
pub fn seal_mailbox_name(
    conn: &Connection,
    id: &str,
    name_hash: &str,
    name_enc: &[u8],
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE email_mailboxes SET name = id, name_hash = ?2, name_enc = ?3 WHERE id = ?1",
    )?
    .execute(params![id, name_hash, name_enc])
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
