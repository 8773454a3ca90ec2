//! `sent_transactions`: the client transaction ids a user has sent with, so a repeated
//! `POST /api/rooms/{roomId}/messages` with the same `txnId` sends once.
//!
//! A row is written *before* the homeserver is asked to send (with `event_id` NULL) and
//! completed with the event id afterwards. A row without an event id means the send failed
//! or is in flight; repeating it asks the homeserver again with the same Matrix transaction
//! id, which the homeserver deduplicates itself.

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentTransaction {
    pub user_id: String,
    pub txn_id: String,
    pub room_id: String,
    pub event_id: Option<String>,
    pub created_at: i64,
}

pub fn find(
    conn: &Connection,
    user_id: &str,
    txn_id: &str,
) -> rusqlite::Result<Option<SentTransaction>> {
    conn.prepare_cached(
        "SELECT user_id, txn_id, room_id, event_id, created_at FROM sent_transactions \
         WHERE user_id = ?1 AND txn_id = ?2",
    )?
    .query_row([user_id, txn_id], |r| {
        Ok(SentTransaction {
            user_id: r.get(0)?,
            txn_id: r.get(1)?,
            room_id: r.get(2)?,
            event_id: r.get(3)?,
            created_at: r.get(4)?,
        })
    })
    .optional()
}

/// Records the transaction unless the user already has this `txn_id`; returns whether it
/// was new.
pub fn insert_if_new(conn: &Connection, t: &SentTransaction) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO sent_transactions (user_id, txn_id, room_id, event_id, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            t.user_id,
            t.txn_id,
            t.room_id,
            t.event_id,
            t.created_at
        ])?;
    Ok(n == 1)
}

/// Stores the event id the homeserver gave the transaction.
pub fn set_event_id(
    conn: &Connection,
    user_id: &str,
    txn_id: &str,
    event_id: &str,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE sent_transactions SET event_id = ?3 WHERE user_id = ?1 AND txn_id = ?2",
    )?
    .execute([user_id, txn_id, event_id])
}
