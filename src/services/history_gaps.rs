//! Where a history page meets a gap: whether the stretch a page read reaches into a gap
//! of missing history ([`crate::store::history`]), in history order (`ts DESC,
//! event_id ASC`), and the rows of an all-rooms page up to the first gap. Filling a gap
//! is [`super::history`]'s.

use rusqlite::Connection;

use crate::store::history::{self as stored, Gap};
use crate::store::messages::{self, MessageRow, PageStart};

/// What a history page of one room read: from `start` (exclusive), `rows` rows of the
/// `asked` it asked for, the last one at (`ts`, `event_id`).
pub struct PageSpan<'a> {
    pub start: &'a PageStart,
    pub last: Option<(i64, &'a str)>,
    pub full: bool,
}

/// Whether (`ts`, `event`) comes after (`ts2`, `event2`) in history order
/// (`ts DESC, event_id ASC`), i.e. is older.
pub(super) fn after(a: (i64, &str), b: (i64, &str)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 > b.1)
}

/// Whether a page reaches into `gap`'s missing stretch: one that begins inside the page,
/// or one the page starts in (a native `before` can point there).
fn crosses(gap: &Gap, span: &PageSpan<'_>) -> bool {
    let start = (span.start.ts, span.start.event_id.as_str());
    let edge = (gap.before_ts, gap.before_event.as_str());
    if after(start, edge) {
        // The page starts below the gap's top: inside it unless below its bottom.
        gap.after_ts.is_none_or(|bottom| span.start.ts > bottom)
    } else {
        !span.full || span.last.is_some_and(|last| after(last, edge))
    }
}

/// The gap a page of `room_id` reaches into, nearest first. A room stored before its
/// history was tracked has its start as a gap too ([`stored::untracked`]).
pub fn gap_crossed(
    c: &Connection,
    user_id: &str,
    room_id: &str,
    span: &PageSpan<'_>,
) -> rusqlite::Result<Option<Gap>> {
    if let Some(gap) = stored::gaps(c, user_id, room_id)?
        .into_iter()
        .find(|g| crosses(g, span))
    {
        return Ok(Some(gap));
    }
    if span.full {
        return Ok(None);
    }
    Ok(stored::untracked(c, user_id, Some(room_id))?
        .into_iter()
        .find(|g| crosses(g, span)))
}

/// [`gap_crossed`] for a page of all the user's rooms (native history without a room):
/// the nearest gap of any room the page reaches into.
pub fn gap_crossed_any(
    c: &Connection,
    user_id: &str,
    span: &PageSpan<'_>,
) -> rusqlite::Result<Option<Gap>> {
    let mut gaps = stored::user_gaps(c, user_id)?;
    gaps.extend(stored::untracked(c, user_id, None)?);
    Ok(gaps
        .into_iter()
        .filter(|g| crosses(g, span))
        .min_by(|a, b| {
            let (a, b) = (
                (a.before_ts, &a.before_event),
                (b.before_ts, &b.before_event),
            );
            b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1))
        }))
}

/// Leaves out of an all-rooms page the rows below `gap` (one this request could not fill
/// any more): a later page, read after it is filled, starts above its missing stretch,
/// so nothing is skipped. A page that would be left empty keeps its rows.
pub fn above_gap<T>(rows: &mut Vec<T>, gap: &Gap, at: impl Fn(&T) -> (i64, &str)) {
    let edge = (gap.before_ts, gap.before_event.as_str());
    let keep = rows.iter().take_while(|r| !after(at(r), edge)).count();
    if keep > 0 {
        rows.truncate(keep);
    }
}

/// A message row with its room's platform (a row of the all-rooms history).
pub type PlacedRow = (MessageRow, Option<String>);

/// The rows of a page of all the user's rooms (native history without a room), or the
/// gap it reaches into first while `fill` allows filling.
pub fn all_rooms_rows(
    c: &Connection,
    user_id: &str,
    start: &PageStart,
    limit: i64,
    fill: Fill,
) -> rusqlite::Result<Result<Vec<PlacedRow>, Gap>> {
    let mut rows = messages::user_page(c, user_id, start, limit)?;
    if fill == Fill::Stalled {
        return Ok(Ok(rows));
    }
    let span = PageSpan {
        start,
        last: rows.last().map(|(r, _)| (r.ts, r.event_id.as_str())),
        full: rows.len() as i64 == limit,
    };
    match (fill, gap_crossed_any(c, user_id, &span)?) {
        (Fill::Allowed, Some(gap)) => return Ok(Err(gap)),
        (_, Some(gap)) => above_gap(&mut rows, &gap, |(r, _)| (r.ts, r.event_id.as_str())),
        (_, None) => {}
    }
    Ok(Ok(rows))
}

/// Whether a render may stop at a gap to have it filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Report a gap the page reaches ([`super::history::Rendered::Gap`]).
    Allowed,
    /// Render what is stored: this request fetched all it may; the gap is still there
    /// (a page can say there is more to read).
    Exhausted,
    /// Render what is stored: the homeserver cannot be asked now.
    Stalled,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_order_is_newest_first_then_event_id() {
        assert!(after((1, "$a"), (2, "$a")));
        assert!(after((2, "$b"), (2, "$a")));
        assert!(!after((2, "$a"), (2, "$a")));
        assert!(!after((3, "$a"), (2, "$z")));
    }
}
