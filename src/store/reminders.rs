//! `reminders` table. Title and notes are sealed by the service (user's data key); times
//! are Unix milliseconds.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReminderRow {
    pub id: String,
    pub user_id: String,
    pub title_enc: Vec<u8>,
    pub notes_enc: Option<Vec<u8>>,
    pub due_at: i64,
    pub room_id: Option<String>,
    pub event_id: Option<String>,
    pub completed: bool,
    pub completed_at: Option<i64>,
    pub notified_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, user_id, title_enc, notes_enc, due_at, room_id, event_id, completed, \
    completed_at, notified_at, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ReminderRow> {
    Ok(ReminderRow {
        id: r.get(0)?,
        user_id: r.get(1)?,
        title_enc: r.get(2)?,
        notes_enc: r.get(3)?,
        due_at: r.get(4)?,
        room_id: r.get(5)?,
        event_id: r.get(6)?,
        completed: r.get(7)?,
        completed_at: r.get(8)?,
        notified_at: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
    })
}

/// Every column of `ReminderRow` in [`COLUMNS`] order, so `?n` names the n-th column in the
/// INSERT and the UPDATE alike.
fn bind(m: &ReminderRow) -> [&dyn ToSql; 12] {
    [
        &m.id,
        &m.user_id,
        &m.title_enc,
        &m.notes_enc,
        &m.due_at,
        &m.room_id,
        &m.event_id,
        &m.completed,
        &m.completed_at,
        &m.notified_at,
        &m.created_at,
        &m.updated_at,
    ]
}

pub fn insert(conn: &Connection, m: &ReminderRow) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO reminders ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
    ))?
    .execute(&bind(m)[..])?;
    Ok(())
}

pub fn find(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<Option<ReminderRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM reminders WHERE id = ?1 AND user_id = ?2"
    ))?
    .query_row([id, user_id], from_row)
    .optional()
}

/// Writes every mutable column.
pub fn update(conn: &Connection, m: &ReminderRow) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE reminders SET title_enc = ?3, notes_enc = ?4, due_at = ?5, room_id = ?6, \
           event_id = ?7, completed = ?8, completed_at = ?9, notified_at = ?10, updated_at = ?12 \
         WHERE id = ?1 AND user_id = ?2",
    )?
    .execute(&bind(m)[..])
}

pub fn delete(conn: &Connection, user_id: &str, id: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM reminders WHERE id = ?1 AND user_id = ?2")?
        .execute([id, user_id])
}

/// A page of the user's reminders, earliest due first, and the total matching.
pub fn list(
    conn: &Connection,
    user_id: &str,
    completed: Option<bool>,
    limit: i64,
    offset: i64,
) -> rusqlite::Result<(Vec<ReminderRow>, i64)> {
    let filter = "user_id = ?1 AND (?2 IS NULL OR completed = ?2)";
    let total: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) FROM reminders WHERE {filter}"))?
        .query_row(params![user_id, completed], |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM reminders WHERE {filter} \
         ORDER BY due_at, created_at, id LIMIT ?3 OFFSET ?4"
    ))?;
    let rows = stmt
        .query_map(params![user_id, completed, limit, offset], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// Marks up to `limit` due reminders (not completed, not yet notified, `due_at <= now`)
/// as notified at `now` and returns them: each is announced at most once.
pub fn claim_due(conn: &Connection, now: i64, limit: i64) -> rusqlite::Result<Vec<ReminderRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE reminders SET notified_at = ?1 \
         WHERE id IN (SELECT id FROM reminders \
                      WHERE completed = 0 AND notified_at IS NULL AND due_at <= ?1 \
                      ORDER BY due_at LIMIT ?2) \
         RETURNING {COLUMNS}"
    ))?;
    let rows = stmt.query_map(params![now, limit], from_row)?;
    rows.collect()
}

/// The earliest due time of a reminder still to announce.
pub fn next_due(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MIN(due_at) FROM reminders WHERE completed = 0 AND notified_at IS NULL",
    )?
    .query_row([], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn due_reminders_are_claimed_once_and_completed_ones_never() {
        let (_dir, store) = Store::open_temp();
        let c = store.conn().unwrap();
        c.execute_batch(
            "INSERT INTO users (id, email_index, email_enc, dek_wrapped, created_at, updated_at) \
             VALUES ('u1', x'01', x'01', x'01', 0, 0);",
        )
        .unwrap();
        let mk = |id: &str, due: i64, completed: bool| ReminderRow {
            id: id.into(),
            user_id: "u1".into(),
            title_enc: vec![1],
            due_at: due,
            completed,
            ..ReminderRow::default()
        };
        insert(&c, &mk("a", 100, false)).unwrap();
        insert(&c, &mk("b", 100, true)).unwrap();
        insert(&c, &mk("c", 9_000, false)).unwrap();
        assert_eq!(next_due(&c).unwrap(), Some(100));
        let due = claim_due(&c, 1_000, 10).unwrap();
        assert_eq!(due.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(due[0].notified_at, Some(1_000));
        assert!(claim_due(&c, 2_000, 10).unwrap().is_empty());
        assert_eq!(next_due(&c).unwrap(), Some(9_000));
        let (open, total) = list(&c, "u1", Some(false), 10, 0).unwrap();
        assert_eq!((open.len(), total), (2, 2));
        let (all, total) = list(&c, "u1", None, 1, 1).unwrap();
        assert_eq!((all.len(), total), (1, 3));
    }
}
