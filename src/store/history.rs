//! `history_rooms` and `history_gaps`: what is missing from a room's stored timeline (see
//! migration 0011), so that paging back past it fetches it from the homeserver.

use rusqlite::{params, Connection, OptionalExtension};

/// A stretch of a room's history that is not stored (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub id: i64,
    pub room_id: String,
    /// The oldest stored event above the gap (history order `ts DESC, event_id ASC`):
    /// everything after it in that order, down to the gap's end, is missing.
    pub before_ts: i64,
    pub before_event: String,
    /// Where the next `/messages?dir=b` page starts.
    pub from_token: String,
    /// Where the gap ends (`/messages` `to`); `None`: at the room's creation.
    pub to_token: Option<String>,
    /// Messages up to this time (ms) were stored before the gap; `None` for the start.
    pub after_ts: Option<i64>,
}

/// What a new gap records.
#[derive(Debug, Clone)]
pub struct NewGap<'a> {
    pub before_ts: i64,
    pub before_event: &'a str,
    pub from_token: &'a str,
    pub to_token: Option<&'a str>,
    pub after_ts: Option<i64>,
}

/// Whether the room's history is tracked (it has a `history_rooms` row).
pub fn tracked(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM history_rooms WHERE user_id = ?1 AND room_id = ?2")?
        .query_row([user_id, room_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Starts tracking a room: `start` is the gap back to its creation, `None` when the
/// stored timeline already begins with the creation.
pub fn track(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    start: Option<&NewGap<'_>>,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO history_rooms (user_id, room_id, start_reached, created_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
    )?
    .execute(params![user_id, room_id, start.is_none(), now])?;
    if let Some(gap) = start {
        add_gap(conn, user_id, room_id, gap, now)?;
    }
    Ok(())
}

pub fn add_gap(
    conn: &Connection,
    user_id: &str,
    room_id: &str,
    gap: &NewGap<'_>,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO history_gaps (user_id, room_id, before_ts, before_event, from_token, \
         to_token, after_ts, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        user_id,
        room_id,
        gap.before_ts,
        gap.before_event,
        gap.from_token,
        gap.to_token,
        gap.after_ts,
        now
    ])?;
    Ok(())
}

/// The room's gaps, nearest to the newest message first.
pub fn gaps(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<Vec<Gap>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {GAP_COLUMNS} FROM history_gaps WHERE user_id = ?1 AND room_id = ?2 \
         ORDER BY before_ts DESC, before_event ASC"
    ))?;
    let rows = stmt.query_map([user_id, room_id], gap_from_row)?;
    rows.collect()
}

const GAP_COLUMNS: &str = "id, room_id, before_ts, before_event, from_token, to_token, after_ts";

fn gap_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Gap> {
    Ok(Gap {
        id: r.get(0)?,
        room_id: r.get(1)?,
        before_ts: r.get(2)?,
        before_event: r.get(3)?,
        from_token: r.get(4)?,
        to_token: r.get(5)?,
        after_ts: r.get(6)?,
    })
}

/// The gap as stored now (another pager may have moved or closed it).
pub fn find_gap(conn: &Connection, user_id: &str, id: i64) -> rusqlite::Result<Option<Gap>> {
    conn.prepare_cached(&format!(
        "SELECT {GAP_COLUMNS} FROM history_gaps WHERE user_id = ?1 AND id = ?2"
    ))?
    .query_row(params![user_id, id], gap_from_row)
    .optional()
}

/// Moves a gap down after a page was stored: the next page starts at `from_token`, and
/// everything above (`before_ts`, `before_event`) is now stored.
pub fn narrow_gap(
    conn: &Connection,
    id: i64,
    before_ts: i64,
    before_event: &str,
    from_token: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE history_gaps SET before_ts = ?2, before_event = ?3, from_token = ?4 WHERE id = ?1",
    )?
    .execute(params![id, before_ts, before_event, from_token])?;
    Ok(())
}

/// Closes a gap; when it was the one back to the creation, the room's start is reached.
pub fn close_gap(conn: &Connection, user_id: &str, gap: &Gap) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM history_gaps WHERE id = ?1")?
        .execute([gap.id])?;
    if gap.to_token.is_none() {
        conn.prepare_cached(
            "UPDATE history_rooms SET start_reached = 1 WHERE user_id = ?1 AND room_id = ?2",
        )?
        .execute([user_id, &gap.room_id])?;
    }
    Ok(())
}

/// Whether the room's creation is stored (history complete at the start).
pub fn start_reached(conn: &Connection, user_id: &str, room_id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT start_reached FROM history_rooms WHERE user_id = ?1 AND room_id = ?2",
        )?
        .query_row([user_id, room_id], |r| r.get(0))
        .optional()?
        .unwrap_or(false))
}

/// Drops the gaps of the user (of one room) whose whole missing stretch is older than
/// `before_ms` (all with `None`): used when those messages are deleted.
pub fn drop_gaps(
    conn: &Connection,
    user_id: &str,
    room_id: Option<&str>,
    before_ms: Option<i64>,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM history_gaps WHERE user_id = ?1 AND (?2 IS NULL OR room_id = ?2) \
         AND (?3 IS NULL OR before_ts < ?3)",
    )?
    .execute(params![user_id, room_id, before_ms])
}
