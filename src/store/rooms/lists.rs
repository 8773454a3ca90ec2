//! Room lists, counts and the priority list (services::rooms): sort orders, page keys
//! and the queries behind them.

use super::*;
// ---- Rooms API: lists, counts, flags and read state (services::rooms) ----

/// Rooms shown in room lists and counted by `GET /api/bridges/chat-counts`: joined or
/// invited (left rooms are kept only until the sync worker forgets them).
pub const VISIBLE: &str = "membership IN ('join', 'invite')";

/// Sort orders of room lists. Every order puts pinned rooms first and ends with the room
/// id, so a (pinned, primary, recency, room id) key identifies a position exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomSort {
    /// `importance` descending, then recency.
    Importance,
    /// Recency only: last message time, or creation time for rooms without messages.
    Recent,
    /// `unread_count` descending, then recency.
    Unread,
}

impl RoomSort {
    /// The primary sort column; `None` for recency only.
    fn primary_expr(self) -> Option<&'static str> {
        match self {
            Self::Importance => Some("importance"),
            Self::Recent => None,
            Self::Unread => Some("unread_count"),
        }
    }

    /// The primary sort value of a row, as the SQL expression computes it.
    pub fn primary_of(self, r: &RoomRow) -> f64 {
        match self {
            Self::Importance => r.importance,
            Self::Recent => 0.0,
            Self::Unread => r.unread_count as f64,
        }
    }
}

/// Recency of a room in ms: its last message, or its creation for rooms without messages.
pub const RECENCY_EXPR: &str = "COALESCE(last_message_ts, created_at * 1000)";

pub fn recency_of(r: &RoomRow) -> i64 {
    r.last_message_ts.unwrap_or(r.created_at * 1000)
}

/// A position in a sorted room list: the sort key of the last room of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomListKey {
    pub pinned: bool,
    pub primary: f64,
    pub recency: i64,
    pub room_id: String,
}

impl RoomListKey {
    pub fn of(sort: RoomSort, r: &RoomRow) -> Self {
        Self {
            pinned: r.pinned,
            primary: sort.primary_of(r),
            recency: recency_of(r),
            room_id: r.room_id.clone(),
        }
    }
}

/// One page of a user's visible rooms. `archived`: `Some(false)` active only,
/// `Some(true)` archived only, `None` both. Rows come after `after` in the sort order.
/// With `archived` given, the rows are read in the order of an index of migration 0007
/// (the ORDER BY must stay the indexed expressions), so a page does not sort all rooms.
pub fn list_page(
    conn: &Connection,
    user_id: &str,
    sort: RoomSort,
    archived: Option<bool>,
    after: Option<&RoomListKey>,
    limit: i64,
) -> rusqlite::Result<Vec<RoomRow>> {
    let (sql, args) = list_page_query(user_id, sort, archived, after, limit);
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), from_row)?;
    rows.collect()
}

/// The statement of [`list_page`] and its arguments.
pub fn list_page_query(
    user_id: &str,
    sort: RoomSort,
    archived: Option<bool>,
    after: Option<&RoomListKey>,
    limit: i64,
) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = format!("SELECT {COLUMNS} FROM rooms WHERE user_id = ?1 AND {VISIBLE}");
    let mut args: Vec<rusqlite::types::Value> = vec![user_id.to_owned().into()];
    if let Some(a) = archived {
        args.push(i64::from(a).into());
        sql.push_str(&format!(" AND archived = ?{}", args.len()));
    }
    if let Some(k) = after {
        args.push(i64::from(k.pinned).into());
        let p = args.len();
        args.push(k.recency.into());
        let t = args.len();
        args.push(k.room_id.clone().into());
        let r = args.len();
        let mut rest =
            format!("({RECENCY_EXPR} < ?{t} OR ({RECENCY_EXPR} = ?{t} AND room_id > ?{r}))");
        if let Some(primary) = sort.primary_expr() {
            args.push(k.primary.into());
            let v = args.len();
            rest = format!("({primary} < ?{v} OR ({primary} = ?{v} AND {rest}))");
        }
        sql.push_str(&format!(
            " AND (pinned < ?{p} OR (pinned = ?{p} AND {rest}))"
        ));
    }
    let primary = sort
        .primary_expr()
        .map(|p| format!("{p} DESC, "))
        .unwrap_or_default();
    args.push(limit.into());
    sql.push_str(&format!(
        " ORDER BY pinned DESC, {primary}{RECENCY_EXPR} DESC, room_id ASC LIMIT ?{}",
        args.len()
    ));
    (sql, args)
}

/// Visible, non-archived rooms per platform (`NULL` platform counted as `"matrix"`): the
/// default filter of the room list, so the counts match it.
pub fn count_by_platform(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT COALESCE(platform, 'matrix'), COUNT(*) FROM rooms \
         WHERE user_id = ?1 AND {VISIBLE} AND archived = 0 GROUP BY 1 ORDER BY 1"
    ))?;
    let rows = stmt.query_map([user_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Visible, non-archived rooms with unread messages of at least `min_importance`, or with
/// unread highlights (mentions), most important first.
pub fn priority(
    conn: &Connection,
    user_id: &str,
    min_importance: f64,
) -> rusqlite::Result<Vec<RoomRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM rooms WHERE user_id = ?1 AND {VISIBLE} AND archived = 0 \
         AND ((unread_count > 0 AND importance >= ?2) OR highlight_count > 0) \
         ORDER BY importance DESC, {RECENCY_EXPR} DESC, room_id ASC"
    ))?;
    let rows = stmt.query_map(params![user_id, min_importance], from_row)?;
    rows.collect()
}

/// The joined members of the user's joined encrypted rooms (of `rooms` only, when given),
/// each once: whose device lists the crypto machine tracks.
pub fn encrypted_members(
    conn: &Connection,
    user_id: &str,
    rooms: Option<&[String]>,
) -> rusqlite::Result<Vec<String>> {
    let rooms = rooms.map(|r| serde_json::to_string(r).unwrap_or_default());
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT m.member_id FROM room_members m \
         JOIN rooms r ON r.user_id = m.user_id AND r.room_id = m.room_id \
         WHERE m.user_id = ?1 AND r.encrypted = 1 AND r.membership = 'join' \
         AND (?2 IS NULL OR m.room_id IN (SELECT value FROM json_each(?2))) \
         ORDER BY m.member_id",
    )?;
    let rows = stmt.query_map(rusqlite::params![user_id, rooms], |r| r.get(0))?;
    rows.collect()
}
