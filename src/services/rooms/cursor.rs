//! The room list's sort order, page size and opaque cursor (`sort`, `limit`, `cursor`).

use super::*;

pub(super) fn sort_name(sort: RoomSort) -> &'static str {
    match sort {
        RoomSort::Importance => "importance",
        RoomSort::Recent => "recent",
        RoomSort::Unread => "unread",
    }
}

/// Native clients: importance (default), recent, unread. Personal tokens: recent
/// (default), unread.
pub(super) fn parse_sort(value: Option<&str>, readable: bool) -> AppResult<RoomSort> {
    match (value.map(str::trim), readable) {
        (None, false) | (Some("importance"), false) => Ok(RoomSort::Importance),
        (None, true) | (Some("recent"), _) => Ok(RoomSort::Recent),
        (Some("unread"), _) => Ok(RoomSort::Unread),
        (Some(_), false) => Err(AppError::invalid(
            "sortBy",
            "must be importance, recent or unread",
        )),
        (Some(_), true) => Err(AppError::invalid(
            "sortBy",
            "must be recent or unread for personal API tokens",
        )),
    }
}

pub fn parse_limit(limit: Option<i64>) -> AppResult<i64> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(AppError::invalid(
            "limit",
            format!("must be 1 to {MAX_LIMIT}"),
        ));
    }
    Ok(limit)
}

/// What the opaque cursor carries: the filters it was made for and the sort key of the
/// last room of the page (the primary value as f64 bits, so it compares exactly).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Cursor {
    v: u8,
    s: String,
    a: String,
    p: bool,
    k: u64,
    t: i64,
    r: String,
}

pub(super) fn encode_cursor(sort: RoomSort, archived: ArchivedFilter, key: &RoomListKey) -> String {
    let c = Cursor {
        v: 1,
        s: sort_name(sort).to_owned(),
        a: archived.as_str().to_owned(),
        p: key.pinned,
        k: key.primary.to_bits(),
        t: key.recency,
        r: key.room_id.clone(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).unwrap_or_default())
}

pub(super) fn decode_cursor(
    text: &str,
    sort: RoomSort,
    archived: ArchivedFilter,
) -> AppResult<RoomListKey> {
    let bad = || {
        AppError::invalid(
            "cursor",
            "not a cursor of this list; pass nextCursor as returned",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(text.trim()).map_err(|_| bad())?;
    let c: Cursor = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if c.v != 1 || c.r.is_empty() {
        return Err(bad());
    }
    if c.s != sort_name(sort) || c.a != archived.as_str() {
        return Err(AppError::invalid(
            "cursor",
            format!(
                "was made for sortBy={} and archived={}; keep the filters unchanged while paging",
                c.s, c.a
            ),
        ));
    }
    let primary = f64::from_bits(c.k);
    if !primary.is_finite() {
        return Err(bad());
    }
    Ok(RoomListKey {
        pinned: c.p,
        primary,
        recency: c.t,
        room_id: c.r,
    })
}
