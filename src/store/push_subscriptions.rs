//! `push_subscriptions` (Web Push subscriptions of browsers, sealed), `server_secrets` (the
//! VAPID key), and the notification columns of `rooms` and `users`. Times are Unix ms.

use rusqlite::{params, Connection, OptionalExtension, Row};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionRow {
    /// UUID.
    pub id: String,
    pub user_id: String,
    pub endpoint_index: Vec<u8>,
    pub endpoint_enc: Vec<u8>,
    pub keys_enc: Vec<u8>,
    pub endpoint_origin: String,
    pub created_at: i64,
    pub last_success_at: Option<i64>,
    pub failures: i64,
}

const COLUMNS: &str = "id, user_id, endpoint_index, endpoint_enc, keys_enc, endpoint_origin, \
    created_at, last_success_at, failures";

fn from_row(r: &Row<'_>) -> rusqlite::Result<SubscriptionRow> {
    Ok(SubscriptionRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        endpoint_index: r.get(2)?,
        endpoint_enc: r.get(3)?,
        keys_enc: r.get(4)?,
        endpoint_origin: r.get(5)?,
        created_at: r.get(6)?,
        last_success_at: r.get(7)?,
        failures: r.get(8)?,
    })
}

pub fn insert(conn: &Connection, s: &SubscriptionRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO push_subscriptions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?
    .execute(params![
        s.id,
        s.user_id,
        s.endpoint_index,
        s.endpoint_enc,
        s.keys_enc,
        s.endpoint_origin,
        s.created_at,
        s.last_success_at,
        s.failures
    ])?;
    Ok(())
}

/// Replaces the sealed keys of a subscription registered again (the browser may have
/// rotated them) and clears its failures.
pub fn update_keys(conn: &Connection, id: &str, keys_enc: &[u8]) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE push_subscriptions SET keys_enc = ?2, failures = 0 WHERE id = ?1")?
        .execute(params![id, keys_enc])
}

/// Re-seals both sealed columns (key deletion replaces the user's data key).
pub fn reseal(
    conn: &Connection,
    id: &str,
    endpoint_enc: &[u8],
    keys_enc: &[u8],
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE push_subscriptions SET endpoint_enc = ?2, keys_enc = ?3 WHERE id = ?1",
    )?
    .execute(params![id, endpoint_enc, keys_enc])
}

pub fn find_by_index(
    conn: &Connection,
    user_id: &str,
    index: &[u8],
) -> rusqlite::Result<Option<SubscriptionRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM push_subscriptions WHERE user_id = ?1 AND endpoint_index = ?2"
    ))?
    .query_row(params![user_id, index], from_row)
    .optional()
}

/// Oldest first.
pub fn list(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<SubscriptionRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM push_subscriptions WHERE user_id = ?1 ORDER BY created_at, id"
    ))?
    .query_map([user_id], from_row)?
    .collect()
}

pub fn count_for_user(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COUNT(*) FROM push_subscriptions WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
}

pub fn delete(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM push_subscriptions WHERE user_id = ?1 AND id = ?2")?
        .execute([user_id, id])
}

/// Records a delivery the push service accepted.
pub fn mark_success(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE push_subscriptions SET last_success_at = ?2, failures = 0 WHERE id = ?1",
    )?
    .execute(params![id, now])
}

/// Counts a delivery given up on (retries spent, or refused for good).
pub fn mark_failure(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE push_subscriptions SET failures = failures + 1 WHERE id = ?1")?
        .execute([id])
}

/// Stores a server secret unless one of that name exists; returns the stored one (the
/// first writer wins when two processes race).
pub fn secret_get_or_insert(
    conn: &Connection,
    name: &str,
    value_enc: &[u8],
    now: i64,
) -> rusqlite::Result<Vec<u8>> {
    conn.prepare_cached(
        "INSERT INTO server_secrets (name, value_enc, created_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name) DO NOTHING",
    )?
    .execute(params![name, value_enc, now])?;
    secret_find(conn, name)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
}

pub fn secret_find(conn: &Connection, name: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT value_enc FROM server_secrets WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()
}

