//! `scheduled_messages` table: messages to send later, with their status and the
//! scheduler's lease. Times are Unix milliseconds.
//!
//! The body columns hold the client's envelope (sealed to the server's X25519 key) exactly
//! as received, base64.

use rusqlite::{params, Connection, OptionalExtension, Row};

mod lease;

pub use lease::{
    claim_due, mark_failed, mark_sent, next_due, queue_depth, release, requeue, schedule_retry,
};

pub const PENDING: &str = "pending";
pub const SENT: &str = "sent";
pub const CANCELLED: &str = "cancelled";
pub const FAILED: &str = "failed";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduledRow {
    pub id: String,
    pub user_id: String,
    pub room_id: String,
    pub target_platform: Option<String>,
    pub encrypted_body: String,
    pub nonce: String,
    pub ephemeral_pubkey: String,
    pub status: String,
    pub scheduled_for: i64,
    pub next_attempt_at: i64,
    pub lease_until: Option<i64>,
    pub attempts: i64,
    pub sent_room_id: Option<String>,
    pub event_id: Option<String>,
    pub failure_reason: Option<String>,
    pub sent_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ScheduledRow {
    /// Whether a scheduler holds the message right now (a send is in progress).
    pub fn is_leased(&self, now: i64) -> bool {
        self.lease_until.is_some_and(|l| l > now)
    }
}

const COLUMNS: &str = "id, user_id, room_id, target_platform, encrypted_body, nonce, \
    ephemeral_pubkey, status, scheduled_for, next_attempt_at, lease_until, attempts, \
    sent_room_id, event_id, failure_reason, sent_at, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ScheduledRow> {
    Ok(ScheduledRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        room_id: r.get(2)?,
        target_platform: r.get(3)?,
        encrypted_body: r.get(4)?,
        nonce: r.get(5)?,
        ephemeral_pubkey: r.get(6)?,
        status: r.get(7)?,
        scheduled_for: r.get(8)?,
        next_attempt_at: r.get(9)?,
        lease_until: r.get(10)?,
        attempts: r.get(11)?,
        sent_room_id: r.get(12)?,
        event_id: r.get(13)?,
        failure_reason: r.get(14)?,
        sent_at: r.get(15)?,
        created_at: r.get(16)?,
        updated_at: r.get(17)?,
    })
}

pub fn insert(conn: &Connection, m: &ScheduledRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO scheduled_messages ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
    ))?
    .execute(params![
        m.id,
        m.user_id,
        m.room_id,
        m.target_platform,
        m.encrypted_body,
        m.nonce,
        m.ephemeral_pubkey,
        m.status,
        m.scheduled_for,
        m.next_attempt_at,
        m.lease_until,
        m.attempts,
        m.sent_room_id,
        m.event_id,
        m.failure_reason,
        m.sent_at,
        m.created_at,
        m.updated_at
    ])?;
    Ok(())
}

/// The message `id` if it belongs to `user_id`.
pub fn find(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<ScheduledRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM scheduled_messages WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], from_row)
    .optional()
}

/// Filters of the list route.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub room_id: Option<String>,
    pub status: Option<String>,
    pub limit: i64,
    pub offset: i64,
}

/// A page of the user's messages (earliest `scheduled_for` first) and the total matching.
pub fn list(
    conn: &Connection,
    user_id: &str,
    f: &ListFilter,
) -> rusqlite::Result<(Vec<ScheduledRow>, i64)> {
    let filter = "user_id = ?1 AND (?2 IS NULL OR room_id = ?2) AND (?3 IS NULL OR status = ?3)";
    let total: i64 = conn
        .prepare_cached(&format!(
            "SELECT COUNT(*) FROM scheduled_messages WHERE {filter}"
        ))?
        .query_row(params![user_id, f.room_id, f.status], |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM scheduled_messages WHERE {filter} \
         ORDER BY scheduled_for, created_at, id LIMIT ?4 OFFSET ?5"
    ))?;
    let rows = stmt
        .query_map(
            params![user_id, f.room_id, f.status, f.limit, f.offset],
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// Writes the editable fields of a pending message (time, envelope, attempts) and
/// releases nothing else. Returns the number of rows changed (0 when no longer pending).
pub fn update_pending(conn: &Connection, m: &ScheduledRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET scheduled_for = ?3, next_attempt_at = ?4, \
         encrypted_body = ?5, nonce = ?6, ephemeral_pubkey = ?7, attempts = ?8, \
         failure_reason = ?9, updated_at = ?10 \
         WHERE id = ?1 AND user_id = ?2 AND status = 'pending'",
    )?
    .execute(params![
        m.id,
        m.user_id,
        m.scheduled_for,
        m.next_attempt_at,
        m.encrypted_body,
        m.nonce,
        m.ephemeral_pubkey,
        m.attempts,
        m.failure_reason,
        m.updated_at
    ])
}

/// Cancels a pending message that no scheduler holds. Returns rows changed.
pub fn cancel(conn: &Connection, user_id: &str, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET status = 'cancelled', lease_until = NULL, updated_at = ?3 \
         WHERE id = ?1 AND user_id = ?2 AND status = 'pending' \
         AND (lease_until IS NULL OR lease_until <= ?3)",
    )?
    .execute(params![id, user_id, now])
}

/// Per-user counts by status, rooms with pending messages, the earliest pending time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub pending: i64,
    pub sent: i64,
    pub cancelled: i64,
    pub failed: i64,
    pub rooms_with_pending: i64,
    pub next_scheduled: Option<i64>,
}

pub fn stats(conn: &Connection, user_id: &str) -> rusqlite::Result<Stats> {
    conn.prepare_cached(
        "SELECT \
           COALESCE(SUM(status = 'pending'), 0), COALESCE(SUM(status = 'sent'), 0), \
           COALESCE(SUM(status = 'cancelled'), 0), COALESCE(SUM(status = 'failed'), 0), \
           COUNT(DISTINCT CASE WHEN status = 'pending' THEN room_id END), \
           MIN(CASE WHEN status = 'pending' THEN scheduled_for END) \
         FROM scheduled_messages WHERE user_id = ?1",
    )?
    .query_row([user_id], |r| {
        Ok(Stats {
            pending: r.get(0)?,
            sent: r.get(1)?,
            cancelled: r.get(2)?,
            failed: r.get(3)?,
            rooms_with_pending: r.get(4)?,
            next_scheduled: r.get(5)?,
        })
    })
}
