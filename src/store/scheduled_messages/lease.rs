//! The scheduler's side of `scheduled_messages`: claiming due messages under a lease (so
//! two servers or a crashed one never send a message twice) and recording each outcome.

use rusqlite::{params, Connection};

use super::{from_row, ScheduledRow, COLUMNS};

/// Claims up to `limit` due pending messages (earliest first) in one statement: each gets
/// one more attempt and a lease until `now + lease_ms` (also its next look, so a crashed
/// holder's message comes back when the lease runs out). Returns the claimed rows.
pub fn claim_due(
    conn: &Connection,
    now: i64,
    lease_ms: i64,
    limit: i64,
) -> rusqlite::Result<Vec<ScheduledRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE scheduled_messages SET attempts = attempts + 1, lease_until = ?2, \
           next_attempt_at = ?2, updated_at = ?1 \
         WHERE id IN (SELECT id FROM scheduled_messages \
                      WHERE status = 'pending' AND next_attempt_at <= ?1 \
                      ORDER BY next_attempt_at LIMIT ?3) \
         RETURNING {COLUMNS}"
    ))?;
    let rows = stmt.query_map(params![now, now + lease_ms, limit], from_row)?;
    let mut claimed = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    claimed.sort_by_key(|m| m.scheduled_for);
    Ok(claimed)
}

/// The earliest time a pending message needs the scheduler (due, retry or lease end).
pub fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MIN(next_attempt_at) FROM scheduled_messages WHERE status = 'pending'",
    )?
    .query_row([], |r| r.get(0))
}

/// (pending, due now or overdue): the scheduler's queue, for `/metrics`.
pub fn queue_depth(conn: &Connection, now: i64) -> rusqlite::Result<(i64, i64)> {
    conn.prepare_cached(
        "SELECT COUNT(*), COALESCE(SUM(next_attempt_at <= ?1), 0) FROM scheduled_messages \
         WHERE status = 'pending'",
    )?
    .query_row([now], |r| Ok((r.get(0)?, r.get(1)?)))
}

/// Records a successful send of a message this scheduler holds.
pub fn mark_sent(
    conn: &Connection,
    id: &str,
    sent_room_id: &str,
    event_id: &str,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET status = 'sent', sent_room_id = ?2, event_id = ?3, \
           sent_at = ?4, lease_until = NULL, failure_reason = NULL, updated_at = ?4 \
         WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, sent_room_id, event_id, now])
}

/// Releases a held message for another attempt at `next_attempt_at`.
pub fn schedule_retry(
    conn: &Connection,
    id: &str,
    next_attempt_at: i64,
    reason: &str,
    now: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET next_attempt_at = ?2, lease_until = NULL, \
           failure_reason = ?3, updated_at = ?4 \
         WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, next_attempt_at, reason, now])
}

/// Gives up on a held message.
pub fn mark_failed(conn: &Connection, id: &str, reason: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET status = 'failed', lease_until = NULL, \
           failure_reason = ?2, updated_at = ?3 \
         WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, reason, now])
}

/// Puts back a held message that was not attempted: the attempt is not counted.
pub fn requeue(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE scheduled_messages SET attempts = MAX(attempts - 1, 0), lease_until = NULL, \
           next_attempt_at = ?2 WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, now])
}