pub fn previews(conn: &Connection, user_id: &str) -> rusqlite::Result<Option<bool>> {
    conn.prepare_cached("SELECT push_previews FROM users WHERE id = ?1")?
        .query_row([user_id], |r| r.get(0))
        .optional()
}

pub fn set_previews(conn: &Connection, user_id: &str, on: bool) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE users SET push_previews = ?2 WHERE id = ?1")?
        .execute(params![user_id, on])
}

/// A room's notification settings: `(muted, notify_level, snooze_until)`.
pub fn room_levels(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
) -> rusqlite::Result<Option<(bool, String, Option<i64>)>> {
    conn.prepare_cached(
        "SELECT muted, notify_level, snooze_until FROM rooms WHERE user_id = ?1 AND room_id = ?2",
    )?
    .query_row([user_id, room_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}

/// Sets a room's level and snooze in one statement: `off` is `muted = 1` (the stored
/// `notify_level` is kept for when the room is unmuted), `all`/`mentions` unmute it.
/// Returns the rows changed (0: no such room).
pub fn set_room_levels(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    level: &str,
    snooze_until: Option<i64>,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE rooms SET muted = (?3 = 'off'), \
         notify_level = CASE WHEN ?3 = 'off' THEN notify_level ELSE ?3 END, \
         snooze_until = ?4, updated_at = ?5 WHERE user_id = ?1 AND room_id = ?2",
    )?
    .execute(params![user_id, room_id, level, snooze_until, now])
}

/// The user's unread total over the joined, active rooms (the app badge): each room's
/// unread messages, and a room marked unread (`m.marked_unread`) with none counts once.
pub fn unread_total(conn: &Connection, user_id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(MAX(r.unread_count, COALESCE(m.marked_unread, 0))), 0) \
         FROM rooms r LEFT JOIN room_marks m ON m.user_id = r.user_id AND m.room_id = r.room_id \
         WHERE r.user_id = ?1 AND r.membership = 'join' AND r.archived = 0",
    )?
    .query_row([user_id], |r| r.get(0))
}

/// A thread's only message, when the thread has exactly one and it is unseen in the
/// account's INBOX: `(message id, date, sealed header)`. A new thread as pushes see it.
pub fn lone_unseen_inbox_message(
    conn: &Connection,
    user_id: &str,
    account_id: &str,
    thread_id: &str,
) -> rusqlite::Result<Option<(String, i64, Vec<u8>)>> {
    conn.prepare_cached(
        "SELECT m.id, m.date, m.header_enc FROM email_messages m \
         JOIN email_threads t ON t.id = m.thread_id \
         WHERE m.thread_id = ?3 AND m.account_id = ?2 AND t.user_id = ?1 AND m.seen = 0 \
         AND (SELECT COUNT(*) FROM email_messages WHERE thread_id = ?3) = 1 \
         AND EXISTS (SELECT 1 FROM email_locations l JOIN email_mailboxes b ON b.id = l.mailbox_id \
                     WHERE l.message_id = m.id AND b.special_use = 'inbox')",
    )?
    .query_row([user_id, account_id, thread_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_marked_unread_counts_once_in_the_total() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE rooms (user_id TEXT, room_id TEXT, unread_count INTEGER, \
             membership TEXT, archived INTEGER);
             CREATE TABLE room_marks (user_id TEXT, room_id TEXT, marked_unread INTEGER);
             INSERT INTO rooms VALUES ('u', '!a', 3, 'join', 0), ('u', '!b', 0, 'join', 0),
                 ('u', '!c', 2, 'join', 0), ('u', '!d', 0, 'join', 1), ('v', '!e', 0, 'join', 0);
             INSERT INTO room_marks VALUES ('u', '!b', 1), ('u', '!c', 1), ('u', '!d', 1),
                 ('v', '!e', 0);",
        )
        .unwrap();
        // 3 + 1 (marked, none unread) + 2 (marked, already counted); archived left out.
        assert_eq!(unread_total(&c, "u").unwrap(), 6);
        assert_eq!(unread_total(&c, "v").unwrap(), 0);
    }
}