/// Releases leases (at shutdown) so the messages are picked up again at once after start.
pub fn release(conn: &Connection, ids: &[String], now: i64) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare_cached(
        "UPDATE scheduled_messages SET lease_until = NULL, next_attempt_at = ?2 \
         WHERE id = ?1 AND status = 'pending'",
    )?;
    let mut n = 0;
    for id in ids {
        n += stmt.execute(params![id, now])?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::store::Store;

    fn store() -> (tempfile::TempDir, Store) {
        let (dir, store) = Store::open_temp();
        store
            .conn()
            .unwrap()
            .execute_batch(
                "INSERT INTO users (id, email_index, email_enc, dek_wrapped, created_at, updated_at) \
                 VALUES ('u1', x'01', x'01', x'01', 0, 0), ('u2', x'02', x'02', x'02', 0, 0);",
            )
            .unwrap();
        (dir, store)
    }

    fn row(id: &str, user: &str, at: i64) -> ScheduledRow {
        ScheduledRow {
            id: id.into(),
            user_id: user.into(),
            room_id: "!r:hs".into(),
            encrypted_body: "b".into(),
            nonce: "n".into(),
            ephemeral_pubkey: "e".into(),
            status: PENDING.into(),
            scheduled_for: at,
            next_attempt_at: at,
            created_at: 0,
            updated_at: 0,
            ..ScheduledRow::default()
        }
    }

    #[test]
    fn claiming_leases_due_messages_once_until_the_lease_ends() {
        let (_d, store) = store();
        let c = store.conn().unwrap();
        insert(&c, &row("a", "u1", 100)).unwrap();
        insert(&c, &row("b", "u2", 200)).unwrap();
        insert(&c, &row("c", "u1", 5_000)).unwrap();
        let claimed = claim_due(&c, 1_000, 60_000, 10).unwrap();
        assert_eq!(
            claimed.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(claimed
            .iter()
            .all(|m| m.attempts == 1 && m.is_leased(1_000)));
        // A second loop finds nothing while the lease runs.
        assert!(claim_due(&c, 2_000, 60_000, 10).unwrap().is_empty());
        // Held messages cannot be cancelled.
        assert_eq!(cancel(&c, "u1", "a", 2_000).unwrap(), 0);
        assert_eq!(next_due(&c).unwrap(), Some(5_000));
        // After the lease ends (a crashed holder), they come back with a second attempt.
        let again = claim_due(&c, 61_001, 60_000, 10).unwrap();
        assert_eq!(again.len(), 3);
        assert_eq!(again.iter().find(|m| m.id == "a").unwrap().attempts, 2);
    }

    #[test]
    fn outcomes_move_the_state_machine() {
        let (_d, store) = store();
        let c = store.conn().unwrap();
        for id in ["a", "b", "c", "d"] {
            insert(&c, &row(id, "u1", 100)).unwrap();
        }
        claim_due(&c, 1_000, 60_000, 10).unwrap();
        assert_eq!(mark_sent(&c, "a", "!r:hs", "$e", 1_100).unwrap(), 1);
        assert_eq!(schedule_retry(&c, "b", 6_000, "boom", 1_100).unwrap(), 1);
        assert_eq!(mark_failed(&c, "c", "nope", 1_100).unwrap(), 1);
        assert_eq!(release(&c, &["d".to_owned()], 1_100).unwrap(), 1);
        let a = find(&c, "u1", "a").unwrap().unwrap();
        assert_eq!(
            (a.status.as_str(), a.event_id.as_deref()),
            (SENT, Some("$e"))
        );
        assert_eq!(a.sent_at, Some(1_100));
        let b = find(&c, "u1", "b").unwrap().unwrap();
        assert_eq!((b.status.as_str(), b.next_attempt_at), (PENDING, 6_000));
        assert_eq!(b.failure_reason.as_deref(), Some("boom"));
        assert!(!b.is_leased(1_100));
        assert_eq!(find(&c, "u1", "c").unwrap().unwrap().status, FAILED);
        // Terminal states do not change again.
        assert_eq!(mark_sent(&c, "c", "!r:hs", "$x", 1_200).unwrap(), 0);
        assert_eq!(cancel(&c, "u1", "a", 1_200).unwrap(), 0);
        assert_eq!(cancel(&c, "u1", "b", 1_200).unwrap(), 1);
        assert_eq!(
            cancel(&c, "u2", "d", 1_200).unwrap(),
            0,
            "another user's message"
        );
        let s = stats(&c, "u1").unwrap();
        assert_eq!(
            s,
            Stats {
                pending: 1,
                sent: 1,
                cancelled: 1,
                failed: 1,
                rooms_with_pending: 1,
                next_scheduled: Some(100),
            }
        );
        let (page, total) = list(
            &c,
            "u1",
            &ListFilter {
                status: Some(SENT.into()),
                limit: 10,
                ..ListFilter::default()
            },
        )
        .unwrap();
        assert_eq!((page.len(), total), (1, 1));
        assert_eq!(stats(&c, "u2").unwrap(), Stats::default());
    }
}
